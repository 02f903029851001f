/**
 * Reading a JSON-lines file the bridge wrote (a session log, a checkpoint journal) the way a
 * test must: every line whole and parsed, the file ending in a newline. A torn or interleaved
 * line fails the test, naming its number.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { expect } from "vitest";

export function wholeJsonLines(file: string): any[] {
  const text = fs.readFileSync(file, "utf8");
  expect(text.endsWith("\n"), `${path.basename(file)} ends in a newline`).toBe(true);
  return text
    .slice(0, -1)
    .split("\n")
    .map((line, i) => {
      try {
        return JSON.parse(line);
      } catch {
        throw new Error(`line ${i + 1} of ${path.basename(file)} is not whole: ${line.slice(0, 200)}`);
      }
    });
}
