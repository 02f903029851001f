/**
 * Every object of the scripted model's script is strict: a key the format does not know is an
 * error naming the key, where it is and the keys that object takes. The script is the user's
 * own test; a typo (`toolcalls`, `txt`) used to be dropped in silence, and the test then passed
 * while testing nothing.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { DEMO_SCRIPT } from "../../src/providers/demo-script.js";
import { parseScript } from "../../src/providers/scripted.js";
import { ProviderUnavailableError } from "../../src/providers/types.js";

const parse = (script: unknown) => () => parseScript(script, "'s.json'");

describe("an unknown key in a script", () => {
  it.each([
    ["a step (case)", { steps: [{ text: "hi", toolcalls: [{ name: "read_file" }] }] }, `turns[0].steps[0] has an unknown key "toolcalls" (did you mean 'toolCalls'?); the keys of a step are reasoning, text, toolCalls,`],
    ["a step (typo)", { steps: [{ txt: "hi" }] }, `turns[0].steps[0] has an unknown key "txt" (did you mean 'text'?)`],
    ["a later turn's step", { turns: [{ steps: [{ text: "a" }] }, { steps: [{ text: "b" }, { text: "c", chunksize: 2 }] }] }, `turns[1].steps[1] has an unknown key "chunksize" (did you mean 'chunkSize'?)`],
    ["a tool call", { steps: [{ toolCalls: [{ name: "a" }, { name: "read_file", args: { path: "x" } }] }] }, `turns[0].steps[0].toolCalls[1] has an unknown key "args"; the keys of a tool call are id, name, arguments, rawArguments`],
    ["a turn", { turns: [{ steps: [{ text: "a" }], step: [] }] }, `turns[0] has an unknown key "step" (did you mean 'steps'?); the keys of a turn are steps`],
    ["the script", { Turns: [{ steps: [{ text: "a" }] }] }, `the script has an unknown key "Turns" (did you mean 'turns'?); the keys of the script are turns, steps, subagent, compaction`],
    ["the script (a field of another level)", { steps: [{ text: "a" }], text: "b" }, `the script has an unknown key "text"`],
    ["subagent", { steps: [{ text: "a" }], subagent: { step: [{ text: "b" }] } }, `subagent has an unknown key "step" (did you mean 'steps'?); the keys of subagent are turns, steps`],
    ["a subagent's step", { steps: [{ text: "a" }], subagent: { turns: [{ steps: [{ tex: "b" }] }] } }, `subagent.turns[0].steps[0] has an unknown key "tex" (did you mean 'text'?)`],
    ["compaction", { steps: [{ text: "a" }], compaction: { text: "summary" } }, `compaction has an unknown key "text"; the keys of compaction are steps`],
    ["a compaction step", { steps: [{ text: "a" }], compaction: { steps: [{ texts: "summary" }] } }, `compaction.steps[0] has an unknown key "texts" (did you mean 'text'?)`],
    ["a step's error", { steps: [{ error: { message: "x", status: 500 } }] }, `turns[0].steps[0].error has an unknown key "status"; the keys of a step's error are message, httpStatus, code`],
    ["a step's usage", { steps: [{ usage: { inputTokens: 1, outputtokens: 2 } }] }, `turns[0].steps[0].usage has an unknown key "outputtokens" (did you mean 'outputTokens'?)`],
  ])("in %s is an error naming it, where it is and the known keys", (_, script, message) => {
    expect(parse(script)).toThrow(ProviderUnavailableError);
    expect(parse(script)).toThrow(`scripted model 's.json': ${message}`);
  });

  it("a script with both 'turns' and 'steps' is refused (one of them would be ignored)", () => {
    expect(parse({ turns: [{ steps: [{ text: "a" }] }], steps: [{ text: "b" }] })).toThrow("the script has both 'turns' and 'steps'");
  });

  it("every known key loads", () => {
    const step = {
      reasoning: "r", text: "t", finishReason: "stop", chunkSize: 2, repeat: 1, delayMs: 0, hang: false,
      toolCalls: [{ id: "c", name: "read_file", arguments: { path: "a" } }, { name: "read_file", rawArguments: "{" }],
      error: { message: "m", httpStatus: 500, code: "c" },
      usage: { inputTokens: 1, outputTokens: 2, reasoningTokens: 0, cacheHitTokens: 0, cacheMissTokens: 1, costUsd: 0 },
    };
    expect(() => parseScript({ turns: [{ steps: [step] }], subagent: { steps: [step] }, compaction: { steps: [step] } }, "x")).not.toThrow();
    expect(() => parseScript({ steps: [step], subagent: { turns: [{ steps: [step] }] } }, "x")).not.toThrow();
  });
});

describe("the scripts the repository ships still load", () => {
  it("the built-in demo script", () => {
    expect(() => parseScript(DEMO_SCRIPT, "demo")).not.toThrow();
  });

  const root = path.resolve(import.meta.dirname, "..", "..", "snapshots", "scripted");
  // A scenario without a `script` runs the demo (tested above).
  const scripted = fs.readdirSync(root).filter((d) => fs.existsSync(path.join(root, d, "scenario.json")) && JSON.parse(fs.readFileSync(path.join(root, d, "scenario.json"), "utf8")).script);
  it.each(scripted)("the snapshot scenario %s", (name) => {
    const scenario = JSON.parse(fs.readFileSync(path.join(root, name, "scenario.json"), "utf8"));
    expect(() => parseScript(scenario.script, name)).not.toThrow();
  });
});
