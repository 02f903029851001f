/**
 * The built-in system prompt, with the user's `instructions` appended.
 */
import type { PermissionMode } from "../protocol/index.js";

export function buildSystemPrompt(workspace: string, mode: PermissionMode, instructions?: string): string {
  const lines = [
    "You are a coding agent working in a software project on the user's machine.",
    `The workspace is ${workspace}; relative paths resolve against it.`,
    mode === "read-only"
      ? "You are in read-only mode: you can read and search files but not change them or run commands."
      : "Use the tools to read, search, edit and run what you need; prefer small, verifiable steps.",
    "When the work is done, answer with a short summary of what you did and found.",
  ];
  if (instructions && instructions.trim() !== "") lines.push("", instructions.trim());
  return lines.join("\n");
}
