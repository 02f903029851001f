import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isConfined, resolveInWorkspace } from "../../src/tools/workspace.js";
import { ToolError } from "../../src/tools/types.js";
import { makeSandbox } from "./helpers.js";

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
