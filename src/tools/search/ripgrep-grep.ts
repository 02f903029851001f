/**
 * grep through ripgrep, in two steps:
 *  1. `rg -l` walks the tree (parallel, `.gitignore` applied, files over the size cap skipped and
 *     reported through `--debug`) and names the files holding a match: candidates.
 *  2. The caller opens the candidates itself, race-free and in path order; ripgrep then searches
 *     exactly those descriptors (`/dev/fd/N`, passed to it), and prints line numbers only. The
 *     caller takes the lines' text from its own descriptors.
 * So ripgrep decides which lines match (linear time, off the event loop, killed on cancel), and
 * nothing it read through a swapped folder can reach the output.
 */
import * as path from "node:path";
import { GREP_MAX_FILE_BYTES } from "./files.js";
import { RIPGREP_COMMON_FLAGS, runRipgrep } from "./ripgrep.js";

export interface Phase1 {
  /** Absolute paths of the files with a match (unsorted). */
  files: string[];
  /** Absolute paths of the files skipped for their size. */
  large: string[];
}

const LARGE_DEBUG_LINE = /\bignoring (.+): (\d+) bytes$/;

/**
 * Step 1. `cwd` is where ripgrep runs; `root` (relative to it, or "" for cwd itself) is searched;
 * `ignoreFile` is a `.gitignore` above the root whose rules apply too. Returns `undefined` when
 * ripgrep refuses the pattern (then the built-in engine runs).
 */
export async function ripgrepCandidates(options: {
  rg: string;
  pattern: string;
  cwd: string;
  root: string;
  ignoreFile?: string;
  follow: boolean;
  signal: AbortSignal;
}): Promise<Phase1 | undefined> {
  const args = [
    ...RIPGREP_COMMON_FLAGS,
    "--files-with-matches",
    "--null",
    "--text",
    "--crlf",
    `--max-filesize=${GREP_MAX_FILE_BYTES}`,
    "--debug",
  ];
  if (options.follow) args.push("--follow");
  if (options.ignoreFile) args.push(`--ignore-file=${options.ignoreFile}`);
  args.push(`--regexp=${options.pattern}`, "--");
  if (options.root) args.push(options.root);
  const files: string[] = [];
  const large: string[] = [];
  const run = await runRipgrep({
    rg: options.rg,
    args,
    cwd: options.cwd,
    signal: options.signal,
    separator: 0,
    onRecord: (rec) => void files.push(path.resolve(options.cwd, rec.toString("utf8"))),
    onStderrLine: (line) => {
      const m = LARGE_DEBUG_LINE.exec(line);
      if (m && Number(m[2]) > GREP_MAX_FILE_BYTES) large.push(path.resolve(options.cwd, m[1]));
    },
  });
  if (run.code === 2 && /regex parse error|error parsing|regex.*(too big|size limit)/i.test(run.stderrTail)) return undefined;
  return { files, large };
}

/**
 * Step 2: the 1-based numbers of the matching lines (at most `maxPerFile`) of each descriptor in
 * `fds`, by position in `fds`.
 */
export async function ripgrepLineNumbers(options: {
  rg: string;
  pattern: string;
  fds: number[];
  maxPerFile: number;
  signal: AbortSignal;
}): Promise<number[][]> {
  const found: number[][] = options.fds.map(() => []);
  if (options.fds.length === 0) return found;
  const names = options.fds.map((_, i) => `/dev/fd/${i + 3}`);
  const byName = new Map(names.map((n, i) => [n, i]));
  const args = [
    "--no-config",
    "--line-number",
    "--with-filename",
    "--null",
    "--text",
    "--crlf",
    "--no-messages",
    "--max-columns=1",
    `--max-count=${options.maxPerFile}`,
    `--regexp=${options.pattern}`,
    "--",
    ...names,
  ];
  await runRipgrep({
    rg: options.rg,
    args,
    cwd: "/",
    signal: options.signal,
    separator: 10,
    extraFds: options.fds,
    onRecord: (rec) => {
      const nul = rec.indexOf(0);
      if (nul < 0) return;
      const index = byName.get(rec.subarray(0, nul).toString("utf8"));
      const colon = rec.indexOf(":".charCodeAt(0), nul + 1);
      const n = Number(rec.subarray(nul + 1, colon < 0 ? undefined : colon).toString("latin1"));
      if (index !== undefined && Number.isInteger(n) && n > 0) found[index].push(n);
    },
  });
  for (const list of found) list.sort((a, b) => a - b);
  return found;
}
