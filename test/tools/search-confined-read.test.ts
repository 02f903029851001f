/**
 * The contract grep relies on from `openForRead` (src/tools/confined-fs.ts): a regular file inside
 * the workspace opens (also through a link that stays inside); a FIFO, a device, a folder and a
 * path through a link out are refused with a ToolError, without blocking.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openForRead } from "../../src/tools/confined-fs.js";
import { ToolError } from "../../src/tools/types.js";
import { makeSandbox, writeTree } from "./helpers.js";

let sb: ReturnType<typeof makeSandbox>;
beforeEach(() => {
  sb = makeSandbox();
  writeTree(sb.ws, { "a/f.txt": "inside\n" });
});
afterEach(() => sb.cleanup());

describe("openForRead", () => {
  it("opens a regular file inside, with its size and real path", async () => {
    const opened = await openForRead(sb.ws, "a/f.txt", "workspace-write");
    try {
      expect(opened.size).toBe(7);
      expect(opened.realPath).toBe(fs.realpathSync(path.join(sb.ws, "a/f.txt")));
    } finally {
      await opened.handle.close();
    }
  });

  it("refuses FIFOs, devices and folders without blocking", async () => {
    execFileSync("mkfifo", [path.join(sb.ws, "fifo")]);
    fs.symlinkSync("/dev/zero", path.join(sb.ws, "zero"));
    for (const p of ["fifo", "a", "zero"]) await expect(openForRead(sb.ws, p, "workspace-write")).rejects.toThrow(ToolError);
    await expect(openForRead(sb.ws, "fifo", "full")).rejects.toThrow(/not a regular file/);
    await expect(openForRead(sb.ws, "/dev/zero", "full")).rejects.toThrow(/not a regular file/);
  }, 10_000);

  it("follows a link that stays inside, refuses a path through a link out of the workspace in a confined mode", async () => {
    fs.symlinkSync(path.join(sb.ws, "a", "f.txt"), path.join(sb.ws, "inner-link"));
    fs.symlinkSync(sb.outside, path.join(sb.ws, "out"));
    const inner = await openForRead(sb.ws, "inner-link", "workspace-write");
    expect(inner.realPath).toBe(fs.realpathSync(path.join(sb.ws, "a/f.txt")));
    await inner.handle.close();
    await expect(openForRead(sb.ws, "out", "workspace-write")).rejects.toThrow(ToolError);
    await expect(openForRead(sb.ws, "out/secret.txt", "read-only")).rejects.toThrow(/outside the workspace/);
    await expect(openForRead(sb.ws, "../outside/secret.txt", "workspace-write")).rejects.toThrow(/outside the workspace/);
    const opened = await openForRead(sb.ws, "out/secret.txt", "full");
    await opened.handle.close();
  });
});
