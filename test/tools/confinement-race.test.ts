/**
 * Confinement against a concurrent swap: a child process flips a workspace folder between a
 * real folder and a symbolic link to an outside folder holding canary files, thousands of times,
 * while read_file, write_file and edit_file run on paths through that folder. Whichever way each
 * race falls, no canary may appear in any output and the outside folder must stay byte for byte
 * as it was (no file changed, none created).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { editFileTool } from "../../src/tools/edit-file.js";
import { readFileTool } from "../../src/tools/read-file.js";
import type { Tool } from "../../src/tools/types.js";
import { writeFileTool } from "../../src/tools/write-file.js";
import { makeCtx, makeSandbox, text, writeTree } from "./helpers.js";
import { startSwapper } from "./swapper.js";

let sb: ReturnType<typeof makeSandbox>;
beforeEach(() => {
  sb = makeSandbox();
});
afterEach(() => sb.cleanup());

const CANARY = "CANARY-7f3e9a";
/** Every file and its content under `dir` (links not followed). */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const p = path.join(entry.parentPath, entry.name);
    out[path.relative(dir, p)] = entry.isFile() ? fs.readFileSync(p, "utf8") : entry.isDirectory() ? "<dir>" : "<other>";
  }
  return out;
}

/**
 * Runs `call` in `workers` concurrent loops until the time or the call budget is spent and
 * `enough(calls made)` holds: a busy machine takes longer, it does not test less.
 */
async function hammer(
  call: (i: number) => Promise<string>,
  opts: { workers: number; calls: number; ms: number; enough: (calls: number) => boolean },
): Promise<{ outputs: string[] }> {
  const outputs: string[] = [];
  const deadline = Date.now() + opts.ms;
  const giveUp = Date.now() + 90_000; // then the assertions say what fell short
  let next = 0;
  await Promise.all(
    Array.from({ length: opts.workers }, async () => {
      while ((next < opts.calls && Date.now() < deadline) || (!opts.enough(next) && Date.now() < giveUp)) {
        const i = next++;
        outputs.push(await call(i).catch((err: Error) => `error: ${err.message}`));
      }
    }),
  );
  return { outputs };
}

const run = (tool: Tool, args: Record<string, unknown>) => tool.execute(args as never, makeCtx(sb.ws, "workspace-write")).then(text);

describe("file tools under a concurrent folder/symlink swap", () => {
  it("never read, write or create outside, over thousands of races", async () => {
    // The same names inside and outside, so an escaped open finds its file.
    writeTree(sb.ws, { "d/f.txt": "inside f\n", "d/g.txt": "inside g\n", "d/sub/h.txt": "inside h\n", "e.txt": "inside e\n" });
    writeTree(sb.outside, { "f.txt": `inside f ${CANARY}\n`, "g.txt": `inside g ${CANARY}\n`, "sub/h.txt": `inside h ${CANARY}\n` });
    const before = snapshot(sb.outside);

    // A folder on the way, and the file itself (`e.txt` ↔ a link to outside/f.txt).
    const swappers = [
      startSwapper({ entry: path.join(sb.ws, "d"), outsideTarget: sb.outside }),
      startSwapper({ entry: path.join(sb.ws, "e.txt"), outsideTarget: path.join(sb.outside, "f.txt") }),
    ];
    let outputs: string[];
    let flips: number[];
    try {
      const enough = (calls: number) => calls > 1500 && swappers.every((w) => w.flips() > 1500);
      const budget = { workers: 4, calls: 6000, ms: 5000, enough };
      const calls: ((i: number) => Promise<string>)[] = [
        () => run(readFileTool, { path: "d/f.txt" }),
        () => run(readFileTool, { path: "d/sub/h.txt" }),
        (i) => run(writeFileTool, { path: `d/new-${i}.txt`, content: `written ${i}\n` }),
        (i) => run(writeFileTool, { path: `d/sub/h.txt`, content: `inside h ${i}\n` }),
        (i) => run(writeFileTool, { path: `d/deep-${i}/x.txt`, content: "deep\n" }),
        () => run(editFileTool, { path: "d/g.txt", oldText: "inside", newText: "INSIDE" }),
        () => run(editFileTool, { path: "d/g.txt", oldText: "INSIDE", newText: "inside" }),
        () => run(readFileTool, { path: "e.txt" }),
        (i) => run(writeFileTool, { path: "e.txt", content: `inside e ${i}\n` }),
        () => run(editFileTool, { path: "e.txt", oldText: "inside", newText: "INSIDE" }),
        () => run(editFileTool, { path: "e.txt", oldText: "INSIDE", newText: "inside" }),
      ];
      ({ outputs } = await hammer((i) => calls[i % calls.length](i), budget));
    } finally {
      flips = (await Promise.all(swappers.map((w) => w.stop()))).map((r) => r.flips);
    }

    // The race really ran: many flips, many calls, and both sides of it seen.
    for (const n of flips) expect(n).toBeGreaterThan(1000);
    expect(outputs.length).toBeGreaterThan(1000);
    expect(outputs.some((o) => o.startsWith("1\tinside"))).toBe(true);
    expect(outputs.some((o) => o.startsWith("error:"))).toBe(true);

    const leaked = outputs.filter((o) => o.includes(CANARY));
    expect({ outputsWithOutsideBytes: leaked.length, examples: leaked.slice(0, 3), outside: snapshot(sb.outside) }).toEqual({
      outputsWithOutsideBytes: 0,
      examples: [],
      outside: before,
    });
  }, 120_000);
});
