/**
 * The home folder the bridge names paths in, for a process the account database does not know:
 * a container run as a bare numeric user (`--user 54321`) with HOME unset. os.homedir() and
 * os.userInfo() throw there; the bridge must still start, serve, and confine bash.
 */
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { BINARY } from "./support/raw-client.js";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("homeFolder", () => {
  it("is / when HOME is unset and the uid has no password entry (both os calls throw)", async () => {
    const noEntry = () => {
      throw Object.assign(new Error("A system error occurred: uv_os_homedir returned ENOENT (no such file or directory)"), { code: "ERR_SYSTEM_ERROR" });
    };
    // home-folder.ts takes node:os when it needs it (off the start-up path), by process.getBuiltinModule.
    const builtin = process.getBuiltinModule.bind(process);
    vi.spyOn(process, "getBuiltinModule").mockImplementation(((id: string) => (id === "node:os" ? { ...os, homedir: noEntry, userInfo: noEntry } : builtin(id))) as typeof process.getBuiltinModule);
    const { homeFolder } = await import("../src/home-folder.js");
    expect(homeFolder({})).toBe("/");
    expect(homeFolder({ HOME: "/home/u" })).toBe("/home/u");
  });
});

const uid = 54321;
const unknownUid = process.platform === "linux" && process.getuid?.() === 0 && spawnSync("getent", ["passwd", String(uid)]).status === 2 && fs.existsSync("/usr/bin/setpriv");

describe.runIf(unknownUid)("the binary as a uid without a password entry and without HOME", () => {
  it("starts, answers initialize and runs a turn", async () => {
    const ws = fs.mkdtempSync(path.join(os.tmpdir(), "hb-nouser-"));
    try {
      fs.chmodSync(ws, 0o777);
      const lines = [
        { jsonrpc: "2.0", id: 1, method: "initialize", params: { cwd: ws, provider: "scripted", model: "demo" } },
        { jsonrpc: "2.0", id: 2, method: "session/prompt", params: { sessionId: "s", contentBlocks: [{ type: "text", text: "hi" }] } },
      ];
      const child = spawn("/usr/bin/setpriv", [`--reuid=${uid}`, `--regid=${uid}`, "--clear-groups", BINARY, "--stdio", "--no-session-log"], {
        env: { PATH: "/usr/bin:/bin", TMPDIR: ws },
        stdio: ["pipe", "pipe", "pipe"],
      });
      let out = "";
      let err = "";
      child.stdout.on("data", (d) => (out += d));
      child.stderr.on("data", (d) => (err += d));
      child.stdin.end(lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
      const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
      expect(err).not.toContain("uv_os_homedir");
      expect(code).toBe(0);
      const frames = out.trim().split("\n").map((l) => JSON.parse(l));
      expect(frames.find((f) => f.id === 1)?.result?.serverInfo?.name).toBe("harness-bridge");
      expect(frames.find((f) => f.id === 2)?.result?.status).toBe("ok");
    } finally {
      fs.rmSync(ws, { recursive: true, force: true });
    }
  });
});
