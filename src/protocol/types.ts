/**
 * Wire types of the harness-bridge protocol, version 1 (see `docs/PROTOCOL.md`).
 *
 * This module is the single TypeScript definition of what crosses stdio. Every other
 * module imports these types; nothing redeclares them.
 *
 * @module
 */
import type { McpServerConfig, McpServerStatus } from "./mcp-types.js";
import type {
  ApprovalPolicy,
  ClientToolSpec,
  PermissionDecisionEventData,
  PermissionRequestEventData,
  ToolRequestEventData,
} from "./client-tools-types.js";
export * from "./client-tools-types.js";
import type { BlockedReason, HookDecisionEventData, HookName, HookRequestEventData } from "./hooks-types.js";
export * from "./hooks-types.js";

import type { ContextCompactedEventData } from "./compaction-types.js";
import type { CheckpointEventData, CheckpointSkippedEventData, SessionRewoundEventData } from "./checkpoint-types.js";
import type { JsonObject, JsonValue, RequestId, TextBlock } from "./json.js";
import type { OutputInvalidReason, OutputReminderEventData, TurnOutput } from "./output-types.js";
import type { BudgetReason, Prices, UserSteerEventData } from "./turn-control-types.js";
export type { JsonObject, JsonValue, RequestId, TextBlock } from "./json.js";

/** The protocol version this server speaks. */
export const PROTOCOL_VERSION = 1 as const;

// ---------------------------------------------------------------------------
// Content blocks (`TextBlock` is in json.ts, the leaf the other protocol files import)
// ---------------------------------------------------------------------------

/** The model's reasoning (DeepSeek's `reasoning_content`). Appears in assistant content only. */
export interface ReasoningBlock {
  type: "reasoning";
  text: string;
}

/** A tool call the model asked for. Appears in assistant content only. */
export interface ToolCallBlock {
  type: "tool-call";
  /** The call id, echoed by the matching `tool/result` as `callId`. */
  id: string;
  /** The tool's name. */
  name: string;
  /** The parsed arguments; `{}` when the model sent invalid JSON (see `rawArguments`). */
  arguments: JsonObject;
  /** Present only when the model's arguments were not a valid JSON object: what it sent. */
  rawArguments?: string;
  /**
   * The model's valid arguments exactly as it streamed them, present only when that text is not
   * `JSON.stringify(arguments)` (spaces, key order of duplicates, escapes). The next request
   * sends this text back, so the history's bytes stay what the model wrote (prefix caches keep
   * hitting). Whatever rewrites `arguments` must drop it.
   */
  argumentsText?: string;
}

/** Any block of assistant content. */
export type AssistantContentBlock = TextBlock | ReasoningBlock | ToolCallBlock;

/** Any content block. */
export type ContentBlock = AssistantContentBlock;

// ---------------------------------------------------------------------------
// Turn end reasons
// ---------------------------------------------------------------------------

/** Why a turn ended. Clients must map kinds they do not know to status `error`. */
export type TurnEndReason =
  | { kind: "completed" }
  | { kind: "aborted" }
  | { kind: "max-tokens" }
  | { kind: "max-steps"; limit: number }
  | { kind: "model-error"; message: string; httpStatus?: number; code?: string }
  | { kind: "internal-error"; message: string }
  | OutputInvalidReason
  | BudgetReason
  | BlockedReason;

/** The settled outcome of a turn. */
export type TurnStatus = "ok" | "error" | "aborted";

/** Maps a reason to the status a prompt answers with: completed → ok, aborted → aborted, else error. */
export function statusOf(reason: TurnEndReason): TurnStatus {
  if (reason.kind === "completed") return "ok";
  if (reason.kind === "aborted") return "aborted";
  return "error";
}

/** Token usage of one model request, or summed over a turn. */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  reasoningTokens?: number;
  /** Input tokens served from the provider's prompt cache (DeepSeek's `prompt_cache_hit_tokens`). */
  cacheHitTokens?: number;
  /** Input tokens not served from the prompt cache (DeepSeek's `prompt_cache_miss_tokens`); present when the provider reports them. */
  cacheMissTokens?: number;
  /**
   * What the request(s) cost in US dollars, when the model's prices are known (the built-in
   * table, agent/prices.ts, or `initialize.prices`); absent otherwise, never a guess.
   */
  costUsd?: number;
}

// ---------------------------------------------------------------------------
// Session events
// ---------------------------------------------------------------------------

/** A streamed piece of an assistant message (live only; never logged). */
export type AssistantChunk =
  | { type: "text-delta"; text: string }
  | { type: "reasoning-delta"; text: string }
  | { type: "tool-call-delta"; index: number; id?: string; name?: string; argumentsDelta: string };

/**
 * Why a model request stopped: `stop`, `tool-calls`, `length`, or `aborted` for a step cut short
 * by cancellation, `error` for one cut short by a model error. Other provider values pass through.
 */
export type FinishReason = "stop" | "tool-calls" | "length" | "aborted" | "error" | (string & {});

