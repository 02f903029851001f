import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openForRead } from "../../src/tools/confined-fs.js";
import { isConfined, resolveInWorkspace } from "../../src/tools/workspace.js";
import { ToolError } from "../../src/tools/types.js";
import { makeSandbox, writeTree } from "./helpers.js";

let sb: ReturnType<typeof makeSandbox>;
beforeEach(() => {
  sb = makeSandbox();
});
afterEach(() => sb.cleanup());

describe("resolveInWorkspace", () => {
  it("confines every mode except full", () => {
    expect(isConfined("read-only")).toBe(true);
    expect(isConfined("workspace-write")).toBe(true);
    expect(isConfined("full")).toBe(false);
  });

  it("resolves relative paths, and accepts names beginning with '..'", () => {
    expect(resolveInWorkspace(sb.ws, "a/b.txt", "workspace-write")).toBe(path.join(sb.ws, "a/b.txt"));
    expect(resolveInWorkspace(sb.ws, "..x", "workspace-write")).toBe(path.join(sb.ws, "..x"));
    expect(resolveInWorkspace(sb.ws, "a/../b", "workspace-write")).toBe(path.join(sb.ws, "b"));
    expect(resolveInWorkspace(sb.ws, ".", "workspace-write")).toBe(sb.ws);
  });

  it("refuses .., absolute paths outside, and empty paths", () => {
    expect(() => resolveInWorkspace(sb.ws, "..", "workspace-write")).toThrow(ToolError);
    expect(() => resolveInWorkspace(sb.ws, "../outside/secret.txt", "read-only")).toThrow(/outside the workspace/);
    expect(() => resolveInWorkspace(sb.ws, "/etc/passwd", "workspace-write")).toThrow(/outside the workspace/);
    expect(() => resolveInWorkspace(sb.ws, "", "workspace-write")).toThrow(ToolError);
    expect(resolveInWorkspace(sb.ws, "/etc/passwd", "full")).toBe("/etc/passwd");
  });

  it("refuses symlinks out, dangling ones and chains included", () => {
    fs.symlinkSync(sb.outside, path.join(sb.ws, "out"));
    fs.symlinkSync(path.join(sb.outside, "missing-dir"), path.join(sb.ws, "dangling-dir"));
    fs.symlinkSync("dangling-dir/file", path.join(sb.ws, "chain"));
    for (const p of ["out", "out/secret.txt", "out/new/deep.txt", "dangling-dir", "dangling-dir/new.txt", "chain"]) {
      expect(() => resolveInWorkspace(sb.ws, p, "workspace-write"), p).toThrow(/symbolic link/);
    }
  });

  it("accepts a workspace reached through a symlink, and links that stay inside", () => {
    const alias = path.join(sb.root, "alias");
    fs.symlinkSync(sb.ws, alias);
    fs.mkdirSync(path.join(sb.ws, "real"));
    fs.symlinkSync(path.join(sb.ws, "real", "later.txt"), path.join(sb.ws, "inside-dangling"));
    expect(resolveInWorkspace(alias, "x.txt", "workspace-write")).toBe(path.join(alias, "x.txt"));
    expect(resolveInWorkspace(alias, path.join(sb.ws, "x.txt"), "workspace-write")).toBe(path.join(sb.ws, "x.txt"));
    expect(resolveInWorkspace(sb.ws, "inside-dangling", "workspace-write")).toBe(path.join(sb.ws, "inside-dangling"));
  });
});

describe("resolveInWorkspace follows links as the kernel does", () => {
  it("resolves a dangling link's relative target from its real folder, not its lexical parent", () => {
    fs.mkdirSync(path.join(sb.ws, "a/b"), { recursive: true });
    fs.symlinkSync("../..", path.join(sb.ws, "a/b/c")); // a/b/c is the workspace
    fs.symlinkSync("../outside/planted.txt", path.join(sb.ws, "l1")); // a/b/c/l1 → <root>/outside/planted.txt
    expect(() => resolveInWorkspace(sb.ws, "a/b/c/l1", "workspace-write")).toThrow(/symbolic link/);
    fs.symlinkSync("a/b/c/l1", path.join(sb.ws, "l2")); // and through one more link
    expect(() => resolveInWorkspace(sb.ws, "l2", "workspace-write")).toThrow(/symbolic link/);
    fs.symlinkSync("stays.txt", path.join(sb.ws, "l3"));
    expect(resolveInWorkspace(sb.ws, "a/b/c/l3", "workspace-write")).toBe(path.join(sb.ws, "a/b/c/l3"));
  });
});

describe("openForRead", () => {
  it("opens a regular file, giving its size and its real path (links inside followed)", async () => {
    writeTree(sb.ws, { "dir/f.txt": "hello\n" });
    fs.symlinkSync("dir", path.join(sb.ws, "alias"));
    const opened = await openForRead(sb.ws, "alias/f.txt", "read-only");
    try {
      expect(opened.size).toBe(6);
      expect(opened.realPath).toBe(path.join(fs.realpathSync(sb.ws), "dir/f.txt"));
      expect((await opened.handle.readFile()).toString()).toBe("hello\n");
    } finally {
      await opened.handle.close();
    }
    const absolute = await openForRead(sb.ws, path.join(sb.ws, "dir/f.txt"), "workspace-write");
    await absolute.handle.close();
    expect(absolute.realPath).toBe(opened.realPath);
  });

  it("throws a ToolError the model can read: no such file, directory, not a regular file, outside", async () => {
    const { execFileSync } = await import("node:child_process");
    fs.mkdirSync(path.join(sb.ws, "dir"));
    execFileSync("mkfifo", [path.join(sb.ws, "fifo")]);
    fs.symlinkSync(path.join(sb.outside, "secret.txt"), path.join(sb.ws, "out"));
    const cases: [string, RegExp][] = [
      ["missing.txt", /^no such file: missing\.txt$/],
      ["dir", /^dir is a directory, not a file$/],
      ["fifo", /^fifo is not a regular file \(it is a FIFO\)$/],
      ["out", /outside the workspace/],
      ["../outside/secret.txt", /outside the workspace/],
    ];
    for (const [p, expected] of cases) {
      const err = await openForRead(sb.ws, p, "workspace-write").then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, p).toBeInstanceOf(ToolError);
      expect((err as Error).message, p).toMatch(expected);
    }
  });

  it("reaches outside in full mode, still refusing non-regular files", async () => {
    const opened = await openForRead(sb.ws, "../outside/secret.txt", "full");
    await opened.handle.close();
    expect(opened.realPath).toBe(path.join(fs.realpathSync(sb.outside), "secret.txt"));
    await expect(openForRead(sb.ws, "/dev/null", "full")).rejects.toThrow(/not a regular file \(it is a device\)/);
  });
});
