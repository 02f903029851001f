/**
 * A read-only `HOME` (a container's, a systemd service's): the default session root under it
 * cannot be made, and the prompt's `session-log` error says so — read-only file system — where
 * Node's recursive mkdir said ENOENT ("no such file or directory"), pointing at the wrong fix
 * (make-folders.ts). Through the binary, in a mount namespace of its own where HOME is bound
 * read-only; needs `unshare -m` and a bind mount (root, or an unprivileged user namespace).
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BINARY, RawClient, initParams, promptParams } from "../../support/raw-client.js";

const unshareArgs = process.getuid?.() === 0 ? ["-m"] : ["-r", "-m"];
const BIND_RO = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"';

function canBindReadOnly(): boolean {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hb-rohome-check-"));
  try {
    return spawnSync("unshare", [...unshareArgs, "sh", "-c", BIND_RO, "sh", dir, "true"], { timeout: 10_000 }).status === 0;
  } catch {
    return false;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

let root: string;
const clients: RawClient[] = [];
beforeEach(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "hb-rohome-")));
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.dispose();
  fs.rmSync(root, { recursive: true, force: true });
});

describe.runIf(process.platform === "linux" && canBindReadOnly())("a read-only HOME (the binary)", () => {
  it("the prompt's session-log error says read-only file system, not no such file or directory", async () => {
    const home = path.join(root, "home");
    const ws = path.join(root, "ws");
    fs.mkdirSync(home);
    fs.mkdirSync(ws);
    const env = { PATH: process.env.PATH, HOME: home, TMPDIR: root };
    const c = new RawClient({ command: "unshare", args: [...unshareArgs, "sh", "-c", BIND_RO, "sh", home, BINARY, "--stdio"], env });
    clients.push(c);
    c.request(1, "initialize", initParams(ws));
    expect((await c.response(1)).error).toBeUndefined();
    c.request(2, "session/prompt", promptParams("s"));
    const refused = await c.response(2);
    expect(refused.error?.data?.kind).toBe("session-log");
    expect(refused.error?.message).toContain(`cannot make the session log folder ${home}/.local/state/harness-bridge (EROFS: read-only file system`);
    expect(refused.error?.message).not.toContain("ENOENT");
    // The bridge serves on.
    c.request(3, "shutdown");
    expect((await c.response(3)).result).toEqual({});
  });
});
