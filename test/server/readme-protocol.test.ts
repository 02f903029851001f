/**
 * The README's "protocol in brief" is what a new user copies first, so it is checked against
 * the binary: its `→` requests are sent exactly as written (in a workspace of their own, since
 * `cwd` is "."), and each `←` response line must match what the bridge answers. In a README
 * line `…` stands for any value; every other value, and the set of keys of every object, must
 * be the bridge's own, so a field the bridge adds (or drops) fails here until the README says
 * it. The command-line synopsis must name every option `--help` lists.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { spawnSync } from "node:child_process";
import { afterEach, beforeEach, expect, it } from "vitest";
import { BINARY, RawClient, ROOT } from "../support/raw-client.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";

const README = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
const ANY = "@@any value@@";

/** The fenced block of the "protocol in brief" section: its `→` and `←` lines. */
function protocolBlock(): { requests: string[]; responses: string[] } {
  const section = README.slice(README.indexOf("## The protocol in brief"));
  const block = /```\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
  const lines = block.split("\n");
  const requests = lines.filter((l) => l.startsWith("→ ")).map((l) => l.slice(2));
  // Responses only: notifications (`"method":`) are elided with `…` inside objects.
  const responses = lines.filter((l) => l.startsWith("← {") && !l.includes('"method"')).map((l) => l.slice(2));
  return { requests, responses };
}

/** A README response line as a value, `…` (alone or as `[…]`) read as "any value". */
function pattern(line: string): unknown {
  return JSON.parse(line.replaceAll("[…]", `"${ANY}"`).replaceAll("…", `"${ANY}"`));
}

/** Where `actual` differs from the README's `expected`, as a path; undefined when it matches. */
function mismatch(expected: unknown, actual: unknown, at = "$"): string | undefined {
  if (expected === ANY) return undefined;
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) return `${at}: README ${JSON.stringify(expected)}, bridge ${JSON.stringify(actual)}`;
    for (let i = 0; i < expected.length; i++) {
      const m = mismatch(expected[i], actual[i], `${at}[${i}]`);
      if (m) return m;
    }
    return undefined;
  }
  if (expected !== null && typeof expected === "object") {
    if (actual === null || typeof actual !== "object" || Array.isArray(actual)) return `${at}: README an object, bridge ${JSON.stringify(actual)}`;
    const want = Object.keys(expected).sort();
    const got = Object.keys(actual).sort();
    if (want.join() !== got.join()) return `${at}: README keys [${want}], bridge keys [${got}]`;
    for (const key of want) {
      const m = mismatch((expected as Record<string, unknown>)[key], (actual as Record<string, unknown>)[key], `${at}.${key}`);
      if (m) return m;
    }
    return undefined;
  }
  return expected === actual ? undefined : `${at}: README ${JSON.stringify(expected)}, bridge ${JSON.stringify(actual)}`;
}

let ws: TempWorkspace;
let client: RawClient | undefined;

beforeEach(() => {
  ws = tempWorkspace("hb-readme-");
  ws.file("README.md", "# hello\n");
});

afterEach(async () => {
  await client?.dispose();
  ws.cleanup();
});

it("the matcher reads `…` as any value and insists on every key and every other value", () => {
  expect(mismatch(pattern('{"a":[…],"b":{"c":…}}'), { a: [1, 2], b: { c: "x" } })).toBeUndefined();
  expect(mismatch(pattern('{"a":1}'), { a: 1, extra: true })).toMatch(/keys/);
  expect(mismatch(pattern('{"a":1,"b":2}'), { a: 1 })).toMatch(/keys/);
  expect(mismatch(pattern('{"a":{"b":"x"}}'), { a: { b: "y" } })).toMatch(/\$\.a\.b/);
});

it("the README's requests, sent as written, get the README's responses", async () => {
  const { requests, responses } = protocolBlock();
  expect(requests.map((r) => JSON.parse(r).method)).toEqual(["initialize", "session/prompt", "shutdown"]);
  expect(responses).toHaveLength(3);
  // Landlock: the README shows what a machine without bubblewrap reports (its ABI varies).
  client = new RawClient({ cwd: ws.dir, env: { ...process.env, HARNESS_BWRAP: "off" } });
  const c = client;
  for (const request of requests) {
    const id = JSON.parse(request).id;
    c.send(request);
    await c.response(id, 30_000);
  }
  for (const line of responses) {
    const expected = pattern(line) as { id: number };
    const actual = c.frames.find((f) => f.id === expected.id);
    expect(mismatch(expected, actual), line).toBeUndefined();
  }
  expect((await c.exited).code).toBe(0);
}, 60_000);

it("the README's command-line synopsis names every option --help lists", () => {
  const help = spawnSync(BINARY, ["--help"], { encoding: "utf8" });
  const listed = [...`${help.stdout}${help.stderr}`.matchAll(/^\s+(?:-\w, )?(--[a-z][a-z-]*)/gm)].map((m) => m[1]).filter((o) => o !== "--help");
  expect(listed).toContain("--secrets-fd");
  // The paragraph that starts "Command line:", up to the blank line after it.
  const synopsis = /\nCommand line: (`harness-bridge [\s\S]*?)\n\n/.exec(README)?.[1] ?? "";
  expect(synopsis).toMatch(/^`harness-bridge --stdio /);
  for (const option of listed) expect(synopsis, option).toContain(option);
});
