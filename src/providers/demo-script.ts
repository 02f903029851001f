/**
 * The built-in script behind `provider: "scripted", model: "demo"`: one turn that thinks,
 * reads a file of the workspace with a real tool, and answers — every kind of event a real
 * turn has, with no network and no key. The answer holds in any folder: it says what the tool
 * result shows, and a workspace without README.md gets an error result (the demo runs anywhere).
 * Its compaction step lets `session/compact` be tried on the demo too.
 */
import type { Script } from "./script-format.js";

export const DEMO_SCRIPT: Script = {
  turns: [
    {
      steps: [
        {
          reasoning: "The user wants to see the agent at work. Reading the workspace's README is a harmless first step.",
          text: "Let me look at the README of this workspace.",
          toolCalls: [{ name: "read_file", arguments: { path: "README.md", limit: 3 } }],
          chunkSize: 12,
        },
        {
          text:
            "The tool result above is what read_file found: the first lines of README.md, or an error when this workspace has none (a failed tool is a result like any other, and the turn goes on). " +
            "This turn ran on the offline `scripted` provider: a deterministic model built into harness-bridge that streams chunk by chunk like a real one. " +
            "Initialize with provider \"deepseek\" and set DEEPSEEK_API_KEY to talk to a real model.",
          chunkSize: 24,
        },
      ],
    },
  ],
  // Answers `session/compact` (and an automatic compaction) in the demo: a summary of the turn above.
  compaction: {
    steps: [
      {
        text: "Summary: the user asked about this workspace; the agent read the first lines of README.md with read_file (or got an error where there is none) and explained that the turn ran on the offline scripted provider.",
      },
    ],
  },
};
