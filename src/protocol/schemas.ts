/**
 * Runtime validation of request params (zod). The static types in `types.ts` stay the single
 * definition of the wire; the `satisfies`-style checks below fail the build if the two drift.
 *
 * Why `zod/mini` through a namespace import: it is the same zod (same parser, same issues),
 * but its functions tree-shake, so the bundle carries only the parts used here, not the
 * classic API and every locale. That is start-up time: `initialize` validates its params, so
 * whatever zod costs to load is paid between spawn and the `initialize` response (figures:
 * bench/README.md, "Why the code does this").
 *
 * In the single executable this module, with zod, is a chunk of its own (scripts/build.mjs,
 * `schemas.cjs`), which server/params-schemas.ts evaluates once `initialize` has answered:
 * nothing before that response needs zod. Nothing in the main bundle may import it statically
 * (test/startup-imports.test.ts checks the bundle).
 *
 * @module
 */
import * as z from "zod/mini";
import type { JsonValue } from "./types.js";
import en from "zod/v4/locales/en.js";
import { cwdProblem, effortProblem, nameProblem, userProblem } from "./initialize-fast-path.js";
import { PERMISSION_MODES, THINKING_MODES, type InitializeParams, type PermissionMode, type SessionCancelParams, type SessionPromptParams, type ThinkingMode } from "./types.js";
import { MAX_MCP_SERVERS, MCP_SERVER_NAME } from "./mcp-types.js";
import { APPROVAL_POLICIES, type ApprovalPolicy, type SessionPermissionParams, type SessionToolResultParams } from "./types.js";
import { READ_LIMIT_MAX, SESSION_ID_PATTERN, type SessionDeleteParams, type SessionForkParams, type SessionListParams, type SessionReadParams } from "./sessions-types.js";
import type { SessionCompactParams } from "./compaction-types.js";
import type { SessionSteerParams } from "./turn-control-types.js";
import type { SessionRewindParams } from "./checkpoint-types.js";
import { HOOK_NAMES, type HookName, type SessionHookParams } from "./hooks-types.js";

// zod/mini ships no messages ("Invalid input" for everything); the English ones say what was
// expected and what came, which is what a client needs in a -32602.
z.config(en());

export { SESSION_ID_PATTERN };

const sessionId = z
  .string()
  .check(
    z.regex(SESSION_ID_PATTERN, "must match [A-Za-z0-9._:-]{1,128}"),
    z.refine((id) => id !== "." && id !== "..", "must not be '.' or '..'"),
  );

const positiveInt = z.int().check(z.positive());
/** A price in US dollars: finite and not negative (JSON has no NaN or Infinity; a huge number is refused too). */
const dollars = z.number().check(z.nonnegative(), z.lte(1e9));
const milliseconds = z.int().check(z.nonnegative());

/** Client tool names, as PROTOCOL.md "Client tools" fixes them. */
export const CLIENT_TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const jsonValue: z.ZodMiniType<JsonValue> = z.lazy(() =>
  z.union([z.null(), z.boolean(), z.number(), z.string(), z.array(jsonValue), z.record(z.string(), jsonValue)]),
);
const jsonObject = z.record(z.string(), jsonValue);
const textBlocks = z.array(z.object({ type: z.literal("text"), text: z.string() }));

/** A string refused with `problem`'s message when it returns one (NUL bytes, absurd lengths). */
const checked = (problem: (s: string) => string | undefined) =>
  z.string().check(
    z.minLength(1),
    z.superRefine((value, ctx) => {
      const why = problem(value);
      if (why) ctx.addIssue({ code: "custom", message: why, input: value });
    }),
  );

