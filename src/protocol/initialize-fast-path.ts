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
import { PERMISSION_MODES, THINKING_MODES, type InitializeParams } from "./types.js";

const nonEmptyString = (v: unknown): v is string => typeof v === "string" && v.length > 0;

/** Longest accepted `cwd` (Linux PATH_MAX) and path component (NAME_MAX), in UTF-8 bytes. */
export const MAX_CWD_BYTES = 4096;
export const MAX_CWD_COMPONENT_BYTES = 255;
/** Longest accepted `provider`, `model` and tool name, in characters. */
export const MAX_NAME_LENGTH = 256;

/**
 * Why `cwd` can never name a directory, or `undefined`: a NUL byte (the OS cannot take it), a
 * lone surrogate (no file name has one), or a length the OS refuses (ENAMETOOLONG). Shared with
 * the zod schema so both agree.
 */
export function cwdProblem(cwd: string): string | undefined {
  if (cwd.includes("\0")) return "must not contain a NUL byte";
  // JSON can carry a lone surrogate ("\udce9"), which no file name has: the OS would be handed
  // U+FFFD in its place, and the bridge would work in (or start) another folder than the one named.
  if (!cwd.isWellFormed()) return "must be well-formed Unicode (it holds a lone surrogate: a path that is not valid UTF-8 cannot be named in JSON)";
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

/**
 * How the fast path takes one field: `check` says whether a value is plainly valid (`required`:
 * the params are not plain without it); `"schema"`: any value of the field sends the params to
 * the schema.
 */
type FieldRule = { required?: true; check: (value: unknown) => boolean } | "schema";

/**
 * Every `initialize` field, in the schema's order, and how the fast path takes it. The keys are
 * exactly those of `InitializeParams` (`satisfies` fails the build otherwise, and schemas.ts
 * holds the zod schema to that same type), so a new option cannot be passed over here: it gets a
 * check, or goes to the schema. test/protocol/initialize-fast-path.test.ts compares these keys
 * with the schema's and fuzzes every one of them.
 */
export const INITIALIZE_FIELD_RULES = {
  cwd: { required: true, check: (v) => nonEmptyString(v) && !cwdProblem(v) },
  provider: { required: true, check: (v) => nonEmptyString(v) && !nameProblem(v) },
  model: { required: true, check: (v) => nonEmptyString(v) && !nameProblem(v) },
  maxTokens: { check: positiveSafeInt },
  maxSteps: { check: positiveSafeInt },
  permissionMode: { check: (v) => (PERMISSION_MODES as readonly unknown[]).includes(v) },
  tools: { check: (v) => Array.isArray(v) && v.every((t) => typeof t === "string" && !nameProblem(t)) },
  instructions: { check: (v) => typeof v === "string" },
  protocolVersion: { check: (v) => v === 1 },
  thinking: { check: (v) => (THINKING_MODES as readonly unknown[]).includes(v) },
  reasoningEffort: { check: (v) => nonEmptyString(v) && !effortProblem(v) },
  user: { check: (v) => nonEmptyString(v) && !userProblem(v) },
  // Rarer settings, and every addition's (client tools and approvals, MCP servers, compaction,
  // prices, hooks), take the schema's path.
  toolChoice: "schema",
  firstTokenTimeoutMs: "schema",
  modelRequestTimeoutMs: "schema",
  clientTools: "schema",
  clientToolTimeoutMs: "schema",
  approvals: "schema",
  mcpServers: "schema",
  contextWindow: "schema",
  compactAt: "schema",
  prices: "schema",
  hooks: "schema",
} satisfies Record<keyof InitializeParams, FieldRule>;

const FIELD_RULES = Object.entries(INITIALIZE_FIELD_RULES) as [keyof InitializeParams, FieldRule][];

/** `params` as `InitializeParams` when they are plainly valid; `undefined`: ask the schema. */
export function plainInitializeParams(params: Record<string, unknown>): InitializeParams | undefined {
  // A fresh object of the known fields, like zod's output (which strips unknown keys).
  const result: Record<string, unknown> = {};
  for (const [name, rule] of FIELD_RULES) {
    const value = params[name];
    if (value === undefined) {
      if (rule !== "schema" && rule.required) return undefined;
      continue;
    }
    if (rule === "schema" || !rule.check(value)) return undefined;
    result[name] = Array.isArray(value) ? [...value] : value;
  }
  return result as unknown as InitializeParams;
}
