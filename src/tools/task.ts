/**
 * `task {prompt, description?}`: delegates a piece of work to a subagent — an in-process child
 * session with the same provider, model and workspace — and returns its final text.
 */
import { ToolError, type Tool } from "./types.js";

export const taskTool: Tool = {
  name: "task",
  readOnly: false,
  description:
    "Delegate a self-contained piece of work to a subagent that runs in its own session with the same tools " +
    "(except task) and workspace. Returns the subagent's final answer. Give it a complete, precise prompt.",
  parameters: {
    type: "object",
    properties: {
      prompt: { type: "string", description: "The full instructions for the subagent" },
      description: { type: "string", description: "A short (3-5 word) label for the work" },
    },
    required: ["prompt"],
    additionalProperties: false,
  },
  async execute(args, ctx) {
    if (typeof args.prompt !== "string" || args.prompt.trim() === "") throw new ToolError("prompt is required and must be a non-empty string");
    if (args.description !== undefined && typeof args.description !== "string") throw new ToolError("description must be a string");
    if (!ctx.subagents) throw new ToolError("subagents cannot start further subagents (the depth limit is reached)");
    return ctx.subagents.spawn({ prompt: args.prompt, description: args.description as string | undefined }, ctx.signal);
  },
};
