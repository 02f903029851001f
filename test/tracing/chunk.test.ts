/**
 * Start-up does not pay for tracing: the tracer is a chunk of its own (build/tracing.cjs, a SEA
 * asset evaluated by src/server/tracing-loader.ts only when an OTEL variable asks for traces),
 * and none of its code is in the main bundle that every start parses. The bundle is the one
 * test/support/build-once.ts built for this run.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../support/raw-client.js";

describe("the tracing chunk", () => {
  it("holds the tracer, and the main bundle holds none of it", () => {
    const main = fs.readFileSync(path.join(ROOT, "build", "harness-bridge.cjs"), "utf8");
    const chunk = fs.readFileSync(path.join(ROOT, "build", "tracing.cjs"), "utf8");
    // Strings only the tracer has: its span names, its OTLP encoding, its variables past the loader's.
    for (const marker of ["invoke_agent", "resourceSpans", "OTEL_BSP_MAX_QUEUE_SIZE", "gen_ai.tool.call.id"]) {
      expect(chunk).toContain(marker);
      expect(main).not.toContain(marker);
    }
    // The loader is in the main bundle and names the chunk.
    expect(main).toContain("tracing.cjs");
  });
});
