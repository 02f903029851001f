/**
 * Property: the built-in walk keeps exactly the files git keeps (`git ls-files --others
 * --exclude-standard`) on random trees with random `.gitignore` files at several depths, each of
 * many rules that hit the same paths with both signs — so that which rule is the last to match
 * decides, whichever of the rules index's structures holds it (plain names, `*.ext`, `name*`,
 * plain paths, the others by their plain run, with or without `/` at the end), and patterns of
 * several `**` gaps (matched without backtracking across them). Some files are long (a comment
 * after each rule), so that their rules are parsed in several slices.
 * GITIGNORE_GIT_RUNS sets the number of trees (default 40).
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { GitignoreFilter, walkFiles } from "../../src/tools/gitignore.js";

const gitHere = (() => {
  try {
    execFileSync("git", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

const names = ["a", "b", "c.log", ".hid", "keep.log", "x", "a.txt", "!b", "#c", "d e", "foo", "ba", "foo.c", "log", "xlog", "keeper", "x "];
const rules = [
  // plain names, suffixes, prefixes, paths: the indexed structures, both signs, dir-only or not
  "a", "!a", "a/", "!a/", "b", "!b/", "foo", "!foo", "log/", "!log", ".hid", "!.hid/", "ba/", "x", "!x",
  "*.log", "!*.log", "*.log/", "!keep.log", "*log", "!*log/", "*.c", "!foo.c", "*.txt/", "*e r",
  "foo*", "!fo*", "ba*", "!ba", "x*", "a*/", "!keep*", "kee*/",
  "/a", "!/a", "/b/", "a/b", "!a/b", "a/b/", "/a/x", "!/a/x", "b/c.log", "!b/c.log", "/foo/ba", "a/foo.c",
  // the other rules: wildcards, **, classes, escapes, trailing spaces
  "**/a/**", "!**/x", "*.l?g", "b/**/", "[!a]", "!/*/", "a/*", "!a/x/", "d*", "a/**/b", "**/b/", "*/", "!*/",
  "foo/*", "!foo/x", "b/**/x", "[ab]", "?", "*", "!*.txt", "/*", "**", "!a/**", "a/*/c.log", "**/c.log",
  "*keep*", "!**/keep.log", "**/foo/**", "a/**/keep.log", "kee[p].log", "!**/ba", "f*o*", "*o.?", "!x*g",
  // several ** gaps: each piece between two is matched once, at its leftmost place
  "**/a/**/b/**/x", "a/**/a/**/c.log", "!**/a/**/a/**", "**/b/**/a/**/c.log", "a/**/*/**/x", "!**/a/**/a/**/a", "**/a*/**/b/**/",
  "x\\", "x ", "x\\ ", "\\!b", "\\#c", "#c", "d\\ e", "foo/ ", "*.log  ", "!keep.log ", "\\a", "fo\\o", "a/ ",
];

const tree = fc.record({
  files: fc.array(fc.array(fc.constantFrom(...names), { minLength: 1, maxLength: 6 }), { minLength: 3, maxLength: 14 }),
  ruleFiles: fc.array(fc.array(fc.constantFrom(...rules), { minLength: 1, maxLength: 14 }), { minLength: 4, maxLength: 4 }),
  where: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 12, maxLength: 12 }),
  crlf: fc.boolean(),
  padded: fc.boolean(),
});

function gitList(ws: string): string[] {
  const env = { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" };
  execFileSync("git", ["init", "-q"], { cwd: ws, env });
  const out = execFileSync("git", ["-c", "core.excludesFile=/dev/null", "ls-files", "-z", "--others", "--exclude-standard"], { cwd: ws, env });
  return out.toString().split("\0").filter(Boolean).sort();
}

describe("the built-in walk against git", () => {
  it.skipIf(!gitHere)("keeps the files git keeps, on random trees with long .gitignore files at several depths", async () => {
    await fc.assert(
      fc.asyncProperty(tree, async (t) => {
        const ws = fs.mkdtempSync(path.join(os.tmpdir(), "hb-gitignore-"));
        try {
          for (const parts of t.files) {
            try {
              fs.mkdirSync(path.join(ws, ...parts.slice(0, -1)), { recursive: true });
              fs.writeFileSync(path.join(ws, ...parts), "z");
            } catch {
              // a file is already where the folder would be
            }
          }
          const dirs = [""];
          const walk = (d: string) => {
            for (const e of fs.readdirSync(path.join(ws, d), { withFileTypes: true })) if (e.isDirectory()) (dirs.push(path.join(d, e.name)), walk(path.join(d, e.name)));
          };
          walk("");
          dirs.forEach((d, i) => {
            if (i === 0 || (t.where[i % t.where.length] ?? 1) < 0.5) {
              const lines = t.ruleFiles[i % t.ruleFiles.length].flatMap((rule) => (t.padded ? [rule, `#${"-".repeat(900)}`] : [rule]));
              fs.writeFileSync(path.join(ws, d, ".gitignore"), lines.join(t.crlf ? "\r\n" : "\n") + "\n");
            }
          });
          const expected = gitList(ws);
          const filter = new GitignoreFilter(ws, true);
          const mine = (await walkFiles({ root: ws, filter, signal: new AbortController().signal, follow: false })).slice().sort();
          const rulesFiles = dirs.filter((d) => fs.existsSync(path.join(ws, d, ".gitignore"))).map((d) => `${d || "."}/.gitignore: ${JSON.stringify(fs.readFileSync(path.join(ws, d, ".gitignore"), "utf8"))}`);
          expect(mine, rulesFiles.join("\n")).toEqual(expected);
        } finally {
          fs.rmSync(ws, { recursive: true, force: true });
        }
      }),
      { numRuns: Number(process.env.GITIGNORE_GIT_RUNS ?? 40) },
    );
  }, 300_000);

  it.skipIf(!gitHere)("reads a long .gitignore as git does where its parse is sliced: CRLF, a byte-order mark opening a later line", async () => {
    const ws = fs.mkdtempSync(path.join(os.tmpdir(), "hb-gitignore-"));
    try {
      for (const name of ["a", "b", "\uFEFFa", "c", "d"]) fs.writeFileSync(path.join(ws, name), "z");
      // A mark opens the text only where git drops it; opening a later line, it is part of the rule.
      const lines = [`\uFEFF${"#".repeat(4095)}`, "\uFEFFa", "b", `#${"-".repeat(4094)}`, "\uFEFFc", "d\r"];
      fs.writeFileSync(path.join(ws, ".gitignore"), lines.join("\r\n") + "\r\n");
      const mine = await walkFiles({ root: ws, filter: new GitignoreFilter(ws, true), signal: new AbortController().signal, follow: false });
      expect(mine.slice().sort()).toEqual(gitList(ws));
    } finally {
      fs.rmSync(ws, { recursive: true, force: true });
    }
  });
});
