/**
 * `initialize` with a `cwd` this user may not enter or read (a checkout owned by someone else, a
 * root-owned folder a service account is pointed at), through the binary: `-32602` naming the
 * folder, the cause and the fix, and the bridge serves on — where a folder behind one it cannot
 * enter was `-32603` "internal error: EACCES", and one it cannot read was accepted. A read-only
 * folder it can read is a workspace like any other. As root the bridge runs without
 * capabilities (`setpriv --bounding-set=-all`), so the folders' modes bind it like anyone.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BINARY, RawClient, initParams } from "../support/raw-client.js";

const asRoot = process.getuid?.() === 0;
const setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].find((p) => fs.existsSync(p));
// Root without capabilities is held to the modes (no CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH).
const dropsCaps = asRoot && setpriv !== undefined && spawnSync(setpriv, ["--bounding-set=-all", "--inh-caps=-all", "true"]).status === 0;

let root: string;
const clients: RawClient[] = [];
beforeEach(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "hb-ws-access-")));
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.dispose();
  for (const dir of [root, path.join(root, "closed"), path.join(root, "locked")]) if (fs.existsSync(dir)) fs.chmodSync(dir, 0o700);
  fs.rmSync(root, { recursive: true, force: true });
});

function bridge(): RawClient {
  const args = ["--stdio", "--no-session-log"];
  const c = asRoot ? new RawClient({ command: setpriv, args: ["--bounding-set=-all", "--inh-caps=-all", BINARY, ...args] }) : new RawClient({ args });
  clients.push(c);
  return c;
}

describe.runIf(process.platform === "linux" && (!asRoot || dropsCaps))("initialize's cwd and this user's permissions (the binary)", () => {
  it("a folder behind one it cannot enter, and one it cannot read: -32602 naming the folder, the cause and the fix", async () => {
    const locked = path.join(root, "locked");
    const inside = path.join(locked, "ws");
    fs.mkdirSync(inside, { recursive: true });
    fs.chmodSync(locked, 0o000);
    const closed = path.join(root, "closed");
    fs.mkdirSync(closed);
    fs.chmodSync(closed, 0o300); // it may enter and write, not list
    const c = bridge();
    c.request(1, "initialize", initParams(inside));
    const behind = await c.response(1);
    expect(behind.error?.code).toBe(-32602);
    expect(behind.error?.message).toContain(`params.cwd: ${inside} cannot be reached: permission denied (the bridge runs as uid ${process.getuid!()})`);
    expect(behind.error?.message).toContain("run the bridge as a user who can");
    c.request(2, "initialize", initParams(closed));
    const unreadable = await c.response(2);
    expect(unreadable.error?.code).toBe(-32602);
    expect(unreadable.error?.message).toContain(`params.cwd: ${closed} cannot be read: permission denied`);
    // It serves on: a folder it can read, read-only, is a workspace.
    const readOnly = path.join(root, "ro");
    fs.mkdirSync(readOnly);
    fs.chmodSync(readOnly, 0o500);
    c.request(3, "initialize", initParams(readOnly));
    expect((await c.response(3)).result?.serverInfo?.name).toBe("harness-bridge");
  });
});
