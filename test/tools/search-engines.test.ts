/**
 * Property: glob and grep give the same output whichever engine runs — ripgrep (the machine's)
 * or the built-in walk and re2js matcher — on random trees (nested .gitignore files with
 * negations, dotfiles, CRLF, non-ASCII text) and random patterns.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { globTool } from "../../src/tools/glob.js";
import { grepEngineRuns, grepTool } from "../../src/tools/grep.js";
import { parseGrepPattern } from "../../src/tools/search/pattern.js";
import { makeCtx, makeSandbox, ripgrepHere, ripgrepNote, text, useSearchEngine, writeTree } from "./helpers.js";

const sandboxes: ReturnType<typeof makeSandbox>[] = [];
afterAll(() => sandboxes.forEach((s) => s.cleanup()));

const name = fc.constantFrom("a", "b", "c.log", ".hid", "d-e", "keep.log", "x", "a.txt", "A.txt", "é.md", "b.c");
const relPath = fc.array(name, { minLength: 1, maxLength: 3 }).map((parts) => parts.join("/"));
const lineText = fc.array(fc.constantFrom("a", "b", "ab", " ", "\t", "1", "_", "é", "É", ".", "/", "{", "x-y", "foo", "Foo"), { maxLength: 6 }).map((p) => p.join(""));
const content = fc.tuple(fc.array(lineText, { maxLength: 6 }), fc.constantFrom("\n", "\r\n"), fc.boolean()).map(([lines, eol, final]) => lines.join(eol) + (final && lines.length ? eol : ""));
const gitignore = fc.array(fc.constantFrom("*.log", "!keep.log", "b/", "/a.txt", "x", "d*", "*.md", "!b", "a/b", "**/c.log"), { maxLength: 4 }).map((r) => r.join("\n") + "\n");

const tree = fc
  .tuple(fc.dictionary(relPath, content, { maxKeys: 12 }), gitignore, fc.option(fc.tuple(fc.constantFrom("a", "b", "x"), gitignore), { nil: undefined }))
  .map(([files, rootRules, nested]) => ({ files, rootRules, nested }));

const atom = fc.constantFrom("a", "b", "é", "É", "1", " ", "_", ".", "\\d", "\\w", "\\s", "\\D", "\\W", "\\S", "\\b", "\\B", "[ab]", "[^a]", "[\\d_]", "[[:alpha:]]", "\\.", "\\/", "\\{", "{", "x-y", "foo", "[a-c]", "\\p{L}", "\\x{61}");
const regex: fc.Arbitrary<string> = fc.letrec<{ re: string }>((tie) => ({
  re: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    atom,
    fc.tuple(tie("re"), tie("re")).map(([a, b]) => a + b),
    fc.tuple(tie("re"), tie("re")).map(([a, b]) => `(${a}|${b})`),
    fc.tuple(tie("re"), fc.constantFrom("*", "+", "?", "{1,2}", "{2}")).map(([a, q]) => `(${a})${q}`),
  ),
})).re;
const pattern = fc
  .tuple(fc.constantFrom("", "^"), regex, fc.constantFrom("", "$"), fc.constantFrom("plain", "slash-i", "inline-i"))
  .map(([pre, re, post, form]) => (form === "slash-i" ? `/${pre}${re}${post}/i` : form === "inline-i" ? `(?i)${pre}${re}${post}` : `${pre}${re}${post}`));
const globPattern = fc.constantFrom("**/*", "*", "**/*.log", "a/**", "**/.hid", "*.{txt,md}", "**/b*", "x/*", "**/[ab]", "**/*.c");

async function both<T>(run: () => Promise<T>): Promise<[T, T]> {
  let restore = await useSearchEngine("ripgrep");
  const viaRg = await run();
  restore();
  restore = await useSearchEngine("builtin");
  const builtin = await run();
  restore();
  return [viaRg, builtin];
}

const strip = (s: string) => s.replace(/searched with (ripgrep|the built-in search)/, "searched with ENGINE");

describe("glob and grep: ripgrep and the built-in engine agree", () => {
  it.skipIf(!ripgrepHere)(`ripgrep is there: CI installs it, and a missing one must fail there (HARNESS_REQUIRE_RG=1)${ripgrepNote}`, async () => {
    const { findRipgrep, resetRipgrepLookup } = await import("../../src/tools/search/ripgrep.js");
    resetRipgrepLookup();
    expect(await findRipgrep(), "ripgrep (rg >= 13) is required here: apt-get install ripgrep").toBeDefined();
  });

  it.skipIf(!ripgrepHere)(`on random trees and patterns${ripgrepNote}`, async () => {
    let rgRuns = 0;
    await fc.assert(
      fc.asyncProperty(tree, fc.array(pattern, { minLength: 1, maxLength: 4 }), globPattern, async (t, patterns, glob) => {
        const sb = makeSandbox();
        sandboxes.push(sb);
        const write = (rel: string, body: string) => {
          try {
            writeTree(sb.ws, { [rel]: body });
          } catch {
            // a file is already where the folder would be
          }
        };
        for (const [rel, body] of Object.entries(t.files)) write(rel, body);
        write(".gitignore", t.rootRules);
        if (t.nested) write(`${t.nested[0]}/.gitignore`, t.nested[1]);
        write(".git/HEAD", "foo a b\n");
        const ctx = makeCtx(sb.ws);
        const [g1, g2] = await both(async () => text(await globTool.execute({ pattern: glob }, ctx)));
        expect(g1, `glob ${glob}`).toBe(g2);
        for (const p of patterns) {
          for (const where of [undefined, "a", "b", "x"]) {
            if (where && !fs.existsSync(path.join(sb.ws, where))) continue;
            const args: Record<string, string> = where ? { pattern: p, path: where } : { pattern: p };
            const before = grepEngineRuns.ripgrep;
            const [r1, r2] = await both(async () => {
              try {
                return strip(text(await grepTool.execute(args, ctx)));
              } catch (err) {
                return `error: ${(err as Error).message}`;
              }
            });
            expect(r1, `grep ${JSON.stringify(args)}`).toBe(r2);
            rgRuns += grepEngineRuns.ripgrep - before;
            if (parseGrepPattern(p).rust !== null && !r1.startsWith("error")) expect(grepEngineRuns.ripgrep - before, `ripgrep ran for ${p}`).toBe(1);
          }
        }
      }),
      { numRuns: Number(process.env.SEARCH_PROPERTY_RUNS ?? 60) },
    );
    expect(rgRuns).toBeGreaterThan(30);
  }, 120_000);
});
