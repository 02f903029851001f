/**
 * `grep`'s pattern language: RE2 syntax (linear-time matching, no backreferences or
 * lookaround), matched against one line at a time, with ASCII meanings for `\d`, `\w`, `\s` and
 * `\b`.
 *
 * One pattern feeds two engines that must agree on every line: re2js (the built-in search) and
 * ripgrep's Rust regex (when ripgrep is installed). A small scanner walks the pattern once and
 * writes it out twice:
 *  - Perl classes become POSIX ASCII classes in both (`\d` → `[[:digit:]]`, `\s` → `[[:space:]]`,
 *    which is `[\t\n\v\f\r ]`), because Rust's are Unicode-wide and RE2's are ASCII;
 *  - for Rust, `\b`/`\B` become the ASCII `(?-u:\b)`/`(?-u:\B)`, escaped punctuation becomes a
 *    `\x{HH}` escape (Rust 1.x refuses `\/`), class characters that Rust gives a meaning and RE2
 *    does not (`[`, `&&`, `~~`) are escaped, `(?<name>` is written `(?P<name>`, and a `{` that does
 *    not start a repetition is escaped;
 *  - where the two could still differ (`--` in a class, `\B`, escapes the scanner does not know), the
 *    Rust form is withheld (`rust: null`) and the built-in engine runs alone.
 * Constructs neither engine runs the same way are refused here with a message naming them.
 */
import { ToolError } from "../types.js";
import { loadPackages } from "../packages-loader.js";

/** Longest pattern accepted. */
export const GREP_MAX_PATTERN_CHARS = 4096;

/** The subset of re2js used here (loaded lazily: it is only needed once grep runs). */
export interface CompiledRe2 {
  matcher(input: string): { find(start?: number | null): boolean; start(): number };
}

export interface GrepPattern {
  /** The pattern as the model wrote it, for messages. */
  display: string;
  /** RE2 source for re2js (multi-line mode is added at compile time). */
  re2: string;
  /** The same pattern for ripgrep, or `null` where only the built-in engine matches it faithfully. */
  rust: string | null;
}

const SLASH_FORM = /^\/(.+)\/([a-z]*)$/s;
const PERL_CLASS: Record<string, string> = { d: "digit", w: "word", s: "space" };
/** Escapes both engines read the same way, copied as they are. */
const SAME_LETTER_ESCAPES = new Set(["t", "f", "r", "v", "a", "z", "A"]);
const REPETITION = /^\{\d+(,\d*)?\}/;

function refuse(pattern: string, what: string): never {
  throw new ToolError(`unsupported regular expression ${JSON.stringify(pattern)}: ${what} (grep takes RE2 syntax: no backreferences or lookaround)`);
}

function hexEscape(ch: string): string {
  return `\\x{${ch.codePointAt(0)!.toString(16).toUpperCase()}}`;
}

/** Reads `\p{…}`, `\pL`, `\x{…}` or `\xHH` starting at the backslash; returns its length. */
function escapeLength(src: string, i: number): number {
  const kind = src[i + 1];
  if ((kind === "p" || kind === "P" || kind === "x") && src[i + 2] === "{") {
    const close = src.indexOf("}", i + 3);
    return close < 0 ? src.length - i : close - i + 1;
  }
  if (kind === "x") return Math.min(4, src.length - i);
  if (kind === "p" || kind === "P") return Math.min(3, src.length - i);
  return 2;
}

/**
 * Parses the `pattern` argument (a source, or `/source/flags` with flags among `imsu`; only `i`
 * changes which lines match) into the two engines' forms. Throws ToolError for what is refused.
 */
