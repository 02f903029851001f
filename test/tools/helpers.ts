/** Shared helpers of the tool tests: temp workspaces and a tool context. */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { PermissionMode } from "../../src/protocol/index.js";
import { findRipgrep, resetRipgrepLookup } from "../../src/tools/search/ripgrep.js";
import type { ToolContext, ToolOutput } from "../../src/tools/types.js";

/** Puts `process.env` back to `saved` (a copy taken before the tests): what they added goes, what they changed or removed comes back. */
export function restoreEnv(saved: NodeJS.ProcessEnv): void {
  for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
  Object.assign(process.env, saved);
}

/** A fresh temp folder holding `ws/` (the workspace) and `outside/` (a sibling the tools must not reach). */
export function makeSandbox(): { root: string; ws: string; outside: string; cleanup: () => void } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-tools-"));
  const ws = path.join(root, "ws");
  const outside = path.join(root, "outside");
  fs.mkdirSync(ws);
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(outside, "secret.txt"), "TOP SECRET outside\n");
  return { root, ws, outside, cleanup: () => fs.rmSync(root, { recursive: true, force: true }) };
}

/** Writes files (relative path → content) under `dir`, creating folders. */
export function writeTree(dir: string, files: Record<string, string>): void {
  for (const [rel, content] of Object.entries(files)) {
    const file = path.join(dir, rel);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
  }
}

export function makeCtx(workspace: string, permissionMode: PermissionMode = "workspace-write", signal?: AbortSignal): ToolContext {
  return { workspace, permissionMode, signal: signal ?? new AbortController().signal, sessionId: "test", callId: "call-1" };
}

export function text(out: ToolOutput): string {
  return out.content.map((b) => b.text).join("");
}

// ripgrep is optional for users (glob and grep fall back to the built-in engines, same output),
// so a machine without it skips the ripgrep cases, saying so; CI sets HARNESS_REQUIRE_RG=1 and
// they must run there (a missing rg then fails them in useSearchEngine).
const rgFound = (await findRipgrep()) !== undefined;
resetRipgrepLookup();
/** Whether the ripgrep cases run: rg >= 13 is installed, or CI requires it. */
export const ripgrepHere = rgFound || process.env.HARNESS_REQUIRE_RG === "1";
/** Appended to the title of a ripgrep case, which then says why it is skipped. */
export const ripgrepNote = ripgrepHere ? "" : " [skipped: no ripgrep (rg >= 13) here, and HARNESS_REQUIRE_RG is not 1]";
/** The engines whose cases run here: both, or the built-in one alone where ripgrep is missing. */
export const SEARCH_ENGINES = ripgrepHere ? (["ripgrep", "builtin"] as const) : (["builtin"] as const);

/**
 * Makes glob and grep use one engine: "ripgrep" (the machine's, which the tests need) or
 * "builtin" (ripgrep hidden with HARNESS_RG=off). Returns the undo.
 */
export async function useSearchEngine(engine: "ripgrep" | "builtin"): Promise<() => void> {
  const before = process.env.HARNESS_RG;
  if (engine === "builtin") process.env.HARNESS_RG = "off";
  else delete process.env.HARNESS_RG;
  resetRipgrepLookup();
  if (engine === "ripgrep" && !(await findRipgrep())) throw new Error("ripgrep (rg >= 13) is needed by the tests: apt-get install ripgrep");
  return () => {
    if (before === undefined) delete process.env.HARNESS_RG;
    else process.env.HARNESS_RG = before;
    resetRipgrepLookup();
  };
}
