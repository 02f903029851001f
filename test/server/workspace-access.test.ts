/**
 * initialize's check of cwd (workspace-access.ts), in process: each cause that stops a look at
 * the folder gets its own fix; permissions are advised only where they are the cause (a loop of
 * links told the user to change permissions).
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { checkWorkspace } from "../../src/server/workspace-access.js";

let root: string;
beforeEach(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "hb-ws-access-")));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const messageOf = (cwd: string): string => {
  try {
    checkWorkspace(cwd);
  } catch (error) {
    expect((error as { code: number }).code).toBe(-32602);
    return (error as Error).message;
  }
  throw new Error(`${cwd} was accepted`);
};

it("a loop of links, itself or on the way: the loop and its fix, not permissions", () => {
  fs.symlinkSync("b", path.join(root, "a"));
  fs.symlinkSync("a", path.join(root, "b"));
  for (const cwd of [path.join(root, "a"), path.join(root, "a", "ws")]) {
    const message = messageOf(cwd);
    expect(message).toContain(`${cwd} cannot be reached: a loop of symbolic links`);
    expect(message).not.toContain("permission");
  }
});

it("a file on the way, a file, a missing folder: no permission advice", () => {
  fs.writeFileSync(path.join(root, "file"), "");
  fs.mkdirSync(path.join(root, "d"));
  for (const cwd of [path.join(root, "file", "ws"), path.join(root, "file"), path.join(root, "missing")]) expect(messageOf(cwd)).not.toContain("permission");
  expect(() => checkWorkspace(path.join(root, "d"))).not.toThrow();
});
