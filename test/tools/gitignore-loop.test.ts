/**
 * The built-in walk runs on the bridge's one event loop: while it holds the loop, every other
 * session waits and no cancel is read. A cancel sent from the loop's next turn once the work has
 * begun must stop it long before the work is done, wherever the cost lies: in a large folder
 * judged by costly rules under tinyglobby's walk (a pattern reaching outside the workspace), or
 * in the parse of one large `.gitignore`.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import ignore from "ignore";
import { afterEach, describe, expect, it, vi } from "vitest";
import { GitignoreFilter, listFiles, walkFiles } from "../../src/tools/gitignore.js";

let ws: string | undefined;
afterEach(() => {
  vi.restoreAllMocks();
  if (ws) fs.rmSync(ws, { recursive: true, force: true });
  ws = undefined;
});

/**
 * Rules no index holds (no plain run of three characters), whose characters are all in every
 * name `file<i>.txt` but never in their order (nothing follows `x` but `t`): every entry is tested
 * on each of them, and none matches.
 */
const costlyRules = (count: number) => Array.from({ length: count }, (_, i) => `*x${"?".repeat(1 + (i % 40))}f*${"?".repeat(Math.floor(i / 40))}`).join("\n") + "\n";

describe("the built-in walk gives the event loop a turn", () => {
  it("while tinyglobby's walk filters one large folder: a cancel stops it before the folder is judged", async () => {
    ws = fs.mkdtempSync(path.join(os.tmpdir(), "hb-gitignore-loop-"));
    const files = 1500;
    fs.writeFileSync(path.join(ws, ".gitignore"), costlyRules(2000));
    fs.mkdirSync(path.join(ws, "big"));
    for (let i = 0; i < files; i++) fs.writeFileSync(path.join(ws, "big", `file${i}.txt`), "");
    const ac = new AbortController();
    let judged = 0;
    class CancelDuringFilter extends GitignoreFilter {
      override isIgnored(absPath: string, isDir: boolean): boolean {
        if (judged++ === 0) setImmediate(() => ac.abort(new Error("cancelled")));
        return super.isIgnored(absPath, isDir);
      }
    }
    // An absolute pattern: tinyglobby walks it (glob's `full` mode), this filter its file-system adapter.
    const walk = listFiles({ patterns: [`${ws}/big/**`], cwd: ws, filter: new CancelDuringFilter(ws, false), signal: ac.signal, followSymlinks: true });
    await expect(walk).rejects.toThrow("cancelled");
    expect(judged).toBeLessThan(files / 2);
  }, 60_000);

  it("while one large .gitignore is parsed: a cancel stops the parse", async () => {
    ws = fs.mkdtempSync(path.join(os.tmpdir(), "hb-gitignore-loop-"));
    // Plain names, under the size cap and the budget: applied, parsed in full unless cancelled.
    const text = Array.from({ length: 100_000 }, (_, i) => `name${i}`).join("\n") + "\n";
    fs.writeFileSync(path.join(ws, ".gitignore"), text);
    fs.writeFileSync(path.join(ws, "kept.txt"), "");
    const ac = new AbortController();
    let parsed = 0;
    const proto = Object.getPrototypeOf(ignore()) as { add(p: string): unknown };
    const add = proto.add;
    vi.spyOn(proto, "add").mockImplementation(function (this: unknown, pattern: string) {
      if (parsed === 0) setImmediate(() => ac.abort(new Error("cancelled")));
      parsed += pattern.length;
      return add.call(this, pattern);
    });
    const walk = walkFiles({ root: ws, filter: new GitignoreFilter(ws, true), signal: ac.signal, follow: false });
    await expect(walk).rejects.toThrow("cancelled");
    expect(parsed).toBeGreaterThan(0);
    expect(parsed).toBeLessThan(text.length / 2);
  }, 60_000);
});
