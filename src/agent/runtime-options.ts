/**
 * What an `AgentRuntime` is built with (runtime.ts): where its notifications go, and its
 * settings — provider, tools, store, client waits, MCP, compaction, the bound on running turns.
 */
import type { ApprovalPolicy, HookName, PermissionMode, Prices, SessionEvent, SubagentFinishedNotification, SubagentStartedNotification } from "../protocol/index.js";
import type { ModelProvider } from "../providers/types.js";
import type { Tool } from "../tools/types.js";
import type { Logger } from "../log.js";
import type { Redactor } from "../redact.js";
import type { SessionStore } from "./store/index.js";
import type { OutputContract } from "./final-answer.js";

/** What a prompt asks of its turn beyond its content (`session/prompt`'s other params). */
export interface TurnRequest {
  /** A structured turn's compiled `outputSchema` (final-answer.ts). */
  output?: OutputContract;
  /** `session/prompt.maxCostUsd` (cost.ts). */
  maxCostUsd?: number;
  /** `session/prompt.traceparent`: the turn's span is its child (turn-trace.ts). */
  traceparent?: string;
  /** A subagent's turn: the budget of the turn that started it, which its requests spend too (cost.ts). */
  budget?: TurnBudget;
}

import type { Tracer } from "./turn-trace.js";
import type { TurnBudget } from "./cost.js";

/** Where the runtime's notifications go; each resolves when the client has room for more. */
export interface RuntimeSink {
  /** `json`: the event's JSON text when it was encoded whole (session.ts); `undefined` as a result: the client has room now. */
  sessionEvent(sessionId: string, event: SessionEvent, json?: string): Promise<void> | undefined;
  subagentStarted(params: SubagentStartedNotification): Promise<void>;
  subagentFinished(params: SubagentFinishedNotification): Promise<void>;
}

export interface RuntimeOptions {
  workspace: string;
  provider: ModelProvider;
  model: string;
  system: string;
  maxSteps: number;
  maxTokens?: number;
  permissionMode: PermissionMode;
  /** The tools offered to top-level sessions (already filtered by mode and allow-list). */
  tools: Tool[];
  /** How deep subagents may nest: 1 lets top-level sessions start children that cannot start more. */
  subagentDepth: number;
  /** Absent: sessions are kept in memory only (a `MemorySessionStore`, never evicted). */
  store?: SessionStore;
  sink: RuntimeSink;
  logger: Logger;
  /** Cleans the bridge's secrets out of every session event before it is recorded or announced. */
  redactor?: Redactor;
  // Client tools and approvals
  /** Which tool calls wait for the client's approval (default `never`). */
  approvals?: ApprovalPolicy;
  /** How long a client tool call or an approval waits for the client (default `DEFAULT_CLIENT_TOOL_TIMEOUT_MS`). */
  clientToolTimeoutMs?: number;
  // MCP servers
  /** More tools, asked for at the start of every top-level turn (MCP tools: their set changes with `tools/list_changed`); never rejects. */
  moreTools?: () => Promise<Tool[]>;
  /** Why a tool the model called is not offered, when the source of `moreTools` knows. */
  explainUnknownTool?: (name: string) => string | undefined;
  // Compaction
  /** The model's context window; default: `contextWindowOf(provider, model)`. */
  contextWindow?: number;
  /** Default `DEFAULT_COMPACT_AT`. */
  compactAt?: number;
  /** How many top-level turns run at once (default: from the open-file limit, turn-admission.ts). */
  maxRunningTurns?: number;
  // Turn control
  /** `initialize.prices`: they replace the built-in table (prices.ts). */
  prices?: Prices;
  /** The hook points turns wait at (`initialize.hooks`, agent/hooks.ts); they wait as long as client tools do. */
  hooks?: HookName[];
  // Tracing
  /** Present when the OTEL variables ask for traces (server/tracing-loader.ts). */
  tracer?: Tracer;
}
