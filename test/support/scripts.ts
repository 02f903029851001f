/**
 * Helpers that write scripted-provider scripts (see `ScriptStep` in src/providers/scripted.ts)
 * into fresh temp workspaces.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach } from "vitest";
import type { Script, ScriptStep } from "../../src/providers/scripted.js";

export interface TempWorkspace {
  /** The workspace folder (absolute). */
  dir: string;
  /** Writes a script file into the workspace; returns its path relative to the workspace. */
  script(name: string, script: Script | { steps: ScriptStep[] }): string;
  /** Writes a file (relative path) into the workspace. */
  file(rel: string, content: string): string;
  cleanup(): void;
}

/** A fresh temp workspace. */
export function tempWorkspace(prefix = "hb-core-"): TempWorkspace {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  const file = (rel: string, content: string) => {
    const full = path.join(dir, rel);
    fs.mkdirSync(path.dirname(full), { recursive: true });
    fs.writeFileSync(full, content);
    return full;
  };
  return {
    dir,
    script: (name, script) => {
      file(name, JSON.stringify(script, null, 2));
      return name;
    },
    file,
    cleanup: () => {
      // A test may have made folders read-only; give write permission back before removing.
      const restore = (p: string) => {
        try {
          const st = fs.lstatSync(p);
          if (st.isDirectory()) {
            fs.chmodSync(p, 0o755);
            for (const name of fs.readdirSync(p)) restore(path.join(p, name));
          }
        } catch {
          /* gone already */
        }
      };
      restore(dir);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A one-turn script. */
export function oneTurn(...steps: ScriptStep[]): Script {
  return { turns: [{ steps }] };
}

/** A script whose every turn is the same steps. */
export function turns(...turnSteps: ScriptStep[][]): Script {
  return { turns: turnSteps.map((steps) => ({ steps })) };
}

/**
 * A temporary workspace and a temporary session root of its own, made before each test of the
 * file and removed after it: `each.ws` and `each.root` are the current test's.
 */
export function workspaceAndRootEachTest(prefix: string): { readonly ws: TempWorkspace; readonly root: string } {
  const each = {} as { ws: TempWorkspace; root: string };
  beforeEach(() => {
    each.ws = tempWorkspace(`${prefix}-`);
    each.root = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-root-`));
  });
  afterEach(() => {
    each.ws.cleanup();
    fs.rmSync(each.root, { recursive: true, force: true });
  });
  return each;
}
