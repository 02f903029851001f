/**
 * A `.gitignore` line with a run of `**` segments, in a repository with deep folders: the
 * `ignore` package's regular expression for it backtracks through every way of splitting the
 * folders between the `**`s (hours for a dozen of them at depth 25), on the main thread that
 * serves every session. The run means what one `**` means (git: each matches zero or more
 * folders), and it is read as one: the listing is git's, at once (before, this test did not end).
 */
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from "vitest";
import { collapseGlobstars } from "../../src/tools/gitignore-globstar.js";
import { globTool } from "../../src/tools/glob.js";
import { makeCtx, makeSandbox, text, useSearchEngine, writeTree } from "./helpers.js";

let restore: () => void;
beforeAll(async () => {
  restore = await useSearchEngine("builtin");
});
afterAll(() => restore());
let sb: ReturnType<typeof makeSandbox>;
beforeEach(() => {
  sb = makeSandbox();
});
afterEach(() => sb.cleanup());

it("a run of a dozen ** segments over folders 25 deep: the built-in engine lists what git lists", async () => {
  const deep = `a/${"x/".repeat(25)}`;
  writeTree(sb.ws, {
    ".gitignore": `a/${"**/".repeat(12)}b\n!${"**/".repeat(12)}keep/b\n`,
    [`${deep}b`]: "",
    [`${deep}c`]: "",
    [`${deep}keep/b`]: "",
    "a/b": "",
    "top.txt": "",
  });
  const out = await globTool.execute({ pattern: "**/*" }, makeCtx(sb.ws));
  const listed = text(out).split("\n").filter((l) => l && !l.startsWith("("));
  expect(listed.sort()).toEqual([".gitignore", `${deep}c`, `${deep}keep/b`, "top.txt"].sort());
}, 60_000);

it("writes each run of ** segments as one, and nothing else", () => {
  const cases: Array<[string, string]> = [
    ["a/**/**/b", "a/**/b"],
    ["**/**/**/x\n/**/**/y\r\nz/**/**", "**/x\n/**/y\r\nz/**"],
    ["!**/**/b", "!**/b"],
    ["a/**/x/**/b", "a/**/x/**/b"],
    ["a**/**/b", "a**/**/b"],
    ["\\**/**/b", "\\**/**/b"],
    ["a/***/**/b", "a/***/**/b"],
  ];
  for (const [from, to] of cases) expect(collapseGlobstars(from), from).toBe(to);
});
