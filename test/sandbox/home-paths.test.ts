/**
 * The sandbox names credential stores and toolchains under `$HOME` however `HOME` is spelled
 * (a trailing slash, `.` and `..` parts, doubled slashes, `/` itself): a store under a HOME
 * written `/home/u/` is hidden as under `/home/u`, and the rules read the same toolchains.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultSessionRoot } from "../../src/agent/store/root.js";
import { HIDDEN_HOME_PATHS, hiddenPaths, wantedHidden } from "../../src/sandbox/hidden.js";
import { landlockRules } from "../../src/sandbox/landlock.js";
import { isInside } from "../../src/tools/path-inside.js";
import { restoreEnv } from "../tools/helpers.js";

let root: string;
let home: string;
beforeEach(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "home-paths-")));
  home = path.join(root, "u");
  fs.mkdirSync(path.join(home, ".ssh"), { recursive: true });
  fs.mkdirSync(path.join(home, ".cargo", "bin"), { recursive: true });
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const spellings = () => [home, `${home}/`, `${root}//u/./`, `${root}/x/../u`];

describe("paths under $HOME", () => {
  it("are the same whatever the spelling of HOME", () => {
    for (const HOME of spellings()) {
      const env = { HOME };
      expect(wantedHidden(env)).toEqual(expect.arrayContaining(HIDDEN_HOME_PATHS.map((p) => path.join(home, p))));
      expect(hiddenPaths(env).map((h) => h.path)).toContain(path.join(home, ".ssh"));
      const rules = landlockRules(undefined, undefined, env);
      expect("args" in rules && rules.args).toEqual(expect.arrayContaining(["--ro", path.join(home, ".cargo", "bin")]));
    }
  });

  it("of HOME=/ are named from the root", () => {
    expect(wantedHidden({ HOME: "/" })).toEqual(expect.arrayContaining(HIDDEN_HOME_PATHS.map((p) => `/${p}`)));
  });

  // os.homedir() returns a set HOME as it is: an empty or relative one would name stores below
  // the working directory, and leave the account's own (~/.ssh) visible to sandboxed commands.
  it.each(["", "rel", "./x/.."])("of HOME=%j are the account's, never below the working directory", (HOME) => {
    const saved = { ...process.env };
    const cwd = process.cwd();
    try {
      process.chdir(root);
      process.env.HOME = HOME;
      delete process.env.XDG_STATE_HOME;
      const account = os.userInfo().homedir;
      const hidden = wantedHidden(process.env);
      expect(hidden).toEqual(expect.arrayContaining(HIDDEN_HOME_PATHS.map((p) => path.join(account, p))));
      expect(hidden.filter((p) => isInside(root, p))).toEqual([]);
      expect(defaultSessionRoot(process.env)).toBe(path.join(account, ".local", "state", "harness-bridge"));
    } finally {
      process.chdir(cwd);
      restoreEnv(saved);
    }
  });
});
