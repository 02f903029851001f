/**
 * What one turn runs with (`runTurn`'s config, built by the runtime from its options for each
 * turn): a leaf of types, so the loop and the tool calls it runs read the same config without
 * importing each other.
 *
 * @module
 */
import type { PermissionMode, Prices } from "../protocol/index.js";
import type { ModelProvider } from "../providers/types.js";
import type { ClientToolRunner, SubagentSpawner, Tool } from "../tools/types.js";
import type { ToolGate } from "./client-requests.js";
import type { OutputContract } from "./final-answer.js";
import type { SteerInbox } from "./steer.js";
import type { TurnBudget } from "./cost.js";
import type { TurnHooks } from "./hooks.js";
import type { TurnTrace } from "./turn-trace.js";
import type { TurnCheckpointSource } from "./turn-checkpoint.js";

/** What a turn runs with. */
export interface TurnConfig {
  provider: ModelProvider;
  model: string;
  system: string;
  maxSteps: number;
  maxTokens?: number;
  workspace: string;
  permissionMode: PermissionMode;
  /** The tools offered to the model, by name. */
  tools: ReadonlyMap<string, Tool>;
  /** Present when this session may start subagents. */
  subagents?: SubagentSpawner;
  /** Asked before each tool call runs (approvals); absent: every call runs. */
  gate?: ToolGate;
  /** Runs client tools; present when the client offered tools. */
  client?: ClientToolRunner;
  /** A structured turn's schema (`session/prompt.outputSchema`): offers `final_answer`. */
  output?: OutputContract;
  /** Why a tool is not offered, when someone knows (an MCP server that failed, a tool added mid-turn). */
  explainUnknownTool?: (name: string) => string | undefined;
  /** The model's context window and the share of it that triggers compaction; absent: no compaction. */
  context?: { window: number; compactAt: number };
  /** Steers of this turn (`session/steer`, steer.ts); absent: the turn cannot be steered (a subagent's). */
  steers?: SteerInbox;
  /** The model's prices (prices.ts); absent: usage carries no `costUsd`. */
  prices?: Prices;
  /** `session/prompt.maxCostUsd`: once the turn's cost reached it, no further model request. */
  maxCostUsd?: number;
  /** The budget this turn spends, shared with the turn that started it (a subagent's); else made from `maxCostUsd`. */
  budget?: TurnBudget;
  /** The hook points this turn waits at (agent/hooks.ts); absent: none. */
  hooks?: TurnHooks;
  /**
   * Records what each turn changes in the workspace (checkpoints/turn-recorder.ts); absent:
   * nothing is recorded. `undefined` from `forTurn`: this turn cannot be checkpointed (it runs,
   * and rewinds find nothing of it).
   */
  checkpoints?: TurnCheckpointSource;
  /** The turn's spans, when tracing is on (turn-trace.ts); the loop marks where each model request and tool call begins and ends. */
  trace?: TurnTrace;
}
