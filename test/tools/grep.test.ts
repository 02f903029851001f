import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { GREP_MAX_FILE_BYTES, GREP_MAX_LINE_CHARS, GREP_MAX_MATCHES, grepEngineRuns, grepTool } from "../../src/tools/grep.js";
import { GITIGNORE_MAX_BYTES } from "../../src/tools/gitignore.js";
import { ToolError } from "../../src/tools/types.js";
import { makeCtx, makeSandbox, text, useSearchEngine, writeTree, SEARCH_ENGINES } from "./helpers.js";

describe.each(SEARCH_ENGINES)("grep (%s engine)", (engine) => {
let restore: () => void;
let runsBefore = 0;
beforeAll(async () => {
  restore = await useSearchEngine(engine);
  runsBefore = grepEngineRuns[engine];
});
afterAll(() => {
  // Every search of this block ran on the engine it is named after.
  expect(grepEngineRuns[engine]).toBeGreaterThan(runsBefore);
  restore();
});

let sb: ReturnType<typeof makeSandbox>;
beforeEach(() => {
  sb = makeSandbox();
  writeTree(sb.ws, {
    ".gitignore": "node_modules/\n*.log\n",
    "src/.gitignore": "gen/\n",
    "src/a.ts": "const needle = 1;\nno match here\r\nlet NEEDLE = 2;\n",
    "src/b.ts": "nothing\nneedle again\n",
    "src/gen/g.ts": "needle generated\n",
    "node_modules/p/i.js": "needle in deps\n",
    "debug.log": "needle in log\n",
    ".git/HEAD": "needle in git\n",
  });
});
afterEach(() => sb.cleanup());

const run = async (args: Record<string, unknown>, mode: "workspace-write" | "full" | "read-only" = "workspace-write", signal?: AbortSignal) =>
  text(await grepTool.execute(args as never, makeCtx(sb.ws, mode, signal)));

describe("grep", () => {
  it("finds path:line:text, skipping .gitignore'd files and .git", async () => {
    expect(await run({ pattern: "needle" })).toBe("src/a.ts:1:const needle = 1;\nsrc/b.ts:2:needle again");
  });

  it("a .gitignore over 1 MiB: ripgrep applies it; the built-in search does not, and its result says so", async () => {
    writeTree(sb.ws, { "big/.gitignore": `*.txt\n${"#".repeat(GITIGNORE_MAX_BYTES)}\n`, "big/t.txt": "needle hidden\n" });
    if (engine === "ripgrep") expect(await run({ pattern: "needle", path: "big" })).toMatch(/^No matches for \/needle\/ in big \(searched with ripgrep/);
    else expect(await run({ pattern: "needle", path: "big" })).toBe("big/t.txt:1:needle hidden\n[not applied, over 1 MiB: big/.gitignore; files these .gitignore files ignore may be listed]");
  });

  it("accepts /source/flags and strips CR", async () => {
    expect(await run({ pattern: "/needle/i" })).toBe("src/a.ts:1:const needle = 1;\nsrc/a.ts:3:let NEEDLE = 2;\nsrc/b.ts:2:needle again");
    expect(await run({ pattern: "here$" })).toBe("src/a.ts:2:no match here");
  });

  it("searches one file or one folder", async () => {
    expect(await run({ pattern: "needle", path: "src/b.ts" })).toBe("src/b.ts:2:needle again");
    expect(await run({ pattern: "needle", path: "src" })).toBe("src/a.ts:1:const needle = 1;\nsrc/b.ts:2:needle again");
    // An explicitly named file is searched even if ignored.
    expect(await run({ pattern: "needle", path: "debug.log" })).toBe("debug.log:1:needle in log");
  });

  it("a .gitignore that is a FIFO or a link to /dev/zero neither blocks nor grows memory; the same matches come back", async () => {
    fs.mkdirSync(path.join(sb.ws, "f"));
    execFileSync("mkfifo", [path.join(sb.ws, "f/.gitignore")]);
    fs.writeFileSync(path.join(sb.ws, "f/f.ts"), "needle f\n");
    fs.mkdirSync(path.join(sb.ws, "z"));
    fs.symlinkSync("/dev/zero", path.join(sb.ws, "z/.gitignore"));
    fs.writeFileSync(path.join(sb.ws, "z/z.ts"), "needle z\n");
    expect(await run({ pattern: "needle" })).toBe("f/f.ts:1:needle f\nsrc/a.ts:1:const needle = 1;\nsrc/b.ts:2:needle again\nz/z.ts:1:needle z");
  }, 15_000);

  it("a large file's matching lines, near its top, across read boundaries and deep inside, come back whole (ripgrep's files are read only as far as their last match)", async () => {
    // ~1.2 MB of 100-byte lines, CRLF: matches at lines 3, 656-657 (past the first 64 KiB read), 3000 and 12000.
    const lines = Array.from({ length: 12_000 }, (_, i) => `line ${String(i + 1).padStart(6, "0")} ${"x".repeat(84)}`);
    for (const n of [3, 656, 657, 3000, 12_000]) lines[n - 1] = `needle ${n} ${"é".repeat(40)}`;
    writeTree(sb.ws, { "big/data.txt": `${lines.join("\r\n")}\r\n` });
    const expected = [3, 656, 657, 3000, 12_000].map((n) => `big/data.txt:${n}:needle ${n} ${"é".repeat(40)}`).join("\n");
    expect(await run({ pattern: "needle \\d", path: "big" })).toBe(expected);
    // A match only near the top of a large file.
    expect(await run({ pattern: "needle 3 ", path: "big" })).toBe(`big/data.txt:3:needle 3 ${"é".repeat(40)}`);
  });

  it("a UTF-8 byte order mark is the first line's first character, on both engines (ripgrep runs with --encoding=none)", async () => {
    writeTree(sb.ws, { "bom/b.txt": "\uFEFFneedle first\r\nneedle second\n" });
    expect(await run({ pattern: "^needle", path: "bom" })).toBe("bom/b.txt:2:needle second");
    expect(await run({ pattern: "^needle", path: "bom/b.txt" })).toBe("bom/b.txt:2:needle second");
    expect(await run({ pattern: "needle", path: "bom" })).toBe("bom/b.txt:1:\uFEFFneedle first\nbom/b.txt:2:needle second");
  });

  it("lines of a file found binary do not count toward the cap: the search goes on past it (ripgrep numbered 501 of them)", async () => {
    const many = Array.from({ length: 600 }, (_, i) => `needle ${i}`).join("\n");
    writeTree(sb.ws, { "bin/a.dat": `\0${many}\n`, "bin/b.txt": "needle b1\nno\nneedle b2\n" });
    expect(await run({ pattern: "needle", path: "bin" })).toBe("bin/b.txt:1:needle b1\nbin/b.txt:3:needle b2");
    writeTree(sb.ws, { "bin/c.txt": `${many}\n` });
    const out = (await run({ pattern: "needle", path: "bin" })).split("\n");
    expect(out.slice(0, 2)).toEqual(["bin/b.txt:1:needle b1", "bin/b.txt:3:needle b2"]);
    expect(out).toHaveLength(GREP_MAX_MATCHES + 1);
    expect(out[GREP_MAX_MATCHES - 1]).toBe("bin/c.txt:498:needle 497");
    expect(out[GREP_MAX_MATCHES]).toMatch(/^\[stopped after 500 matches/);
  });

  it("reports no match plainly", async () => {
    expect(await run({ pattern: "zzz" })).toMatch(/^No matches for \/zzz\//);
  });

  it("skips binary files and files over the size cap", async () => {
    fs.writeFileSync(path.join(sb.ws, "bin.dat"), Buffer.concat([Buffer.from("needle\n"), Buffer.from([0, 1, 2])]));
    fs.writeFileSync(path.join(sb.ws, "big.txt"), "needle\n" + "x".repeat(GREP_MAX_FILE_BYTES));
    const out = await run({ pattern: "needle" });
    expect(out).not.toMatch(/bin\.dat/);
    expect(out).not.toMatch(/big\.txt:/);
    expect(out).toMatch(/skipped 1 file\(s\) over/);
  });

  it("caps matches and long lines, saying so", async () => {
    writeTree(sb.ws, { "many.txt": "hit\n".repeat(GREP_MAX_MATCHES + 50), "long.txt": "hit" + "y".repeat(1000) + "\n" });
    const lines = (await run({ pattern: "^hit", path: "many.txt" })).split("\n");
    expect(lines).toHaveLength(GREP_MAX_MATCHES + 1);
    expect(lines[GREP_MAX_MATCHES]).toMatch(/stopped after 500 matches/);
    const long = await run({ pattern: "^hit", path: "long.txt" });
    expect(long.length).toBeLessThan(GREP_MAX_LINE_CHARS + 100);
    expect(long).toMatch(/line cut: 1003 characters/);
  });

  it("a folder search stops at the cap in the file that reaches it, in path order, the files before it whole", async () => {
    const tree: Record<string, string> = {};
    for (let f = 0; f < 30; f++) tree[`capped/f${String(f).padStart(2, "0")}.txt`] = Array.from({ length: 40 }, (_, i) => `hit ${f}.${i + 1}`).join("\n") + "\n";
    writeTree(sb.ws, tree);
    const lines = (await run({ pattern: "^hit", path: "capped" })).split("\n");
    const expected = Array.from({ length: GREP_MAX_MATCHES }, (_, k) => {
      const f = Math.floor(k / 40);
      return `capped/f${String(f).padStart(2, "0")}.txt:${(k % 40) + 1}:hit ${f}.${(k % 40) + 1}`;
    });
    expect(lines.slice(0, GREP_MAX_MATCHES)).toEqual(expected);
    expect(lines.slice(GREP_MAX_MATCHES)).toEqual([expect.stringMatching(/stopped after 500 matches/)]);
  });

  it("turns an invalid regex into a ToolError with the regex error", async () => {
    await expect(run({ pattern: "a(b" })).rejects.toThrow(ToolError);
    await expect(run({ pattern: "a(b" })).rejects.toThrow(/invalid regular expression "a\(b" \(RE2 syntax\).*missing closing \)/);
  });

  it("rejects bad arguments naming the argument", async () => {
    await expect(run({})).rejects.toThrow(/pattern/);
    await expect(run({ pattern: 5 })).rejects.toThrow(/pattern/);
    await expect(run({ pattern: "x", path: 5 })).rejects.toThrow(/path/);
    await expect(run({ pattern: "x", path: "nope" })).rejects.toThrow(/no such file/);
  });

  it("is confined: no .., absolute paths or symlinks out", async () => {
    await expect(run({ pattern: "SECRET", path: "../outside" })).rejects.toThrow(/outside the workspace/);
    await expect(run({ pattern: "SECRET", path: path.join(sb.outside, "secret.txt") })).rejects.toThrow(/outside the workspace/);
    await expect(run({ pattern: "SECRET", path: "/etc" }, "read-only")).rejects.toThrow(/outside the workspace/);
    fs.symlinkSync(sb.outside, path.join(sb.ws, "linkout"));
    fs.symlinkSync(path.join(sb.outside, "secret.txt"), path.join(sb.ws, "secret-link.txt"));
    await expect(run({ pattern: "SECRET", path: "linkout" })).rejects.toThrow(/symbolic link/);
    await expect(run({ pattern: "SECRET", path: "secret-link.txt" })).rejects.toThrow(/symbolic link/);
    expect(await run({ pattern: "SECRET" })).toMatch(/^No matches/);
    // full mode may go anywhere
    expect(await run({ pattern: "SECRET", path: "../outside" }, "full")).toBe(`${path.join(sb.outside, "secret.txt")}:1:TOP SECRET outside`);
  });

  it("refuses what RE2 syntax does not have, naming the construct", async () => {
    const cases: [string, RegExp][] = [
      ["(a)\\1", /`\\1` \(a backreference/],
      ["foo(?=bar)", /`\(\?=` \(lookahead\)/],
      ["(?<!x)y", /`\(\?<!` \(lookbehind\)/],
      ["a\\nb", /`\\n` \(grep matches within one line/],
      ["\\Qa.b\\E", /\\Q…\\E/],
    ];
    for (const [p, message] of cases) {
      await expect(run({ pattern: p })).rejects.toThrow(ToolError);
      await expect(run({ pattern: p })).rejects.toThrow(message);
    }
  });

  it("gives \\d, \\w, \\s and \\b their ASCII meaning", async () => {
    writeTree(sb.ws, { "u.txt": "é1 word\néword\n٣\nx\u00a0y\n" });
    expect(await run({ pattern: "^\\w", path: "u.txt" })).toBe("u.txt:4:x\u00a0y");
    expect(await run({ pattern: "\\bword", path: "u.txt" })).toBe("u.txt:1:é1 word\nu.txt:2:éword");
    expect(await run({ pattern: "\\d", path: "u.txt" })).toBe("u.txt:1:é1 word");
    expect(await run({ pattern: "x\\sy", path: "u.txt" })).toMatch(/^No matches/);
    expect(await run({ pattern: "(?i)ÉWORD", path: "u.txt" })).toBe("u.txt:2:éword");
  });

  it("never opens a FIFO or other non-regular file", async () => {
    execFileSync("mkfifo", [path.join(sb.ws, "pipe.txt")]);
    writeTree(sb.ws, { "sub/x.txt": "needle\n" });
    execFileSync("mkfifo", [path.join(sb.ws, "sub", "fifo")]);
    // An open() of a FIFO without a writer would block: these answer at once.
    expect(await run({ pattern: "needle", path: "sub" })).toBe("sub/x.txt:1:needle");
    expect(await run({ pattern: "needle" })).toMatch(/^src\/a\.ts:1:const needle = 1;\n/);
    await expect(run({ pattern: "needle", path: "pipe.txt" })).rejects.toThrow(/neither a regular file nor a folder/);
  }, 10_000);

  it("matches a pattern that backtracking engines take exponential time on, in linear time", async () => {
    writeTree(sb.ws, { "aaa.txt": `${"a".repeat(200_000)}\n${"a".repeat(50_000)}!\n` });
    const out = await run({ pattern: "^(a+)+$", path: "aaa.txt" });
    expect(out).toMatch(/^aaa\.txt:1:a{300}… \[line cut: 200000 characters\]$/);
  }, 10_000);

  it("does not follow or list symbolic links in a confined mode, even ones that stay inside", async () => {
    fs.symlinkSync(path.join(sb.ws, "src", "b.ts"), path.join(sb.ws, "inner-link.ts"));
    fs.symlinkSync(path.join(sb.ws, "src"), path.join(sb.ws, "src-link"));
    expect(await run({ pattern: "needle again" })).toBe("src/b.ts:2:needle again");
    expect(await run({ pattern: "needle again" }, "full")).toBe("inner-link.ts:2:needle again\nsrc/b.ts:2:needle again\nsrc-link/b.ts:2:needle again");
  });

  it("stops when the signal is aborted", async () => {
    const ac = new AbortController();
    ac.abort(new Error("cancelled"));
    await expect(run({ pattern: "needle" }, "workspace-write", ac.signal)).rejects.toThrow(/cancelled/);
  });

  it("stops walking when aborted mid-search", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 300; i++) files[`bulk/f${i}.txt`] = "needle\n".repeat(1) + "z\n".repeat(2000);
    writeTree(sb.ws, files);
    const ac = new AbortController();
    const p = run({ pattern: "never-matches-anything" }, "workspace-write", ac.signal);
    setTimeout(() => ac.abort(new Error("cancelled mid-way")), 5);
    await expect(p).rejects.toThrow(/cancelled mid-way/);
  });
});
});
