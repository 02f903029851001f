/**
 * The rules index (src/tools/gitignore-rules.ts) gives each path the verdict of the `ignore`
 * package's own scan of the same rules (last matching rule wins), whichever structure holds the
 * rule that decides; and a pattern of many `**` gaps costs a deep path no backtracking across them.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import fc from "fast-check";
import ignore from "ignore";
import { describe, expect, it } from "vitest";
import { GitignoreFilter, walkFiles } from "../../src/tools/gitignore.js";
import { RulesIndex, withoutGapBacktracking } from "../../src/tools/gitignore-rules.js";
import { reckonedAtLeast } from "../../src/tools/gitignore-read.js";

type Scan = { _rules: { test(path: string, mode: "regex"): { ignored: boolean; unignored: boolean } } };
const parse = (text: string) => ignore({ ignorecase: false }).add(text);
const packageVerdict = (text: string, rel: string) => {
  const { ignored, unignored } = (parse(text) as unknown as Scan)._rules.test(rel, "regex");
  return { ignored, unignored };
};

const segment = fc.constantFrom("a", "b", "ab", "a.txt", "c.log", "keep.log", ".hid", "foo", "foo.c", "x", "x y", "!b", "#c", "a*", "aaab", "log", "afoo", "]foo", "xafoo", "!keep.log", "a]b");
const rule = fc.constantFrom(
  // plain names, `*.ext`, `name*`, plain paths: each with `/` (folders only) and `!`
  "a", "!a", "a/", "!a/", "foo", "!foo/", "*.log", "!*.log", "*.log/", "!keep.log", "*log", "*.c/", "foo*", "!fo*", "a*/", "!ab*",
  "/a", "!/a", "a/b", "!a/b/", "/a/x", "b/c.log", "!/b/c.log",
  // the others: wildcards inside names, classes, escapes, trailing spaces, `**` gaps
  "*a*b", "!a?b", "[ab]", "!*.[lc]og", "a\\*", "\\!b", "\\#c", "x\\ y", "x ", "foo/ ", "*", "!*/", "?",
  "**/a/**", "a/**/b", "**/a/**/b/**/x", "!**/a/**/a/**", "a/**/a/**/c.log", "**/b/**/a/**/a/**/c.log", "**/a*/**/b/**/", "!**/ab/**/a/**/a", "**/b/**/a/**/c.log",
  // classes before a plain run: the run after the class's end is what the path must hold
  "[a-c]foo", "![!a]keep.log", "[]a]foo", "[!]]foo", "x[[:alpha:]]foo", "[\\]]foo", "[a]]b", "*[ab]]b", "[x",
  // short runs only, tested unless a character they name is missing (upper case shares a bucket)
  "*o?f*", "!*b?a*", "*g?o*", "a?*/", "!*A?b*", "*l?g/", "x*y", "*\\]?b", "*.?o*",
);

