/**
 * A zod-free check of `initialize` params, for the common case only.
 *
 * Why: `initialize` is on the start-up path (spawn → `initialize` response, measured by
 * bench/run.py), and plainly valid params must not load zod or build its schemas there (what
 * that costs: bench/README.md, "Why the code does this"). This check accepts only params that are plainly
 * valid and returns them; for anything else it returns `undefined` and the caller validates
 * with `initializeParamsSchema` (zod), which stays the definition of what is valid and the
 * author of every error message. So the check may be stricter than the schema, never looser:
 * test/protocol/initialize-fast-path.test.ts checks, over arbitrary inputs, that whatever it
 * accepts the schema accepts too, with the same result.
 *
 * @module
 */
import { PERMISSION_MODES, type InitializeParams, type PermissionMode } from "./types.js";

const nonEmptyString = (v: unknown): v is string => typeof v === "string" && v.length > 0;

/** Longest accepted `cwd` (Linux PATH_MAX) and path component (NAME_MAX), in UTF-8 bytes. */
export const MAX_CWD_BYTES = 4096;
export const MAX_CWD_COMPONENT_BYTES = 255;
/** Longest accepted `provider`, `model` and tool name, in characters. */
export const MAX_NAME_LENGTH = 256;

/**
 * Why `cwd` can never name a directory, or `undefined`: a NUL byte (the OS cannot take it) or
 * a length the OS refuses (ENAMETOOLONG). Shared with the zod schema so both agree.
 */
export function cwdProblem(cwd: string): string | undefined {
  if (cwd.includes("\0")) return "must not contain a NUL byte";
  if (Buffer.byteLength(cwd) > MAX_CWD_BYTES) return `must be at most ${MAX_CWD_BYTES} bytes long`;
  if (cwd.split("/").some((part) => Buffer.byteLength(part) > MAX_CWD_COMPONENT_BYTES)) {
    return `must not have a path component longer than ${MAX_CWD_COMPONENT_BYTES} bytes`;
  }
  return undefined;
}

/** Why a name (`provider`, `model`, a tool name) is unusable, or `undefined`. */
export function nameProblem(name: string): string | undefined {
  if (name.includes("\0")) return "must not contain a NUL byte";
  if (name.length > MAX_NAME_LENGTH) return `must be at most ${MAX_NAME_LENGTH} characters long`;
  return undefined;
}
/** Longest accepted `user`, in UTF-8 bytes (DeepSeek's limit for `user_id`). */
export const MAX_USER_BYTES = 512;
/** Longest accepted `reasoningEffort`, in characters. */
export const MAX_EFFORT_LENGTH = 32;

/** Why a `user` id is unusable, or `undefined`. */
export function userProblem(user: string): string | undefined {
  if (Buffer.byteLength(user) > MAX_USER_BYTES) return `must be at most ${MAX_USER_BYTES} bytes long (UTF-8)`;
  if (/[\u0000-\u001f\u007f]/.test(user)) return "must not contain control characters";
  return undefined;
}

/** Why a `reasoningEffort` is unusable anywhere, or `undefined` (a route may restrict it further). */
export function effortProblem(effort: string): string | undefined {
  if (effort.length > MAX_EFFORT_LENGTH) return `must be at most ${MAX_EFFORT_LENGTH} characters long`;
  if (!/^[A-Za-z0-9_-]+$/.test(effort)) return "must be a word ([A-Za-z0-9_-])";
  return undefined;
}

const positiveSafeInt = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) > 0;

/** `params` as `InitializeParams` when they are plainly valid; `undefined`: ask the schema. */
export function plainInitializeParams(params: Record<string, unknown>): InitializeParams | undefined {
  const { cwd, provider, model, maxTokens, maxSteps, permissionMode, tools, instructions, protocolVersion, thinking, reasoningEffort, user } = params;
  if (!nonEmptyString(cwd) || !nonEmptyString(provider) || !nonEmptyString(model)) return undefined;
  if (cwdProblem(cwd) || nameProblem(provider) || nameProblem(model)) return undefined;
  if (maxTokens !== undefined && !positiveSafeInt(maxTokens)) return undefined;
  if (maxSteps !== undefined && !positiveSafeInt(maxSteps)) return undefined;
  if (permissionMode !== undefined && !(PERMISSION_MODES as readonly unknown[]).includes(permissionMode)) return undefined;
  if (tools !== undefined && !(Array.isArray(tools) && tools.every((t) => typeof t === "string" && !nameProblem(t)))) return undefined;
  if (instructions !== undefined && typeof instructions !== "string") return undefined;
  if (protocolVersion !== undefined && protocolVersion !== 1) return undefined;
  if (thinking !== undefined && thinking !== "enabled" && thinking !== "disabled") return undefined;
  if (reasoningEffort !== undefined && !(nonEmptyString(reasoningEffort) && !effortProblem(reasoningEffort))) return undefined;
  if (user !== undefined && !(nonEmptyString(user) && !userProblem(user))) return undefined;
  // Rarer settings take the schema's path.
  if (params.toolChoice !== undefined || params.firstTokenTimeoutMs !== undefined || params.modelRequestTimeoutMs !== undefined) return undefined;
  // Client tools and approvals are for the schema to check.
  if (params.clientTools !== undefined || params.clientToolTimeoutMs !== undefined || params.approvals !== undefined) return undefined;
  // So are MCP servers.
  if (params.mcpServers !== undefined) return undefined;
  // Compaction settings too.
  if (params.contextWindow !== undefined || params.compactAt !== undefined) return undefined;
  // And prices (turn control).
  if (params.prices !== undefined) return undefined;
  // And hooks.
  if (params.hooks !== undefined) return undefined;
  // A fresh object of the known fields, like zod's output (which strips unknown keys).
  const result: InitializeParams = { cwd, provider, model };
  if (maxTokens !== undefined) result.maxTokens = maxTokens;
  if (maxSteps !== undefined) result.maxSteps = maxSteps;
  if (permissionMode !== undefined) result.permissionMode = permissionMode as PermissionMode;
  if (tools !== undefined) result.tools = [...(tools as string[])];
  if (instructions !== undefined) result.instructions = instructions;
  if (protocolVersion !== undefined) result.protocolVersion = 1;
  if (thinking !== undefined) result.thinking = thinking;
  if (reasoningEffort !== undefined) result.reasoningEffort = reasoningEffort;
  if (user !== undefined) result.user = user;
  return result;
}
