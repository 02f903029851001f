/**
 * `eachLine`'s `maxLine` and the listing scan that uses it (summary.ts `scanLog`): a line longer
 * than the cap is visited by its head only, never held whole, with the offsets of the whole line;
 * the lines around it are read as usual.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { eachLine } from "../../../src/agent/store/log-lines.js";

let tmp: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "hb-lines-"));
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

it("a line over maxLine is visited by its first 256 bytes with cut set; the offsets are the whole line's; shorter lines are whole", () => {
  const long = `{"type":"tool/result","seq":2,"time":7,"data":"${"x".repeat(3 * 1024 * 1024)}"}`;
  const lines = ['{"a":1}', long, '{"b":2}', "y".repeat(1000)];
  const file = path.join(tmp, "l.jsonl");
  fs.writeFileSync(file, `${lines.join("\n")}\nno newline at the end ${"z".repeat(5000)}`);
  const fd = fs.openSync(file, "r");
  try {
    const seen: Array<{ text: string; start: number; end: number; cut: boolean }> = [];
    const end = eachLine(fd, 0, (line, start, stop, cut) => (seen.push({ text: line.toString("latin1"), start, end: stop, cut }), true), 1000);
    let at = 0;
    const expected = lines.map((l) => {
      const cut = l.length > 1000;
      const entry = { text: cut ? l.slice(0, 256) : l, start: at, end: at + l.length + 1, cut };
      at += l.length + 1;
      return entry;
    });
    expect(seen).toEqual(expected);
    expect(end).toBe(at);
    // Unbounded by default: the same line whole.
    const whole: string[] = [];
    eachLine(fd, 0, (line) => (whole.push(line.toString("latin1")), true));
    expect(whole).toEqual(lines);
  } finally {
    fs.closeSync(fd);
  }
});