/** A setTimeout-sized positive delay (a longer one would fire at once). */
const timeoutMs = positiveInt.check(z.lte(2 ** 31 - 1));
const stringMap = z.record(z.string(), z.string());
const mcpTimeouts = { startupTimeoutMs: z.optional(timeoutMs), toolTimeoutMs: z.optional(timeoutMs) };
// Strict objects: a stdio config with a `url` (or the reverse) is a mistake worth naming.
const mcpStdioServer = z.strictObject({
  command: checked(cwdProblem),
  // A lone surrogate ("\udce9") would reach the server as U+FFFD: another argument or value than the one given.
  args: z.optional(z.array(z.string().check(z.refine((a) => !a.includes("\0") && a.isWellFormed(), "must not contain a NUL byte or a lone surrogate")))),
  env: z.optional(
    stringMap.check(
      z.refine(
        (env) => Object.entries(env).every(([k, v]) => /^[^=\0]+$/.test(k) && k.isWellFormed() && !v.includes("\0") && v.isWellFormed()),
        "names must be non-empty without '=', NUL or a lone surrogate, values without NUL or a lone surrogate",
      ),
    ),
  ),
  cwd: z.optional(checked(cwdProblem)),
  ...mcpTimeouts,
});
const mcpHttpServer = z.strictObject({
  url: z.string().check(z.refine((u) => URL.canParse(u) && /^https?:$/.test(new URL(u).protocol), "must be an http: or https: URL")),
  headers: z.optional(stringMap),
  ...mcpTimeouts,
});

export const initializeParamsSchema = z.object({
  cwd: checked(cwdProblem),
  provider: checked(nameProblem),
  model: checked(nameProblem),
  maxTokens: z.optional(positiveInt),
  maxSteps: z.optional(positiveInt),
  // The SDK's keyword too, as initialize.model's hint does (hints.ts): a Python user never sees the wire.
  permissionMode: z.optional(z.enum(PERMISSION_MODES as [PermissionMode, ...PermissionMode[]], {
    error: `must be one of ${PERMISSION_MODES.map((m) => `'${m}'`).join(", ")} (permission_mode= in the Python SDK)`,
  })),
  tools: z.optional(z.array(z.string().check(z.superRefine((value, ctx) => {
    const why = nameProblem(value);
    if (why) ctx.addIssue({ code: "custom", message: why, input: value });
  })))),
  instructions: z.optional(z.string()),
  protocolVersion: z.optional(z.literal(1, { error: "unsupported protocolVersion: this server speaks 1" })),
  thinking: z.optional(z.enum(THINKING_MODES as [ThinkingMode, ...ThinkingMode[]])),
  reasoningEffort: z.optional(checked(effortProblem)),
  user: z.optional(checked(userProblem)),
  toolChoice: z.optional(
    z.union([z.enum(["auto", "required", "none"]), z.strictObject({ name: checked(nameProblem) })]),
  ),
  firstTokenTimeoutMs: z.optional(milliseconds),
  modelRequestTimeoutMs: z.optional(milliseconds),
  // Client tools and approvals
  clientTools: z.optional(z.array(z.object({
    name: z.string().check(z.regex(CLIENT_TOOL_NAME, "must match [A-Za-z0-9_-]{1,64}")),
    description: z.string(),
    parameters: z.record(z.string(), jsonValue).check(z.refine((p) => p.type === "object", "must be a JSON Schema object (type: \"object\")")),
    readOnly: z.optional(z.boolean()),
  }))),
  // setTimeout's ceiling: a longer delay would fire at once.
  clientToolTimeoutMs: z.optional(positiveInt.check(z.lte(2 ** 31 - 1))),
  approvals: z.optional(z.enum(APPROVAL_POLICIES as [ApprovalPolicy, ...ApprovalPolicy[]])),
  // MCP servers
  mcpServers: z.optional(
    z.record(z.string().check(z.regex(MCP_SERVER_NAME, "must match [A-Za-z0-9-]{1,32}")), z.union([mcpStdioServer, mcpHttpServer])).check(
      z.refine((servers) => Object.keys(servers).length <= MAX_MCP_SERVERS, `at most ${MAX_MCP_SERVERS} servers`),
    ),
  ),
  // Compaction
  contextWindow: z.optional(positiveInt.check(z.gte(1024), z.lte(2 ** 31 - 1))),
  compactAt: z.optional(z.number().check(z.gt(0), z.lte(1))),
  // Turn control: the model's prices (turn-control-types.ts)
  prices: z.optional(z.strictObject({ inputPerMTok: dollars, cacheHitPerMTok: z.optional(dollars), outputPerMTok: dollars })),
  // Hooks: an unknown name is -32602 naming the field (a typo must not silently disable a hook).
  hooks: z.optional(z.array(z.enum(HOOK_NAMES as [HookName, ...HookName[]]))),
});