export function parseGrepPattern(pattern: string): GrepPattern {
  let source = pattern;
  let caseless = false;
  const slash = SLASH_FORM.exec(pattern);
  if (slash && /^[imsugyd]*$/.test(slash[2])) {
    source = slash[1];
    caseless = slash[2].includes("i");
  }
  let re2 = "";
  let rust: string | null = "";
  const both = (s: string, r: string = s) => {
    re2 += s;
    if (rust !== null) rust += r;
  };
  let inClass = false;
  let classFirst = false; // at the first position of a class, where `]` is a literal
  let prevClassChar = "";
  for (let i = 0; i < source.length; ) {
    const ch = source[i];
    if (ch === "\\") {
      const next = source[i + 1];
      if (next === undefined) refuse(pattern, "a trailing backslash");
      if (next >= "0" && next <= "9") refuse(pattern, `\`\\${next}\` (a backreference or octal escape)`);
      if (next === "n") refuse(pattern, "`\\n` (grep matches within one line, so a newline never matches)");
      if (next === "Q") refuse(pattern, "`\\Q…\\E` quoting (escape each character instead)");
      if (next === "k") refuse(pattern, "`\\k<name>` (a backreference)");
      const perl = PERL_CLASS[next.toLowerCase()];
      if (perl !== undefined) {
        const negated = next !== next.toLowerCase() ? "^" : "";
        both(inClass ? `[:${negated}${perl}:]` : `[[:${negated}${perl}:]]`);
      } else if (next === "b" || next === "B") {
        // ripgrep --crlf still sees the `\r` of a CRLF line when it tests `\B`, so only `\b` goes to it.
        if (inClass || next === "B") rust = null;
        both(`\\${next}`, `(?-u:\\${next})`);
      } else if (next === "p" || next === "P" || next === "x") {
        const len = escapeLength(source, i);
        both(source.slice(i, i + len));
        i += len;
        prevClassChar = "x";
        classFirst = false;
        continue;
      } else if (/[!-/:-@[-`{-~]/.test(next)) {
        both(`\\${next}`, hexEscape(next));
      } else if (SAME_LETTER_ESCAPES.has(next)) {
        both(`\\${next}`);
      } else {
        // Unknown to the scanner: re2js decides whether it is valid; ripgrep is not trusted with it.
        re2 += `\\${next}`;
        rust = null;
      }
      i += 2;
      prevClassChar = "\\";
      classFirst = false;
      continue;
    }
    if (inClass) {
      if (ch === "]" && !classFirst) {
        inClass = false;
        both("]");
        i++;
        continue;
      }
      if (ch === "[" && source[i + 1] === ":") {
        const close = source.indexOf(":]", i + 2);
        if (close > 0) {
          both(source.slice(i, close + 2));
          i = close + 2;
          classFirst = false;
          prevClassChar = "]";
          continue;
        }
      }
      if (ch === "-" && prevClassChar === "-") rust = null; // Rust's class difference `--`
      if (ch === "[" || ch === "&" || ch === "~") both(ch, hexEscape(ch));
      else both(ch);
      prevClassChar = ch;
      classFirst = false;
      i++;
      continue;
    }
    if (ch === "[") {
      inClass = true;
      classFirst = true;
      prevClassChar = "";
      both("[");
      i++;
      if (source[i] === "^") {
        both("^");
        i++;
      }
      continue;
    }
    if (ch === "(" && source[i + 1] === "?") {
      const rest = source.slice(i + 2);
      if (rest.startsWith("=") || rest.startsWith("!")) refuse(pattern, `\`(?${rest[0]}\` (lookahead)`);
      if (rest.startsWith("<=") || rest.startsWith("<!")) refuse(pattern, `\`(?${rest.slice(0, 2)}\` (lookbehind)`);
      if (rest.startsWith("P=") || rest.startsWith("P>")) refuse(pattern, `\`(?${rest.slice(0, 2)}\` (a backreference or recursion)`);
      if (rest.startsWith("<")) {
        both("(?<", "(?P<");
        i += 3;
        continue;
      }
    }
    if (ch === "{") {
      const rep = REPETITION.exec(source.slice(i));
      if (rep) {
        both(rep[0]);
        i += rep[0].length;
        continue;
      }
      both("{", hexEscape("{"));
      i++;
      continue;
    }
    if (ch === "}") {
      both("}", hexEscape("}"));
      i++;
      continue;
    }
    both(ch);
    i++;
  }
  if (caseless) {
    re2 = `(?i)${re2}`;
    if (rust !== null) rust = `(?i)${rust}`;
  }
  return { display: slash ? pattern : `/${pattern}/`, re2, rust };
}

type Re2Module = { RE2JS: { compile(regex: string, flags?: number): CompiledRe2; MULTILINE: number } };
let re2Module: Re2Module | undefined;

/** Compiles the RE2 form with re2js (multi-line: `^`/`$` at line ends); a syntax error becomes a ToolError. */
export async function compileRe2(p: GrepPattern, original: string): Promise<CompiledRe2> {
  re2Module ??= (await loadPackages()).re2js as unknown as Re2Module;
  try {
    return re2Module.RE2JS.compile(p.re2, re2Module.RE2JS.MULTILINE);
  } catch (err) {
    const message = (err as Error).message.replace("`(?m)", "`");
    throw new ToolError(`invalid regular expression ${JSON.stringify(original)} (RE2 syntax): ${message}`);
  }
}
