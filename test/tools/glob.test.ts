import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { GLOB_MAX_RESULTS, globEngineRuns, globTool } from "../../src/tools/glob.js";
import { GITIGNORE_MAX_BYTES } from "../../src/tools/gitignore.js";
import { ToolError } from "../../src/tools/types.js";
import { makeCtx, makeSandbox, text, useSearchEngine, writeTree, SEARCH_ENGINES } from "./helpers.js";

describe.each(SEARCH_ENGINES)("glob (%s engine)", (engine) => {
let restore: () => void;
let runsBefore = 0;
beforeAll(async () => {
  restore = await useSearchEngine(engine);
  runsBefore = globEngineRuns[engine];
});
afterAll(() => {
  expect(globEngineRuns[engine]).toBeGreaterThan(runsBefore);
  restore();
});

let sb: ReturnType<typeof makeSandbox>;
beforeEach(() => {
  sb = makeSandbox();
  writeTree(sb.ws, {
    ".gitignore": "node_modules/\nbuild\n*.log\n",
    "src/.gitignore": "*.tmp\n!keep.tmp\n",
    "src/a.ts": "",
    "src/sub/b.ts": "",
    "src/x.tmp": "",
    "src/keep.tmp": "",
    "node_modules/pkg/index.ts": "",
    "build/out.ts": "",
    "a.log": "",
    ".env": "",
    ".git/config": "",
    "docs/readme.md": "",
  });
});
afterEach(() => sb.cleanup());

const run = async (pattern: unknown, mode: "workspace-write" | "full" | "read-only" = "workspace-write") =>
  text(await globTool.execute({ pattern } as never, makeCtx(sb.ws, mode)));

describe("glob", () => {
  it("lists matches sorted, skipping .gitignore'd files (root and nested) and .git", async () => {
    expect((await run("**/*")).split("\n")).toEqual([".env", ".gitignore", "docs/readme.md", "src/.gitignore", "src/a.ts", "src/keep.tmp", "src/sub/b.ts"]);
    expect(await run("**/*.ts")).toBe("src/a.ts\nsrc/sub/b.ts");
    expect(await run("*.ts")).toMatch(/^No files match/);
  });

  it("a deeper .gitignore re-includes a folder a parent's rule ignores, and rules are case-sensitive, as git and ripgrep decide", async () => {
    // Found by the engines' property test (seed 15558712): the built-in engine let the root's
    // `lib/gen` hide lib/gen/a.ts although lib/.gitignore re-includes `gen`.
    writeTree(sb.ws, { ".gitignore": "node_modules/\nbuild\nlib/gen\nREADME.tmp\n", "lib/.gitignore": "!gen\n", "lib/gen/a.ts": "", "lib/gen/deep/b.ts": "", "README.TMP": "" });
    expect(await run("lib/**")).toBe("lib/.gitignore\nlib/gen/a.ts\nlib/gen/deep/b.ts");
    // A file under an ignored folder stays ignored even when a rule names it (git cannot re-include it).
    writeTree(sb.ws, { "build/.gitignore": "!out.ts\n" });
    expect(await run("build/**")).toMatch(/^No files match/);
    expect(await run("README*")).toBe("README.TMP");
  });

  it("rules files at three depths decide each path as git does: negations deeper down, an anchored path in a nested file, ** below a re-included folder", async () => {
    // The expected list is `git ls-files --others --exclude-standard` (and `rg --files`) on this tree.
    writeTree(sb.ws, {
      ".gitignore": "*.gen\nout/\n",
      "a/.gitignore": "!keep.gen\nb/c/out.txt\n",
      "a/b/c/.gitignore": "!out/\n*.txt\n!d/**/x.txt\n",
      "a/keep.gen": "",
      "a/x.gen": "",
      "a/out/y.ts": "",
      "a/b/c/out/y.ts": "",
      "a/b/c/out.txt": "",
      "a/b/c/d/e/x.txt": "",
      "a/b/c/d/e/z.txt": "",
      "a/b/c/d/e/f/g/h/deep.ts": "",
    });
    expect((await run("a/**")).split("\n")).toEqual(["a/.gitignore", "a/b/c/.gitignore", "a/b/c/d/e/f/g/h/deep.ts", "a/b/c/d/e/x.txt", "a/b/c/out/y.ts", "a/keep.gen"]);
  });

  it("a .gitignore that is a FIFO or a link to a device is skipped: never blocks, never grows memory", async () => {
    fs.rmSync(path.join(sb.ws, "src/.gitignore"));
    execFileSync("mkfifo", [path.join(sb.ws, "src/.gitignore")]);
    fs.mkdirSync(path.join(sb.ws, "dev"));
    fs.symlinkSync("/dev/zero", path.join(sb.ws, "dev/.gitignore"));
    fs.writeFileSync(path.join(sb.ws, "dev/d.ts"), "");
    // ripgrep opens a .gitignore by name and would wait for a FIFO's writer: it is stopped and
    // the built-in walk answers, with the same list.
    expect(await run("**/*.ts")).toBe("dev/d.ts\nsrc/a.ts\nsrc/sub/b.ts");
  }, 10_000);

  it("a .gitignore over 1 MiB: ripgrep applies it; the built-in walk does not, and its result says so", async () => {
    writeTree(sb.ws, { "big/.gitignore": `*.txt\n${"#".repeat(GITIGNORE_MAX_BYTES)}\n`, "big/t.txt": "", "big/k.ts": "" });
    if (engine === "ripgrep") expect(await run("big/**")).toBe("big/.gitignore\nbig/k.ts");
    else expect(await run("big/**")).toBe("big/.gitignore\nbig/k.ts\nbig/t.txt\n[not applied, over 1 MiB: big/.gitignore; files these .gitignore files ignore may be listed]");
  });

  it("does not list ignored folders even when the pattern names them", async () => {
    expect(await run("node_modules/**")).toMatch(/^No files match/);
    expect(await run(".git/*")).toMatch(/^No files match/);
    expect(await run("build/*.ts")).toMatch(/^No files match/);
  });

  it("caps the results and says how many were cut", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < GLOB_MAX_RESULTS + 25; i++) files[`many/f${String(i).padStart(5, "0")}.txt`] = "";
    writeTree(sb.ws, files);
    const out = (await run("many/*.txt")).split("\n");
    expect(out).toHaveLength(GLOB_MAX_RESULTS + 1);
    expect(out[0]).toBe("many/f00000.txt");
    expect(out[GLOB_MAX_RESULTS]).toMatch(/25 more paths not shown/);
  });

  it("refuses patterns that escape in confined modes", async () => {
    for (const p of ["../outside/*", "../*", "src/../../outside/*", path.join(sb.outside, "*"), "/etc/*"]) {
      await expect(run(p)).rejects.toThrow(ToolError);
      await expect(run(p, "read-only")).rejects.toThrow(/outside the workspace/);
    }
  });

  it("allows escaping patterns in full mode", async () => {
    expect(await run("../outside/*", "full")).toBe("../outside/secret.txt");
  });

  it("does not list through a symlink leading outside the workspace", async () => {
    fs.symlinkSync(sb.outside, path.join(sb.ws, "linkout"));
    fs.symlinkSync(path.join(sb.outside, "secret.txt"), path.join(sb.ws, "secretlink.txt"));
    const all = await run("**/*");
    expect(all).not.toMatch(/secret/);
    expect(all).not.toMatch(/linkout/);
    expect(await run("linkout/*")).toMatch(/^No files match/);
  });

  it("rejects bad arguments naming the argument", async () => {
    await expect(run(undefined)).rejects.toThrow(/pattern/);
    await expect(run(3)).rejects.toThrow(/pattern/);
    await expect(run("")).rejects.toThrow(/pattern/);
  });

  it("stops when the signal is aborted", async () => {
    const ac = new AbortController();
    ac.abort(new Error("cancelled"));
    await expect(globTool.execute({ pattern: "**/*" }, makeCtx(sb.ws, "workspace-write", ac.signal))).rejects.toThrow();
  });
});
});
