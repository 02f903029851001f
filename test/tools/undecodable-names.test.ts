/**
 * Names that are not valid UTF-8 (a Latin-1 `caf\xe9.txt`): glob and grep never list a path that
 * does not exist and never leave one out silently; both engines say the same, confined and in
 * `full` mode; the file tools given the decoded name (U+FFFD) say what the name on disk is.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { globTool } from "../../src/tools/glob.js";
import { grepTool } from "../../src/tools/grep.js";
import { readFileTool } from "../../src/tools/read-file.js";
import { writeFileTool } from "../../src/tools/write-file.js";
import { editFileTool } from "../../src/tools/edit-file.js";
import type { PermissionMode } from "../../src/protocol/index.js";
import { SEARCH_ENGINES, makeCtx, makeSandbox, text, useSearchEngine } from "./helpers.js";

const sb = makeSandbox();
afterAll(() => sb.cleanup());
const raw = (rel: string) => Buffer.concat([Buffer.from(sb.ws + "/"), Buffer.from(rel, "latin1")]);
const put = (rel: string, body: string) => fs.writeFileSync(raw(rel), body);
// Bytes written as latin1: "\xe9" is the byte E9 (not valid UTF-8 alone); "\u00c3\u00a9" is é's UTF-8.
put("caf\xe9.txt", "hello\n");
fs.mkdirSync(raw("d\xe9"));
put("d\xe9/x.txt", "hello\n");
put("d\xe9/y.txt", "hello\n");
put("d\xe9/.gitignore", "y.txt\n");
fs.mkdirSync(raw("e\xe9")); // holds only an ignored file: nothing of it is listed
put("e\xe9/.gitignore", "*\n");
put("e\xe9/z.txt", "hello\n");
put("nomatch\xe8.md", "bye\n");
put("ok.txt", "hello\n");
fs.writeFileSync(path.join(sb.ws, "real\uFFFD.txt"), "hello\n"); // a valid name holding U+FFFD itself
fs.mkdirSync(path.join(sb.ws, "sub"));
put("sub/b\xff\\.txt", "hello\n");
put("sub/bin\xe9.dat", "hello\0\n"); // binary: not searched
put("caf\u00c3\u00a9.md", "hello\n"); // café.md, valid UTF-8

const note = (what: string, n: number, names: string) =>
  `[left out ${n} ${n === 1 ? "entry" : "entries"} ${what} whose names are not valid UTF-8 (a folder counts once); no file tool can name them, bash can, as quoted here: ${names}]`;

const MODES: PermissionMode[] = ["workspace-write", "full"];

describe.each(SEARCH_ENGINES)("names that are not valid UTF-8, %s engine", (engine) => {
  for (const mode of MODES) {
    it(`glob lists only names that exist and counts the others (${mode})`, async () => {
      const restore = await useSearchEngine(engine);
      try {
        const ctx = makeCtx(sb.ws, mode);
        expect(text(await globTool.execute({ pattern: "**/*" }, ctx))).toBe(
          ["café.md", "ok.txt", "real\uFFFD.txt", note("matching the pattern", 5, "$'caf\\xe9.txt', $'d\\xe9/', $'nomatch\\xe8.md', $'sub/bin\\xe9.dat', $'sub/b\\xff\\\\.txt'")].join("\n"),
        );
        expect(text(await globTool.execute({ pattern: "**/*.md" }, ctx))).toBe(["café.md", note("matching the pattern", 1, "$'nomatch\\xe8.md'")].join("\n"));
        expect(text(await globTool.execute({ pattern: "*.rs" }, ctx))).toBe("No files match '*.rs' (files ignored by .gitignore are skipped).");
      } finally {
        restore();
      }
    });

    it(`grep shows lines of names that exist and counts the files it cannot show (${mode})`, async () => {
      const restore = await useSearchEngine(engine);
      try {
        const ctx = makeCtx(sb.ws, mode);
        expect(text(await grepTool.execute({ pattern: "hello" }, ctx))).toBe(
          ["café.md:1:hello", "ok.txt:1:hello", "real\uFFFD.txt:1:hello", note("holding matches", 3, "$'caf\\xe9.txt', $'d\\xe9/', $'sub/b\\xff\\\\.txt'")].join("\n"),
        );
        expect(text(await grepTool.execute({ pattern: "bye" }, ctx))).toMatch(/^No matches for \/bye\/ in \. \(searched with .*\)\.\n\[left out 1 entry holding matches .*: \$'nomatch\\xe8\.md'\]$/);
      } finally {
        restore();
      }
    });
  }
});

describe("a pattern reaching outside (full mode: tinyglobby's walk)", () => {
  it("lists only names that exist and counts the others", async () => {
    const ctx = makeCtx(sb.ws, "full");
    expect(text(await globTool.execute({ pattern: "../ws/**/*.txt" }, ctx))).toBe(
      ["ok.txt", "real\uFFFD.txt", note("matching the pattern", 3, "$'caf\\xe9.txt', $'d\\xe9/', $'sub/b\\xff\\\\.txt'")].join("\n"),
    );
  });
});

describe("the file tools given the decoded name", () => {
  const ctx = makeCtx(sb.ws);
  it("read_file, edit_file and grep name the file on disk; write_file refuses to make a second one", async () => {
    await expect(readFileTool.execute({ path: "caf\uFFFD.txt" }, ctx)).rejects.toThrow(/^no such file: caf\uFFFD\.txt; U\+FFFD .* the name on disk is \$'caf\\xe9\.txt', which no file tool can name/);
    await expect(readFileTool.execute({ path: "d\uFFFD/x.txt" }, ctx)).rejects.toThrow(/the name on disk is \$'d\\xe9\/x\.txt'/);
    await expect(editFileTool.execute({ path: "caf\uFFFD.txt", oldText: "hello", newText: "bye" }, ctx)).rejects.toThrow(/^no such file: .*\$'caf\\xe9\.txt'/);
    await expect(grepTool.execute({ pattern: "x", path: "d\uFFFD" }, ctx)).rejects.toThrow(/^no such file or folder: .*\$'d\\xe9'/);
    await expect(writeFileTool.execute({ path: "caf\uFFFD.txt", content: "new\n" }, ctx)).rejects.toThrow(/^refusing to write caf\uFFFD\.txt: .*\$'caf\\xe9\.txt'/);
    expect(fs.existsSync(path.join(sb.ws, "caf\uFFFD.txt"))).toBe(false);
    expect(fs.readFileSync(raw("caf\xe9.txt"), "utf8")).toBe("hello\n");
  });

  it("a valid name holding U+FFFD itself, or a new one with no such twin, is used as given", async () => {
    expect(text(await readFileTool.execute({ path: "real\uFFFD.txt" }, ctx))).toContain("hello");
    expect(text(await writeFileTool.execute({ path: "new\uFFFD.txt", content: "x\n" }, ctx))).toMatch(/^Created/);
  });

  it("a path holding a lone surrogate is refused, not taken for the bytes it might stand for", async () => {
    await expect(readFileTool.execute({ path: "caf\udce9.txt" }, ctx)).rejects.toThrow(/not well-formed Unicode/);
    await expect(writeFileTool.execute({ path: "caf\udce9.txt", content: "x" }, ctx)).rejects.toThrow(/not well-formed Unicode/);
  });
});