describe("the rules index", () => {
  it("gives every path the verdict of the package's last-rule-wins scan", () => {
    fc.assert(
      fc.property(fc.array(rule, { minLength: 1, maxLength: 20 }), fc.array(fc.tuple(fc.array(segment, { minLength: 1, maxLength: 8 }), fc.boolean()), { minLength: 1, maxLength: 10 }), (rules, paths) => {
        const text = rules.join("\n");
        const index = new RulesIndex(parse(text));
        // The same rules placed as a sliced parse adds them: a line at a time.
        const sliced = new RulesIndex();
        const ig = parse("");
        for (const line of rules) (ig.add(`${line}\n`), sliced.addFrom(ig));
        for (const [parts, isDir] of paths) {
          const rel = parts.join("/") + (isDir ? "/" : "");
          const expected = packageVerdict(text, rel);
          expect(index.verdict(rel), `${JSON.stringify(rules)} ${rel}`).toEqual(expected);
          expect(sliced.verdict(rel), `sliced: ${JSON.stringify(rules)} ${rel}`).toEqual(expected);
        }
      }),
      { numRuns: Number(process.env.GITIGNORE_RULES_RUNS ?? 2000) },
    );
  }, 300_000);

  it("hand cases: a later rule in another structure decides, either sign; a piece between ** gaps is whole segments", () => {
    const cases: [string, string, boolean][] = [
      ["*.log\n!keep.log", "keep.log", false], // suffix, then name
      ["!keep.log\n*.log", "keep.log", true],
      ["keep*\n!*.log", "keep.log", false], // prefix, then suffix
      ["/a/b\n!**/b", "a/b", false], // path, then a regular expression
      ["**/b\n!/a/b", "a/b", false],
      ["a/\n!a", "a/", false], // folder-only name, then name
      ["!a\na/", "a/", true],
      ["x\\ y\n!x*", "x y", false], // an escaped space is a regular expression's rule
      ["foo/ \n!foo", "foo/", false], // trailing spaces trimmed: folder-only name
      ["**/b/**/a/**/c.log", "b/a.txt/a/c.log", true], // a piece between gaps is a whole segment, not the start of one
    ];
    for (const [text, rel, ignored] of cases) expect(new RulesIndex(parse(text)).verdict(rel).ignored, `${JSON.stringify(text)} ${rel}`).toBe(ignored);
  });

  it("matches a pattern of twelve ** gaps against a path of 60 segments without backtracking across the gaps", () => {
    const pattern = `**/${Array(12).fill("a").join("/**/")}/**/b`;
    const deep = `${Array(60).fill("a").join("/")}/c`;
    const index = new RulesIndex(parse(pattern));
    expect(index.verdict(deep).ignored).toBe(false);
    expect(index.verdict(`${deep}/b`).ignored).toBe(true);
    expect(withoutGapBacktracking(/^a(?:\/[^\/]+)*\/b$/).source).toBe("^a(?:\\/[^\\/]+)*\\/b$"); // one gap: unchanged
  });
});

describe("the reckoning before the parse", () => {
  // Lines as a file may hold them: rules, blanks, comments, `!`, trailing spaces, CR, escapes, marks.
  const line = fc.oneof(
    rule,
    fc.constantFrom("", " ", "#c", "# x", "!", "! ", "!#a", " #a", "a  ", "*a?b*  ", "!*x?f*", "a\\", "a\\ ", "\\ ", "\\!a", "\uFEFFa", "a\rb", "a\r", "\r", "**", "!/"),
    fc.stringMatching(/^[!#a-c*?/\[\] \\\r]{0,6}$/),
  );

  it("never reckons more than the parse does, and as much for lines without a backslash, a lone CR or a mark", () => {
    fc.assert(
      fc.property(fc.array(line, { maxLength: 12 }), fc.boolean(), (lines, crlf) => {
        const text = lines.join(crlf ? "\r\n" : "\n");
        const parsed = new RulesIndex(parse(text)).heapBytes;
        const reckoned = reckonedAtLeast(text);
        expect(reckoned, JSON.stringify(text)).toBeLessThanOrEqual(parsed);
        if (!/[\\\uFEFF]|\r(?!\n)/.test(text)) expect(reckoned, JSON.stringify(text)).toBe(parsed);
      }),
      { numRuns: Number(process.env.GITIGNORE_RULES_RUNS ?? 2000) },
    );
  });
});

describe("the walk under a hostile .gitignore", () => {
  it("a cancel while one large folder is being filtered stops the walk", async () => {
    const ws = fs.mkdtempSync(path.join(os.tmpdir(), "hb-gitignore-"));
    try {
      // Rules no index holds (no plain run of three characters): every entry is tested on each.
      const rules = Array.from({ length: 2000 }, (_, i) => `*${String.fromCharCode(97 + (i % 26))}?${String.fromCharCode(97 + ((i / 26) | 0) % 26)}*q`);
      fs.writeFileSync(path.join(ws, ".gitignore"), rules.join("\n") + "\n");
      for (let i = 0; i < 1500; i++) fs.writeFileSync(path.join(ws, `file${i}.txt`), "");
      const ac = new AbortController();
      // The cancel is sent from the event loop's next turn once the first entry is being judged.
      let sent = false;
      class CancelDuringFilter extends GitignoreFilter {
        override isIgnored(absPath: string, isDir: boolean): boolean {
          if (!sent) (sent = true), setImmediate(() => ac.abort(new Error("cancelled")));
          return super.isIgnored(absPath, isDir);
        }
      }
      const walk = walkFiles({ root: ws, filter: new CancelDuringFilter(ws, true), signal: ac.signal, follow: false });
      await expect(walk).rejects.toThrow("cancelled");
    } finally {
      fs.rmSync(ws, { recursive: true, force: true });
    }
  }, 60_000);
});
