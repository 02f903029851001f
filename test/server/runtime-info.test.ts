/**
 * `initialize`'s `serverInfo.runtime` (PROTOCOL.md Additions, "Model settings and sandbox
 * status"): the binary runs the pinned Node (package.json `config.embeddedNode`), whatever node
 * built it, and says so. Through the binary (HARNESS_TEST_BINARY: the arm64 build under qemu).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { RawClient, ROOT, initParams } from "../support/raw-client.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";

const pinned: string = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")).config.embeddedNode;
let ws: TempWorkspace;
let c: RawClient | undefined;

beforeEach(() => {
  ws = tempWorkspace("hb-runtime-");
});

afterEach(async () => {
  await c?.dispose();
  ws.cleanup();
});

it("serverInfo.runtime names the embedded Node (the pinned version) and the build's target", async () => {
  c = new RawClient({ args: ["--stdio", "--no-session-log"] });
  c.request(1, "initialize", initParams(ws.dir));
  const init = await c.response(1);
  expect(init.error).toBeUndefined();
  const runtime = init.result.serverInfo.runtime;
  expect(runtime.node).toBe(pinned);
  expect(runtime.platform).toBe("linux");
  // The arm64 build under qemu says arm64; bin/harness-bridge is this machine's architecture.
  expect(runtime.arch).toBe(process.env.HARNESS_TEST_BINARY ? runtime.arch : process.arch);
  expect(["x64", "arm64"]).toContain(runtime.arch);
  expect(Object.keys(runtime).sort()).toEqual(["arch", "node", "platform"]);
});
