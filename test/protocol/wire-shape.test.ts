/**
 * test/fixtures/wire-shape.json is the wire's shape (event types, notifications, methods, and the
 * field paths of each) that the Python SDK's models are checked against
 * (python/sdk/tests/test_wire_shape.py). Here: the file is what src/protocol/'s types say, and its
 * methods are the ones in the server's method table (`HarnessServer.methodNames`). A field added
 * on one side only fails one of the two.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { HarnessServer } from "../../src/server/server.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const fixture = join(root, "test/fixtures/wire-shape.json");

describe("test/fixtures/wire-shape.json", () => {
  it("is what the TypeScript wire types declare (else: node scripts/wire-shape.mjs --write, then type the change in the SDK)", () => {
    const computed = execFileSync(process.execPath, [join(root, "scripts/wire-shape.mjs")], { encoding: "utf8" });
    expect(JSON.parse(computed)).toEqual(JSON.parse(readFileSync(fixture, "utf8")));
  });

  it("lists exactly the methods the server dispatches", () => {
    const dispatched = [...HarnessServer.methodNames].sort();
    expect(dispatched.length).toBeGreaterThan(5);
    const shape = JSON.parse(readFileSync(fixture, "utf8")) as { methods: Record<string, unknown> };
    expect(Object.keys(shape.methods).sort()).toEqual(dispatched);
  });
});