/** The data of each session event type. */
export interface SessionEventDataMap {
  "user/message": { id: string; content: TextBlock[] };
  /** `outputSchema`: the schema of a structured turn (`session/prompt.outputSchema`). */
  "turn/start": { turn: number; outputSchema?: JsonObject };
  "step/start": { turn: number; step: number };
  "assistant/chunk": { turn: number; step: number; chunk: AssistantChunk };
  "assistant/message": {
    id: string;
    turn: number;
    step: number;
    content: AssistantContentBlock[];
    finishReason: FinishReason;
    usage?: Usage;
  };
  "tool/result": { callId: string; name: string; content: TextBlock[]; isError: boolean; durationMs: number };
  /** `output`: a structured turn's valid answer, with reason `completed`. */
  "turn/end": { turn: number; reason: TurnEndReason; usage?: Usage; output?: TurnOutput };
  // Client tools and approvals (see "Client tools and approvals" below).
  "tool/request": ToolRequestEventData;
  "permission/request": PermissionRequestEventData;
  "permission/decision": PermissionDecisionEventData;
  // Structured output (output-types.ts) and compaction (compaction-types.ts).
  "output/reminder": OutputReminderEventData;
  "context/compacted": ContextCompactedEventData;
  // Turn control (turn-control-types.ts)
  "user/steer": UserSteerEventData;
  // Checkpoints and rewind (checkpoint-types.ts).
  checkpoint: CheckpointEventData;
  "checkpoint/skipped": CheckpointSkippedEventData;
  "session/rewound": SessionRewoundEventData;
  // Hooks (hooks-types.ts)
  "hook/request": HookRequestEventData;
  "hook/decision": HookDecisionEventData;
}

/** The session event type names. */
export type SessionEventType = keyof SessionEventDataMap;

/** Event types that are streamed but never written to the durable log. */
export const LIVE_ONLY_EVENT_TYPES: ReadonlySet<SessionEventType> = new Set(["assistant/chunk"]);

/** One session event, as carried by a `session.event` notification and (unless live-only) the log. */
export type SessionEvent = {
  [T in SessionEventType]: {
    type: T;
    /** Strictly increasing within a session, live-only events included. */
    seq: number;
    /** Epoch milliseconds. */
    time: number;
    data: SessionEventDataMap[T];
  };
}[SessionEventType];

/** A session event of one given type. */
export type SessionEventOf<T extends SessionEventType> = Extract<SessionEvent, { type: T }>;

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

/** How far the agent may reach: writing tools and bash are not offered in `read-only`. */
export type PermissionMode = "read-only" | "workspace-write" | "full";
/** Every permission mode, narrowest first: the order `--permission-mode` narrows by. */
export const PERMISSION_MODES: readonly PermissionMode[] = ["read-only", "workspace-write", "full"];

/** `initialize.thinking`: DeepSeek's thinking-mode switch; other routes pass it on in DeepSeek's shape. */
export type ThinkingMode = "enabled" | "disabled";
/** Every thinking mode. */
export const THINKING_MODES: readonly ThinkingMode[] = ["enabled", "disabled"];

/**
 * `initialize.toolChoice`: which tool the model must call — any or none (`auto`), at least one
 * (`required`), none (`none`), or the one named. `required` and a named tool apply to the first
 * model request of each turn only (forcing a call on every step would never let a turn end).
 */
export type ToolChoice = "auto" | "required" | "none" | { name: string };

/** Params of `initialize`. */
export interface InitializeParams {
  /** The workspace of every session; resolved to an absolute path. */
  cwd: string;
  /** A registered provider name, e.g. `deepseek`, `openai`, `scripted`. */
  provider: string;
  /** The model name (for `scripted`: `demo` or a script file path). */
  model: string;
  /** Output token limit per model request. */
  maxTokens?: number;
  /** Model requests per turn before the turn ends with `max-steps` (default 50). */
  maxSteps?: number;
  /** Default `workspace-write`; a CLI ceiling can only be narrowed. */
  permissionMode?: PermissionMode;
  /** Allow-list of built-in tool names (default: all). */
  tools?: string[];
  /** Appended to the built-in system prompt. */
  instructions?: string;
  /** Must be 1 when given. */
  protocolVersion?: 1;
  /** Thinking mode on or off (DeepSeek: on by default); absent: the server's default. */
  thinking?: ThinkingMode;
  /** How hard the model reasons (DeepSeek: `low`, `high`, `max`; other routes pass any value on as `reasoning_effort`). */
  reasoningEffort?: string;
  /** The end user's id, passed to the provider (DeepSeek `user_id`: cache and scheduling isolation; OpenAI `user`); at most 512 UTF-8 bytes. */
  user?: string;
  /** Sent as `tool_choice` (see {@link ToolChoice}); absent: not sent (the server's default, `auto`). */
  toolChoice?: ToolChoice;
  /** Longest wait per attempt for the model's first output, keep-alives not counting; default 600000, 0: none. */
  firstTokenTimeoutMs?: number;
  /** Longest one model request may take, retries included; default 3600000, 0: none. */
  modelRequestTimeoutMs?: number;
  // Client tools and approvals
  /** Tools the client runs, offered beside the built-ins. */
  clientTools?: ClientToolSpec[];
  /** How long a client tool call or an approval waits for the client's answer (default 600 000 ms). */
  clientToolTimeoutMs?: number;
  /** Default `never`. */
  approvals?: ApprovalPolicy;
  // Compaction
  /** The model's context window in tokens; default: the provider's table (DeepSeek's models), else 128 000. */
  contextWindow?: number;
  /** Compact before a request's prompt would pass this fraction of `contextWindow` (default 0.8). */
  compactAt?: number;
  /** MCP servers whose tools are offered as `mcp__<server>__<tool>` (mcp-types.ts). */
  mcpServers?: Record<string, McpServerConfig>;
  /** Prices of the model, replacing the built-in table (turn-control-types.ts). */
  prices?: Prices;
  /** The hook points at which turns wait for `session/hook` (hooks-types.ts); absent or empty: none. */
  hooks?: HookName[];
}

