/**
 * A concurrent swapper for confinement race tests: a child process (truly concurrent with the
 * tools' thread-pool work, unlike an async loop) that flips one workspace entry, over and over,
 * between what it really is (a folder or a file, kept inside the workspace) and a symbolic link
 * to something outside. A tool that checks a path by name and then opens it by name loses this
 * race within milliseconds.
 *
 *   const swapper = startSwapper({ entry: path.join(ws, "d"), outsideTarget: outsideDir });
 *   ... run tools on "d/..." ...
 *   const { flips } = await swapper.stop(); // `entry` is the real folder again
 */
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

export interface Swapper {
  /** The flips made so far (the child reports every 64th). */
  flips(): number;
  /** Stops the child, restores `entry` as the real thing, and says how many flips it made. */
  stop(): Promise<{ flips: number }>;
}

// Plain CommonJS, run with `node -e`. Each flip: entry → parked, a fresh link → entry, the
// link removed, parked → entry. A step that fails because a tool made something at `entry` in a
// gap is repaired (what a tool made there is inside the workspace; it is removed, never
// followed: rmSync does not follow links) and the loop goes on.
const CHILD = `
const fs = require("node:fs");
const [entry, target, parked, link, stopFile] = process.argv.slice(1);
const rm = (p) => { try { fs.rmSync(p, { recursive: true, force: true }); } catch {} };
const put = (from, to) => {
  for (let i = 0; i < 5; i++) {
    try { fs.renameSync(from, to); return true; } catch (e) {
      if (e.code === "ENOENT") return false;
      rm(to);
    }
  }
  return false;
};
let flips = 0;
for (let i = 0; ; i++) {
  if ((i & 31) === 0 && fs.existsSync(stopFile)) break;
  if (!put(entry, parked)) { put(parked, entry); continue; }
  try { fs.symlinkSync(target, link); } catch {}
  put(link, entry);
  try { if (fs.lstatSync(entry).isSymbolicLink()) fs.unlinkSync(entry); } catch {}
  put(parked, entry);
  flips++;
  if ((flips & 63) === 0) process.stdout.write(flips + "\\n");
}
try { if (fs.lstatSync(entry).isSymbolicLink()) fs.unlinkSync(entry); } catch {}
if (fs.existsSync(parked)) { rm(entry); fs.renameSync(parked, entry); }
rm(link);
process.stdout.write(flips + "\\n");
`;

/**
 * Starts flipping `entry` (an existing folder or file inside the workspace) with a symbolic
 * link to `outsideTarget`. The parked copy and the link live next to `entry` (names ending
 * `.parked` and `.swaplink`), so tools walking the workspace may see them.
 */
export function startSwapper(opts: { entry: string; outsideTarget: string }): Swapper {
  const { entry, outsideTarget } = opts;
  const parked = `${entry}.parked`;
  const link = `${entry}.swaplink`;
  const stopFile = path.join(os.tmpdir(), `hb-swapper-stop-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`);
  const child = spawn(process.execPath, ["-e", CHILD, entry, outsideTarget, parked, link, stopFile], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
  // The last whole line: the latest count the child reported.
  const last = () => Number(out.slice(0, out.lastIndexOf("\n")).split("\n").pop() || 0);
  // "close", not "exit": the flip count is the child's last write, and "exit" can come before
  // stdout has been read.
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  return {
    flips: last,
    async stop() {
      fs.writeFileSync(stopFile, "");
      const guard = setTimeout(() => child.kill("SIGKILL"), 10_000);
      const code = await exited;
      clearTimeout(guard);
      fs.rmSync(stopFile, { force: true });
      if (code !== 0) throw new Error(`swapper exited with ${code}`);
      return { flips: last() };
    },
  };
}
