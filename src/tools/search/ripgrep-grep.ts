/**
 * grep through ripgrep. A folder search is one run of `rg --sort path`: ripgrep walks the tree in
 * path order (one thread, so the order is fixed), applies `.gitignore`, skips files over the size
 * cap (reported through `--debug`), and prints file names, line numbers and the byte offsets where
 * those lines start — no text. The caller opens each file itself, race-free, reads those lines
 * from its own descriptor (search/files.ts `readMatchedLines`: nothing else of the file), and stops
 * ripgrep as soon as the cap is reached: a common pattern costs a few files, not the whole tree.
 * A single file is read by the caller and searched through ripgrep's stdin.
 * So ripgrep decides which lines match (linear time, off the event loop, killed on cancel), and
 * nothing it read through a swapped folder can reach the output.
 */
import * as path from "node:path";
import { GREP_MAX_FILE_BYTES, type LineMatch } from "./files.js";
import { RIPGREP_COMMON_FLAGS, runRipgrep } from "./ripgrep.js";
import { pathOf } from "../raw-names.js";

const LARGE_DEBUG_LINE = /\bignoring (.+): (\d+) bytes$/;

/**
 * Flags of every search run: numbers only (`--max-columns=1` hides the text), binary files
 * searched as text (the caller sniffs them), CRLF lines, and the bytes as they are
 * (`--encoding=none`: no BOM sniffing, so no UTF-16 transcoding and no UTF-8 BOM dropped — the
 * offsets are the file's own, and a line is matched as the built-in engine decodes it).
 */
const LINE_NUMBER_FLAGS = ["--line-number", "--byte-offset", "--with-filename", "--null", "--text", "--crlf", "--encoding=none", "--max-columns=1"];

/** The decimal number in `rec` from `at` to the next `:`, and where that colon is. */
function numberAt(rec: Buffer, at: number): { value: number; colon: number } | undefined {
  const colon = rec.indexOf(58, at);
  if (colon < 0) return undefined;
  const value = Number(rec.toString("latin1", at, colon));
  return Number.isSafeInteger(value) && colon > at ? { value, colon } : undefined;
}

/** Parses `path\0LINE:OFFSET:…` into the path, LINE and OFFSET. */
function parseRecord(rec: Buffer): { file: Buffer; match: LineMatch } | undefined {
  const nul = rec.indexOf(0);
  if (nul < 0) return undefined;
  const line = numberAt(rec, nul + 1);
  const offset = line && numberAt(rec, line.colon + 1);
  return line && offset && line.value > 0 ? { file: rec.subarray(0, nul), match: { line: line.value, offset: offset.value } } : undefined;
}

/**
 * A folder search. `cwd` is where ripgrep runs; `root` (relative to it, or "" for cwd itself) is
 * searched; `ignoreFile` is a `.gitignore` above the root whose rules apply too. `onFile` gets
 * each file with a match (absolute path, its matching lines — 1-based number and byte offset —
 * at most `maxPerFile`, in order) in path order, and returns (or resolves to) `false` to stop. Returns the files skipped for their size (absolute), or
 * `undefined` when ripgrep refuses the pattern or its watchdog stopped it (`RgRun.abandoned`) (then the built-in engine runs, afresh).
 */
export async function ripgrepSearch(options: {
  rg: string;
  pattern: string;
  cwd: string;
  root: string;
  ignoreFile?: string;
  follow: boolean;
  maxPerFile: number;
  signal: AbortSignal;
  onFile: (abs: string, lines: LineMatch[]) => boolean | Promise<boolean>;
}): Promise<{ large: string[] } | undefined> {
  const args = [...RIPGREP_COMMON_FLAGS, ...LINE_NUMBER_FLAGS, "--sort=path", `--max-filesize=${GREP_MAX_FILE_BYTES}`, `--max-count=${options.maxPerFile}`, "--debug"];
  if (options.follow) args.push("--follow");
  if (options.ignoreFile) args.push(`--ignore-file=${options.ignoreFile}`);
  args.push(`--regexp=${options.pattern}`, "--");
  if (options.root) args.push(options.root);
  const large: string[] = [];
  let current: Buffer | undefined;
  let lines: LineMatch[] = [];
  const flush = (): boolean | Promise<boolean> => {
    if (!current) return true;
    const more = options.onFile(path.resolve(options.cwd, pathOf(current)), lines); // a name that is not valid UTF-8 comes as its bytes
    current = undefined;
    lines = [];
    return more;
  };
  const run = await runRipgrep({
    rg: options.rg,
    args,
    cwd: options.cwd,
    signal: options.signal,
    separator: 10,
    onRecord: (rec) => {
      const parsed = parseRecord(rec);
      if (!parsed) return true;
      const add = (more: boolean) => {
        if (!more) return false;
        current ??= Buffer.from(parsed.file);
        lines.push(parsed.match);
        return true;
      };
      if (!current || current.equals(parsed.file)) return add(true);
      const more = flush();
      return typeof more === "boolean" ? add(more) : more.then(add);
    },
    onEnd: flush,
    onStderrLine: (line) => {
      const m = LARGE_DEBUG_LINE.exec(line);
      if (m && Number(m[2]) > GREP_MAX_FILE_BYTES) large.push(path.resolve(options.cwd, m[1]));
    },
  });
  if (run.abandoned) return undefined;
  if (run.code === 2 && /regex parse error|error parsing|regex.*(too big|size limit)/i.test(run.stderrTail)) return undefined;
  return { large };
}

/** The matching lines (at most `maxPerFile`, in order) of `input` (bytes the caller read), searched through ripgrep's stdin. */
export async function ripgrepMatches(options: { rg: string; pattern: string; input: Buffer; maxPerFile: number; signal: AbortSignal }): Promise<LineMatch[]> {
  const found: LineMatch[] = [];
  const args = ["--no-config", "--no-messages", ...LINE_NUMBER_FLAGS, `--max-count=${options.maxPerFile}`, `--regexp=${options.pattern}`, "--", "-"];
  await runRipgrep({
    rg: options.rg,
    args,
    cwd: "/",
    signal: options.signal,
    separator: 10,
    input: options.input,
    onRecord: (rec) => {
      const parsed = parseRecord(rec);
      if (parsed) found.push(parsed.match);
      return true;
    },
  });
  return found.sort((a, b) => a.offset - b.offset);
}
