/**
 * The built-in line matcher (re2js, linear time), used when ripgrep is missing or cannot take
 * the pattern faithfully.
 *
 * A file's text is searched as a whole in multi-line mode, which is fast; each match found only
 * nominates the line it starts in, which is then tested alone (so a match running across lines,
 * through `[^x]` or `\s`, never counts), and the search goes on at the next line. No matching
 * line is missed: a line that matches alone also holds a whole-text match at or after its start,
 * and the search starts each time at a line start.
 */
import type { CompiledRe2 } from "./pattern.js";

/** The 0-based numbers of the lines that match, at most `max` of them, in order. */
export function matchingLines(lines: string[], re: CompiledRe2, max: number): number[] {
  const out: number[] = [];
  if (lines.length === 0 || max <= 0) return out;
  const text = lines.join("\n");
  const m = re.matcher(text);
  let lineNo = 0;
  let lineStart = 0;
  while (lineNo < lines.length && out.length < max) {
    if (!m.find(lineStart)) break;
    const at = m.start();
    // Move to the line holding `at` (a match starting on a newline belongs to the line it ends).
    while (lineNo < lines.length - 1 && lineStart + lines[lineNo].length < at) {
      lineStart += lines[lineNo].length + 1;
      lineNo++;
    }
    if (re.matcher(lines[lineNo]).find()) out.push(lineNo);
    lineStart += lines[lineNo].length + 1;
    lineNo++;
  }
  return out;
}
