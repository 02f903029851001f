/**
 * The bridges' private folder (the Landlock helper, checked then executed; the remembered probe
 * verdicts; the commands' temporary folders) is never writable by a sandboxed command, even
 * when the workspace holds it (workspace /tmp, or a home folder holding TMPDIR). Before, such a
 * workspace granted it: a command could plant a verdict for the next start's report, or swap the
 * helper between its check and its exec and have the next command run unconfined.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { bwrapArgs, findBwrap } from "../../src/sandbox/bwrap.js";
import { landlockRules } from "../../src/sandbox/landlock.js";
import { privateFolder, verifiedHelper } from "../../src/sandbox/landlock-helper.js";
import { resetSandboxProbes } from "../../src/sandbox/probe.js";
import { bashTool } from "../../src/tools/bash.js";
import { makeCtx, makeSandbox, restoreEnv, text } from "../tools/helpers.js";

let sb: ReturnType<typeof makeSandbox>;
let tmp: string;
const savedEnv = { ...process.env };
beforeEach(() => {
  sb = makeSandbox();
  // The workspace holds the temporary folder, so it holds the private folder.
  tmp = path.join(sb.ws, "tmp");
  fs.mkdirSync(tmp);
  process.env.TMPDIR = tmp;
  resetSandboxProbes();
});
afterEach(() => {
  restoreEnv(savedEnv);
  resetSandboxProbes();
  sb.cleanup();
});

const sh = async (command: string) => {
  const out = await bashTool.execute({ command } as never, makeCtx(sb.ws, "workspace-write"));
  return { out: text(out), isError: out.isError };
};
const q = JSON.stringify;

describe("a workspace holding the private folder", () => {
  it("is refused by the Landlock confinement (it cannot leave a hole for the folder)", () => {
    const folder = privateFolder();
    expect(folder.startsWith(`${tmp}/`)).toBe(true);
    const rules = landlockRules(fs.realpathSync(sb.ws), undefined, process.env);
    expect(rules).toEqual({ refused: expect.stringContaining(fs.realpathSync(folder)) });
  });

  it("has the folder mounted over by bubblewrap, after the workspace's bind", () => {
    const folder = fs.realpathSync(privateFolder());
    const args = bwrapArgs(fs.realpathSync(sb.ws), process.env);
    const bind = args.indexOf("--bind");
    const over = args.findIndex((a, i) => a === "--tmpfs" && args[i + 1] === folder);
    expect(over).toBeGreaterThan(bind);
  });

  it("Landlock: a command cannot replace the helper (bash refuses this workspace)", async () => {
    process.env.HARNESS_BWRAP = "off";
    const helper = verifiedHelper();
    const { out } = await sh(`printf '#!/bin/sh\\nexec "$@"\\n' > ${q(helper)} && echo swapped`);
    expect(out).not.toMatch(/^swapped$/m);
    expect(fs.readFileSync(helper).subarray(0, 4)).toEqual(Buffer.from("\x7fELF"));
  });

  it.runIf(findBwrap(process.env) !== null)("bubblewrap: a command sees an empty folder there and changes nothing in it", async () => {
    const folder = privateFolder();
    const verdict = path.join(folder, "landlock-verdict-planted");
    fs.writeFileSync(path.join(folder, "canary"), "x", { mode: 0o600 });
    const { out } = await sh(`ls -A ${q(folder)}; echo '{}' > ${q(verdict)} && echo planted`);
    expect(out).not.toMatch(/canary/);
    expect(fs.existsSync(verdict)).toBe(false);
  });
});
