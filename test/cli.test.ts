/**
 * The command line's parsing (the end-to-end exits are in test/server/e2e-lifecycle.test.ts).
 */
import fc from "fast-check";
import { parseArgs } from "node:util";
import { describe, expect, it } from "vitest";
import { parseOptions, type ArgSpec } from "../src/cli-args.js";
import { helpText, parseCommandLine } from "../src/cli.js";

describe("parseCommandLine", () => {
  it("gives the defaults", () => {
    expect(parseCommandLine(["--stdio"])).toEqual({
      action: "serve",
      options: { stdio: true, sessionRoot: undefined, sessionLog: true, logLevel: "warn", maxSteps: 50, permissionMode: "full", maxLineBytes: 16 * 1024 * 1024, subagentDepth: 1 },
    });
  });

  it("reads every option, in both spellings", () => {
    const parsed = parseCommandLine([
      "--stdio",
      "--session-root=/r",
      "--no-session-log",
      "--log-level",
      "debug",
      "--max-steps",
      "3",
      "--permission-mode=read-only",
      "--max-line-bytes",
      "100",
      "--subagent-depth",
      "0",
    ]);
    expect(parsed).toEqual({
      action: "serve",
      options: { stdio: true, sessionRoot: "/r", sessionLog: false, logLevel: "debug", maxSteps: 3, permissionMode: "read-only", maxLineBytes: 100, subagentDepth: 0 },
    });
  });

  it("--help and --version win over the rest", () => {
    expect(parseCommandLine(["--stdio", "-h"])).toEqual({ action: "help" });
    expect(parseCommandLine(["-V"])).toEqual({ action: "version" });
  });

  it.each([
    [["--bogus"], "--bogus"],
    [["--stdio", "extra"], "extra"],
    [["--stdio", "--max-steps", "0"], "--max-steps"],
    [["--stdio", "--max-steps", "1.5"], "--max-steps"],
    [["--stdio", "--subagent-depth", "-1"], "--subagent-depth"],
    [["--stdio", "--log-level", "loud"], "debug, info, warn, error, silent"],
    [["--stdio", "--permission-mode", "root"], "read-only, workspace-write, full"],
    [["--stdio", "--session-root"], "--session-root"],
    // What Node makes of a root whose name is not valid UTF-8 (`$'/r/\xff'`): another folder's name.
    [["--stdio", "--session-root", "/r/\uFFFD"], "not valid UTF-8"],
    [["--stdio", "--session-root=/r/\uFFFD/s"], "--session-root"],
  ])("%j is a usage error naming %s", (args, named) => {
    expect(() => parseCommandLine(args)).toThrow(named);
  });
});

describe("helpText", () => {
  it("lists every option with its default, within 80 columns", () => {
    const help = helpText();
    for (const flag of ["--stdio", "--session-root <dir>", "--no-session-log", "--log-level <level>", "--max-steps <n>", "--permission-mode <mode>", "--max-line-bytes <n>", "--subagent-depth <n>", "--version", "--help"]) {
      expect(help).toContain(flag);
    }
    expect(help).toContain("(default: 50)");
    expect(Math.max(...help.split("\n").map((l) => l.length))).toBeLessThanOrEqual(80);
  });

  it("explains --permission-mode as a ceiling, and a session's own default", () => {
    const help = helpText().replace(/\s+/g, " ");
    expect(help).toContain("--permission-mode <mode> the ceiling: the widest permission mode initialize may ask for");
    expect(help).toContain("names none runs workspace-write");
    expect(help).toContain("(default: full, i.e. no ceiling)");
  });

  it("points to nothing a user of the bare binary lacks: no docs file, the first requests themselves", () => {
    const help = helpText();
    expect(help).not.toMatch(/docs\/|\.md\b|https?:/);
    expect(help.replace(/\s+/g, " ")).toContain('initialize {"cwd": ".", "provider": "scripted", "model": "demo"}');
  });
});

describe("parseOptions reads a command line as util.parseArgs does (strict, no positionals)", () => {
  // The bridge's kinds of options, and a short string option, which parseArgs also reads.
  const options: Record<string, ArgSpec> = {
    stdio: { type: "boolean" },
    "session-root": { type: "string" },
    "max-steps": { type: "string" },
    version: { type: "boolean", short: "V" },
    help: { type: "boolean", short: "h" },
    level: { type: "string", short: "l" },
  };
  /** What parseArgs answers: its values as a plain object, or its message. */
  const reference = (args: string[]) => {
    try {
      return { values: { ...parseArgs({ args, options, strict: true, allowPositionals: false }).values } };
    } catch (error) {
      return { error: (error as Error).message };
    }
  };
  const ours = (args: string[]) => {
    try {
      return { values: { ...parseOptions(args, options) } };
    } catch (error) {
      return { error: (error as Error).message };
    }
  };

  it.each([
    [[]],
    [["--stdio"]],
    [["--stdio", "--stdio"]],
    [["--stdio=1"]],
    [["--stdio="]],
    [["--bogus"]],
    [["--bogus=1"]],
    [["--stdio", "extra"]],
    [["extra", "--bogus"]],
    [["-"]],
    [[""]],
    [["--"]],
    [["--", "--stdio"]],
    [["--stdio", "--"]],
    [["--session-root"]],
    [["--session-root", "/r"]],
    [["--session-root=/r"]],
    [["--session-root="]],
    [["--session-root", ""]],
    [["--session-root", "-"]],
    [["--session-root", "-x"]],
    [["--session-root", "--stdio"]],
    [["--session-root=-x"]],
    [["--max-steps", "3", "--max-steps", "4"]],
    [["-h"]],
    [["-hV"]],
    [["-Vx"]],
    [["-V=1"]],
    [["-x"]],
    [["-l"]],
    [["-l", "debug"]],
    [["-l", "-x"]],
    [["-ldebug"]],
    [["-hldebug"]],
    [["-hl", "debug"]],
    [["-hl"]],
    [["--="]],
    [["--=x"]],
    [["---x"]],
    [["--__proto__"]],
    [["--constructor"]],
    [["-h", "--bogus"]],
  ])("%j", (args) => {
    expect(ours(args)).toEqual(reference(args));
  });

  it("gives the same answer for any sequence of such arguments", () => {
    const arg = fc.oneof(
      fc.constantFrom("--stdio", "--session-root", "--max-steps", "--version", "--help", "--level", "-V", "-h", "-l", "-hV", "-hl", "-lx", "-Vl", "-x", "--", "-", ""),
      fc.constantFrom("--stdio=", "--stdio=1", "--session-root=", "--session-root=/r", "--max-steps=-1", "--bogus", "--bogus=2", "--=", "--no-stdio", "3", "/r", "-1"),
      fc.string({ maxLength: 6 }),
    );
    fc.assert(
      fc.property(fc.array(arg, { maxLength: 6 }), (args) => {
        expect(ours(args)).toEqual(reference(args));
      }),
      { numRuns: 2000 },
    );
  });
});
