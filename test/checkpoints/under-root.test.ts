/**
 * A walk names each file as `underRoot(root, rel)` (path-state.ts): the normal relative path
 * appended as it is, anything else through `path.join`. Whatever the name, the path is the one
 * `path.join` gives, so a name with `..`, `.` or empty segments, or an absolute one, names
 * exactly what it named before (a plain concatenation would not: `root/../x`).
 */
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { underRoot } from "../../src/agent/checkpoints/path-state.js";

const NAMES = [
  "a.txt",
  "d0/f0.txt",
  "deep/er/still/x",
  ".hidden",
  "a/.git/config",
  "...",
  "a/..b",
  "a/b..",
  "..",
  "../x",
  "a/../../x",
  "a/..",
  ".",
  "./a",
  "a/./b",
  "a//b",
  "a/",
  "/etc/passwd",
  "",
  "é/ü名.txt",
];

describe("underRoot", () => {
  it("gives path.join's path for every name, normal or not", () => {
    for (const root of ["/tmp/ws", "/w", "/"]) {
      for (const rel of NAMES) expect(underRoot(root, rel), `${root} + ${JSON.stringify(rel)}`).toBe(path.join(root, rel));
    }
  });

  it("leaves no `..` of a name to the kernel to resolve", () => {
    expect(underRoot("/tmp/ws", "a/../../etc/passwd")).toBe("/tmp/etc/passwd");
    expect(underRoot("/tmp/ws", "../ws2/x")).toBe("/tmp/ws2/x");
  });
});
