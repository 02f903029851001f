/**
 * Paths hidden from bash (the credential stores, HARNESS_SANDBOX_HIDE, the session root) are
 * hidden from the file tools too when the workspace holds them — the home folder as workspace
 * holds ~/.ssh and ~/.netrc — with both search engines, and from bash in the sandbox whatever
 * the order of its mounts. A hidden path that holds the workspace hides nothing inside it.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { bashTool } from "../../src/tools/bash.js";
import { editFileTool } from "../../src/tools/edit-file.js";
import { globTool } from "../../src/tools/glob.js";
import { grepTool } from "../../src/tools/grep.js";
import { readFileTool } from "../../src/tools/read-file.js";
import { findBwrap } from "../../src/sandbox/bwrap.js";
import { resetSandboxProbes } from "../../src/sandbox/probe.js";
import { ToolError, type Tool } from "../../src/tools/types.js";
import { writeFileTool } from "../../src/tools/write-file.js";
import { makeCtx, makeSandbox, restoreEnv, text, useSearchEngine, writeTree, SEARCH_ENGINES } from "./helpers.js";

let sb: ReturnType<typeof makeSandbox>;
const savedEnv = { ...process.env };
beforeEach(() => {
  sb = makeSandbox();
  resetSandboxProbes();
  writeTree(sb.ws, {
    ".ssh/id_key": "canary ssh\n",
    ".netrc": "canary netrc\n",
    "vault/secret": "canary vault\n",
    "notes.txt": "canary notes\n",
  });
  process.env.HOME = sb.ws;
  process.env.HARNESS_SANDBOX_HIDE = path.join(sb.ws, "vault");
});
afterEach(() => {
  restoreEnv(savedEnv);
  resetSandboxProbes();
  sb.cleanup();
});

/** A tool's answer as the model gets it: its output, or the message of the ToolError it threw. */
const run = async (tool: Tool, args: object, mode: "workspace-write" | "read-only" | "full" = "workspace-write") => {
  try {
    const out = await tool.execute(args as never, makeCtx(sb.ws, mode));
    return { out: text(out), isError: out.isError === true };
  } catch (error) {
    if (!(error instanceof ToolError)) throw error;
    return { out: error.message, isError: true };
  }
};
const HIDDEN = [".ssh/id_key", ".netrc", "vault/secret"];

describe("the file tools in a workspace that holds hidden paths", () => {
  for (const mode of ["workspace-write", "read-only"] as const) {
    it(`read_file refuses each, naming why (${mode})`, async () => {
      for (const p of HIDDEN) {
        const r = await run(readFileTool, { path: p }, mode);
        expect(r, p).toMatchObject({ isError: true });
        expect(r.out, p).toMatch(/is hidden from the tools/);
        expect(r.out).not.toMatch(/canary/);
      }
      // Through a link inside the workspace, too.
      fs.symlinkSync(".ssh", path.join(sb.ws, "innocent"));
      expect((await run(readFileTool, { path: "innocent/id_key" }, mode)).out).toMatch(/is hidden from the tools/);
      expect((await run(readFileTool, { path: "notes.txt" }, mode)).out).toMatch(/canary notes/);
    });
  }

  it("write_file and edit_file change nothing there and create nothing", async () => {
    for (const p of [".ssh/authorized_keys", ".ssh/id_key", ".netrc", "vault/new"]) {
      const r = await run(writeFileTool, { path: p, content: "planted" });
      expect(r, p).toMatchObject({ isError: true, out: expect.stringMatching(/is hidden from the tools/) });
    }
    const e = await run(editFileTool, { path: ".netrc", oldText: "canary", newText: "changed" });
    expect(e).toMatchObject({ isError: true, out: expect.stringMatching(/is hidden from the tools/) });
    expect(fs.existsSync(path.join(sb.ws, ".ssh", "authorized_keys"))).toBe(false);
    expect(fs.existsSync(path.join(sb.ws, "vault", "new"))).toBe(false);
    expect(fs.readFileSync(path.join(sb.ws, ".netrc"), "utf8")).toBe("canary netrc\n");
  });

  for (const engine of SEARCH_ENGINES) {
    it(`glob and grep neither list nor read them (${engine})`, async () => {
      const undo = await useSearchEngine(engine);
      try {
        const listed = await run(globTool, { pattern: "**/*" });
        expect(listed.out).toContain("notes.txt");
        for (const p of HIDDEN) expect(listed.out).not.toContain(p);
        const found = await run(grepTool, { pattern: "canary" });
        expect(found.out).toContain("notes.txt");
        expect(found.out).not.toMatch(/ssh|netrc|vault/);
        const aimed = await run(grepTool, { pattern: "canary", path: ".ssh" });
        expect(aimed.out).not.toMatch(/canary ssh/);
      } finally {
        undo();
      }
    });
  }

  it("full mode is unconfined: it reads them", async () => {
    expect((await run(readFileTool, { path: ".ssh/id_key" }, "full")).out).toMatch(/canary ssh/);
  });

  (findBwrap() !== null || process.env.HARNESS_REQUIRE_BWRAP === "1" ? it : it.skip)("bash in bubblewrap sees them empty although the workspace bind holds them", async () => {
    const r = await run(bashTool, { command: "cat .ssh/id_key .netrc vault/secret 2>&1; cat notes.txt" });
    expect(r.out).not.toMatch(/canary (ssh|netrc|vault)/);
    expect(r.out).toMatch(/canary notes/);
  });

  it("bash under Landlock (bubblewrap off) is refused such a workspace: Landlock cannot hide a path inside it", async () => {
    process.env.HARNESS_BWRAP = "off";
    const r = await run(bashTool, { command: "cat .ssh/id_key .netrc vault/secret 2>&1; echo ran > ran.txt" });
    expect(r.out).toMatch(/bash was not run: .*the workspace holds .*Landlock cannot hide/s);
    expect(r.out).not.toMatch(/canary/);
    expect(fs.existsSync(path.join(sb.ws, "ran.txt"))).toBe(false);
  });
});

describe("a hidden path that holds the workspace", () => {
  it("hides nothing inside it, for the file tools and for bash", async () => {
    process.env.HARNESS_SANDBOX_HIDE = sb.root;
    process.env.HOME = sb.outside;
    expect((await run(readFileTool, { path: "notes.txt" })).out).toMatch(/canary notes/);
    expect((await run(readFileTool, { path: "vault/secret" })).out).toMatch(/canary vault/);
    expect((await run(bashTool, { command: "cat notes.txt" })).out).toMatch(/canary notes/);
  });
});