/** Result of `initialize`. */
export interface InitializeResult {
  /**
   * `runtime`: the Node.js version the bridge runs on (the pinned one the binary embeds, e.g.
   * "24.22.3") and the build's target platform and architecture.
   */
  serverInfo: { name: "harness-bridge"; version: string; runtime: { node: string; platform: string; arch: string } };
  protocolVersion: 1;
  /** Every registered provider name. */
  providers: string[];
  /**
   * What confines `bash` in this process: `bubblewrap`; `landlock` (the in-kernel Landlock +
   * seccomp confinement, used where bubblewrap is absent or cannot run, with the kernel's
   * `landlockAbi`); or `none` with the reason (`full` and `read-only` modes, bash not offered,
   * or no working sandbox — then bash fails closed in `workspace-write`).
   */
  sandbox: { bash: "bubblewrap" | "landlock" | "none"; reason?: string; landlockAbi?: number };
  /** Present when `initialize.mcpServers` was given: each server's outcome. */
  mcpServers?: McpServerStatus[];
}

/** Params of `session/prompt`. */
export interface SessionPromptParams {
  /** Matches `[A-Za-z0-9._:-]{1,128}`, not `.` or `..`. Unknown ids create (or resume) a session. */
  sessionId: string;
  /** At least one block. */
  contentBlocks: TextBlock[];
  /** A JSON Schema: the turn's answer is a value valid against it, carried as `turn/end.output`. */
  outputSchema?: JsonObject;
  /** Once the turn's cost reached this many US dollars, no further model request starts (reason `budget`). */
  maxCostUsd?: number;
  /**
   * W3C Trace Context: with tracing on, the turn's span is this span's child. One that does not
   * parse is ignored (the turn starts a trace of its own), as the W3C spec asks of a receiver.
   */
  traceparent?: string;
}

/** Result of `session/prompt`: exactly these two fields, written after the turn settled. */
export interface SessionPromptResult {
  status: TurnStatus;
  reason: TurnEndReason;
}

/** Params of `session/cancel`. */
export interface SessionCancelParams {
  sessionId: string;
}

/** Result of `session/cancel`: `true` when a turn was in flight (and has now settled aborted). */
export interface SessionCancelResult {
  cancelled: boolean;
}

/** Result of `shutdown`. */
export type ShutdownResult = Record<string, never>;


// ---------------------------------------------------------------------------
// Notifications
// ---------------------------------------------------------------------------

/** Params of `session.event`. */
export interface SessionEventNotification {
  sessionId: string;
  event: SessionEvent;
}

/** Params of `subagent.started`. */
export interface SubagentStartedNotification {
  parentSessionId: string;
  childSessionId: string;
}

/** Params of `subagent.finished`. */
export interface SubagentFinishedNotification {
  provider: string;
  /** The child session id. */
  agentId: string;
  parentSessionId: string;
  childSessionId: string;
  status: TurnStatus;
  stopReason: TurnEndReason;
  /** The content blocks of the child's last assistant message, when it has one. */
  lastAssistantMessage?: AssistantContentBlock[];
}

/** Notification method name → params. */
export interface NotificationMap {
  "session.event": SessionEventNotification;
  "subagent.started": SubagentStartedNotification;
  "subagent.finished": SubagentFinishedNotification;
}

/** The notification method names. */
export type NotificationMethod = keyof NotificationMap;

// ---------------------------------------------------------------------------
// Frames
// ---------------------------------------------------------------------------

/** A JSON-RPC error object. */
export interface JsonRpcErrorObject {
  code: number;
  message: string;
  /** Machine-readable detail, e.g. `{ kind: "session-busy" }`. */
  data?: { kind: string; [key: string]: JsonValue };
}

/** A response frame the server writes. */
export type ResponseFrame =
  | { jsonrpc: "2.0"; id: RequestId; result: unknown }
  | { jsonrpc: "2.0"; id: RequestId | null; error: JsonRpcErrorObject };

/** A notification frame the server writes. */
export interface NotificationFrame<M extends NotificationMethod = NotificationMethod> {
  jsonrpc: "2.0";
  method: M;
  params: NotificationMap[M];
}
