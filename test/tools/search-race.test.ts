/**
 * glob and grep under a concurrent swap: another process flips a workspace folder between a real
 * folder and a symbolic link to an outside folder full of canary files, thousands of times, while
 * both engines search. Nothing outside may appear in any output: no canary name, no canary line.
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { globTool } from "../../src/tools/glob.js";
import { grepTool } from "../../src/tools/grep.js";
import { makeCtx, makeSandbox, text, useSearchEngine, writeTree, SEARCH_ENGINES } from "./helpers.js";

const SWAPPER = `
const fs = require("node:fs");
const [ws, outside, parked, stopFile] = process.argv.slice(1);
const d = ws + "/d";
let n = 0;
let i = 0;
while ((i++ & 31) !== 0 || !fs.existsSync(stopFile)) {
  try {
    fs.renameSync(d, parked);
    fs.symlinkSync(outside, d);
    fs.unlinkSync(d);
    fs.renameSync(parked, d);
    n++;
  } catch (e) {
    try { fs.unlinkSync(d); } catch {}
    try { fs.renameSync(parked, d); } catch {}
  }
}
process.stdout.write(String(n));
`;

let sb: ReturnType<typeof makeSandbox>;
let swapper: ChildProcess | undefined;
beforeEach(() => {
  sb = makeSandbox();
  const canaries: Record<string, string> = {};
  const inner: Record<string, string> = {};
  for (let i = 0; i < 40; i++) {
    canaries[`canary-${i}.txt`] = "CANARY needle from outside\n";
    inner[`d/inner-${i}.txt`] = "inside needle\n";
  }
  writeTree(sb.outside, canaries);
  writeTree(sb.ws, { ...inner, ".gitignore": "*.log\n", "top.txt": "needle at the top\n" });
});
afterEach(() => {
  swapper?.kill("SIGKILL");
  swapper = undefined;
  sb.cleanup();
});

/** Starts the swapper; `stop()` ends it and resolves with its number of swaps. */
function startSwapper(): { stop(): Promise<number> } {
  const stopFile = path.join(sb.root, "stop");
  const child = spawn(process.execPath, ["-e", SWAPPER, sb.ws, sb.outside, path.join(sb.root, "parked"), stopFile], { stdio: ["ignore", "pipe", "inherit"] });
  swapper = child;
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  const closed = new Promise<number>((resolve) => child.on("close", () => resolve(Number(out))));
  return {
    stop() {
      fs.writeFileSync(stopFile, "");
      return closed;
    },
  };
}

describe.each(SEARCH_ENGINES)("glob and grep against a folder/link swapper (%s engine)", (engine) => {
  it("never list or read anything outside the workspace", async () => {
    const restore = await useSearchEngine(engine);
    try {
      const ctx = makeCtx(sb.ws);
      // At least 3 s of races, and on a busy machine until enough calls ran during them.
      const swapping = startSwapper();
      const softDeadline = Date.now() + 3000;
      let calls = 0;
      let sawInside = 0;
      while (Date.now() < softDeadline || calls <= 20 || sawInside === 0) {
        const outputs: string[] = [];
        outputs.push(text(await globTool.execute({ pattern: "**/*" }, ctx)));
        outputs.push(text(await globTool.execute({ pattern: "d/*" }, ctx)));
        outputs.push(text(await grepTool.execute({ pattern: "needle" }, ctx)));
        for (const call of [{ pattern: "from|needle", path: "d" }, { pattern: "needle", path: "d/inner-3.txt" }]) {
          try {
            outputs.push(text(await grepTool.execute(call, ctx)));
          } catch (err) {
            outputs.push((err as Error).message); // refused (a link at check time) or gone mid-swap
          }
        }
        calls += outputs.length;
        for (const out of outputs) {
          expect(out).not.toMatch(/canary|CANARY|SECRET/);
          if (out.includes("inside needle")) sawInside++;
        }
      }
      const swaps = await swapping.stop();
      expect(swaps).toBeGreaterThan(1000);
      expect(calls).toBeGreaterThan(20);
      expect(sawInside).toBeGreaterThan(0);
      fs.rmSync(path.join(sb.root, "parked"), { recursive: true, force: true });
    } finally {
      restore();
    }
  }, 90_000);
});