export const sessionPromptParamsSchema = z.object({
  sessionId,
  contentBlocks: z.array(z.object({ type: z.literal("text"), text: z.string() })).check(z.minLength(1)),
  outputSchema: z.optional(jsonObject),
  // A budget of 0 would allow no request at all: it must be positive. Not `dollars` (>= 0) plus
  // positive: a negative budget got both messages, ">=0; … >0", which disagree on 0.
  maxCostUsd: z.optional(z.number().check(z.positive({ error: "a budget must be more than 0 (US dollars)" }), z.lte(1e9))),
  traceparent: z.optional(z.string()),
});

export const sessionSteerParamsSchema = z.object({
  sessionId,
  contentBlocks: textBlocks.check(z.minLength(1)),
});

export const sessionCancelParamsSchema = z.object({ sessionId });

export const sessionCompactParamsSchema = z.object({ sessionId });

export const sessionToolResultParamsSchema = z.object({
  sessionId,
  callId: z.string(),
  content: textBlocks,
  isError: z.optional(z.boolean()),
});

export const sessionPermissionParamsSchema = z.object({
  sessionId,
  requestId: z.string(),
  decision: z.enum(["allow", "deny"]),
  message: z.optional(z.string()),
  arguments: z.optional(jsonObject),
});

// Strict: a misspelled answer field (`continu`) must be refused, not dropped as if the hook had
// answered `{}`. Which fields a given hook takes is checked against the waiting hook (agent/hooks.ts).
export const sessionHookParamsSchema = z.strictObject({
  sessionId,
  hookId: z.string(),
  // Non-empty: a block says why, and a continue says what to do next.
  block: z.optional(z.string().check(z.minLength(1))),
  context: z.optional(z.string()),
  content: z.optional(textBlocks),
  isError: z.optional(z.boolean()),
  continue: z.optional(z.string().check(z.minLength(1))),
});

// The sessions API (sessions-types.ts)
export const sessionListParamsSchema = z.object({});

export const sessionReadParamsSchema = z.object({
  sessionId,
  afterSeq: z.optional(z.int().check(z.nonnegative())),
  limit: z.optional(positiveInt.check(z.lte(READ_LIMIT_MAX))),
});

export const sessionForkParamsSchema = z.object({
  sessionId,
  newSessionId: sessionId,
  turn: z.optional(z.int().check(z.nonnegative())),
});

export const sessionDeleteParamsSchema = z.object({ sessionId });

// Checkpoints and rewind (checkpoint-types.ts)
export const sessionRewindParamsSchema = z.object({
  sessionId,
  turn: positiveInt,
  files: z.optional(z.boolean()),
  conversation: z.optional(z.boolean()),
  force: z.optional(z.boolean()),
});

// Compile-time agreement between the schemas and the documented wire types.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const agree: [
  Same<z.infer<typeof initializeParamsSchema>, InitializeParams>,
  Same<z.infer<typeof sessionPromptParamsSchema>, SessionPromptParams>,
  Same<z.infer<typeof sessionCancelParamsSchema>, SessionCancelParams>,
  Same<z.infer<typeof sessionToolResultParamsSchema>, SessionToolResultParams>,
  Same<z.infer<typeof sessionPermissionParamsSchema>, SessionPermissionParams>,
  Same<z.infer<typeof sessionListParamsSchema>, SessionListParams>,
  Same<z.infer<typeof sessionReadParamsSchema>, SessionReadParams>,
  Same<z.infer<typeof sessionForkParamsSchema>, SessionForkParams>,
  Same<z.infer<typeof sessionDeleteParamsSchema>, SessionDeleteParams>,
  Same<z.infer<typeof sessionCompactParamsSchema>, SessionCompactParams>,
  Same<z.infer<typeof sessionSteerParamsSchema>, SessionSteerParams>,
  Same<z.infer<typeof sessionRewindParamsSchema>, SessionRewindParams>,
  Same<z.infer<typeof sessionHookParamsSchema>, SessionHookParams>,
] = [true, true, true, true, true, true, true, true, true, true, true, true, true];
void agree;

/** Renders a zod failure as one line naming each offending field, e.g. `params.sessionId: …`. */
export function describeIssues(error: z.core.$ZodError): string {
  return error.issues
    .map((issue) => {
      const path = ["params", ...issue.path.map(String)].join(".");
      return `${path}: ${issue.message}`;
    })
    .join("; ");
}
