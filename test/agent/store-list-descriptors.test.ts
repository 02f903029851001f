/**
 * `session/list` when a log cannot be opened for want of file descriptors: the listing fails
 * (the server answers -32001 out-of-descriptors, after closing idle logs and trying again), it
 * never answers without that session as if it were not there. `openSync` is wrapped to run out
 * of descriptors for one session's files only.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, expect, it, vi } from "vitest";

const starved = vi.hoisted(() => ({ marker: "" }));

vi.mock("node:fs", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs")>();
  const openSync = (file: fs.PathLike, ...rest: unknown[]) => {
    if (starved.marker && String(file).includes(starved.marker)) throw Object.assign(new Error(`EMFILE: too many open files, open '${String(file)}'`), { code: "EMFILE" });
    return (real.openSync as (...args: unknown[]) => number)(file, ...rest);
  };
  return { ...real, default: { ...real, openSync }, openSync };
});

const { SessionStore } = await import("../../src/agent/store/index.js");
const { isOutOfDescriptors } = await import("../../src/tools/out-of-descriptors.js");

let root: string;
let ws: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-list-fds-"));
  ws = fs.mkdtempSync(path.join(os.tmpdir(), "hb-list-fds-ws-"));
});
afterEach(() => {
  starved.marker = "";
  fs.rmSync(root, { recursive: true, force: true });
  fs.rmSync(ws, { recursive: true, force: true });
});

it("a log it has no descriptor for fails the listing; it is not left out", () => {
  const store = new SessionStore(root, ws);
  for (const id of ["alpha", "bravo"]) store.open(id, { provider: "scripted", model: "m" }).close();
  expect(store.list().sessions.map((s) => s.sessionId).sort()).toEqual(["alpha", "bravo"]);
  starved.marker = `${path.sep}bravo.`;
  let thrown: unknown;
  try {
    const listed = store.list();
    thrown = `listed ${listed.sessions.map((s) => s.sessionId).join(", ")} (problems: ${listed.problems.join("; ")})`;
  } catch (error) {
    thrown = error;
  }
  expect(isOutOfDescriptors(thrown), String(thrown)).toBe(true);
  starved.marker = "";
  expect(store.list().sessions.map((s) => s.sessionId).sort()).toEqual(["alpha", "bravo"]);
});
