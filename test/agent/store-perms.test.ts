/**
 * Session logs hold tool output (which may hold secrets): the session root and workspace
 * folders are 0700 and logs 0600 whatever the umask, and existing ones are tightened on open.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SessionStore } from "../../src/agent/store/index.js";

const mode = (p: string) => fs.statSync(p).mode & 0o777;

describe("session log permissions", () => {
  let tmp: string;
  let umask: number;
  beforeEach(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "hb-store-perms-"));
    umask = process.umask(0o022);
  });
  afterEach(() => {
    process.umask(umask);
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it("creates the root and the workspace folder 0700 and the log 0600 under umask 022", () => {
    const root = path.join(tmp, "state", "harness-bridge");
    const store = new SessionStore(root, "/work/space");
    const log = store.open("s1", { provider: "scripted", model: "demo" });
    log.close();
    expect(mode(root)).toBe(0o700);
    expect(mode(store.directory)).toBe(0o700);
    expect(mode(store.pathOf("s1"))).toBe(0o600);
  });

  it("tightens an existing world-readable root, folder and log when the session is opened", () => {
    const root = path.join(tmp, "root");
    const store = new SessionStore(root, "/work/space");
    store.open("s1", { provider: "scripted", model: "demo" }).close();
    fs.chmodSync(root, 0o755);
    fs.chmodSync(store.directory, 0o755);
    fs.chmodSync(store.pathOf("s1"), 0o644);

    const reopened = new SessionStore(root, "/work/space").open("s1", { provider: "scripted", model: "demo" });
    reopened.close();
    expect(mode(root)).toBe(0o700);
    expect(mode(store.directory)).toBe(0o700);
    expect(mode(store.pathOf("s1"))).toBe(0o600);
  });
});
