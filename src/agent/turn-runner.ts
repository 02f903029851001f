/**
 * How the runtime runs a turn: the loop's config (turn-config.ts) made from the runtime's fixed
 * options for each turn (what depends on the session alone made once for it), the turn's span
 * and budget, and the subagents it may start. A subagent's turn runs here too, as a turn of its
 * child session one level deeper (`run` and `runChild` call each other), sharing its parent's
 * budget; while it runs, its child session is busy like a session with a prompt in flight
 * (`runningChildren`, read by the runtime).
 * Whatever fails in a turn rejects as `MissingTurnEndError`: it recorded no `turn/end`.
 *
 * @module
 */
import type { TextBlock, TurnEndReason, Prices } from "../protocol/index.js";
import type { ClientToolRunner, SubagentRequest, SubagentSpawner, Tool, ToolOutput } from "../tools/types.js";
import { ApprovalGate, clientToolRunner, type ToolGate } from "./client-requests.js";
import type { ClientWaits } from "./client-waits.js";
import type { HookPoints } from "./hooks.js";
import { TurnBudget } from "./cost.js";
import { runTurn } from "./loop.js";
import { childSessionId, subagentFinished, subagentOutput } from "./subagents.js";
import { canDelegate, toolsByName, topLevelTools } from "./offered-tools.js";
import type { Session } from "./session.js";
import { MissingTurnEndError } from "./runtime-errors.js";
import type { RuntimeOptions, TurnRequest } from "./runtime-options.js";
import type { SteerInbox } from "./steer.js";
import type { CheckpointsBySession } from "./checkpoints/by-session.js";
import type { TurnRecorder } from "./checkpoints/turn-recorder.js";
import type { TurnCheckpointSource } from "./turn-checkpoint.js";

/** What the runtime shares with the turns it runs: its parts, and its sessions for the children. */
export interface TurnParts {
  /** Client tool calls and approvals waiting for the client's request. */
  waits: ClientWaits;
  /** The hook points of `initialize.hooks`; absent: none asked for. */
  hooks: HookPoints | undefined;
  /** Each session's checkpoints (agent/checkpoints/). */
  checkpoints: CheckpointsBySession;
  /** The model's prices; `undefined`: no `costUsd`. */
  prices: Prices | undefined;
  /** The window and threshold of every session's compaction, one object for every turn. */
  context: Readonly<{ window: number; compactAt: number }>;
  /** Child sessions whose subagent turn is running, with its number (the runtime's, which reads it). */
  runningChildren: Map<string, number>;
  /** A child session, loaded and locked for its turn (loaded-sessions.ts). */
  take(sessionId: string, parentSessionId: string): Session;
  /** A child's turn is over: it joins the idle sessions. */
  release(session: Session): void;
}

/** What every turn of one session runs with, whatever its prompt asked: made at its first turn. */
interface SessionTurnParts {
  client: ClientToolRunner;
  checkpoints: TurnCheckpointSource;
  /** A turn that threw lets go of its recorder's watch (shared-workspace.ts): it never reached `finish`. */
  abandon(): void;
}

export class TurnRunner {
  private readonly gate: ToolGate | undefined;
  /** Each loaded session's `SessionTurnParts` (a reloaded session is a new object, with parts of its own). */
  private readonly bySession = new WeakMap<Session, SessionTurnParts>();
  private readonly waits: ClientWaits;
  private readonly hooks: HookPoints | undefined;
  private readonly checkpoints: CheckpointsBySession;
  private readonly prices: Prices | undefined;
  private readonly context: Readonly<{ window: number; compactAt: number }>;
  private readonly runningChildren: Map<string, number>;
  private readonly take: TurnParts["take"];
  private readonly release: TurnParts["release"];

  constructor(
    private readonly options: RuntimeOptions,
    parts: TurnParts,
  ) {
    this.waits = parts.waits;
    this.hooks = parts.hooks;
    this.checkpoints = parts.checkpoints;
    this.prices = parts.prices;
    this.context = parts.context;
    this.runningChildren = parts.runningChildren;
    this.take = parts.take;
    this.release = parts.release;
    const policy = options.approvals ?? "never";
    this.gate = policy === "never" ? undefined : new ApprovalGate(policy, this.waits);
  }

  /** A top-level turn; its tools are awaited only when they come as a promise (MCP's). */
  runTop(session: Session, content: TextBlock[], signal: AbortSignal, request: TurnRequest, steers: SteerInbox): Promise<TurnEndReason> {
    const tools = topLevelTools(this.options);
    if (tools instanceof Promise) return tools.then((offered) => this.run(session, content, signal, offered, 0, request, steers));
    return this.run(session, content, signal, tools, 0, request, steers);
  }

  /** Runs a turn; `request` and `steers` are a top-level prompt's (a subagent's turn has no budget of its own and cannot be steered). */
  private run(session: Session, content: TextBlock[], signal: AbortSignal, tools: Tool[], depth: number, request: TurnRequest = {}, steers?: SteerInbox): Promise<TurnEndReason> {
    const { subagentDepth } = this.options;
    // The turn's span (tracing on only): a child of the client's span, or of the `task` call running this subagent.
    const trace = this.options.tracer?.turn({
      sessionId: session.id,
      parentSessionId: session.parentSessionId,
      turn: session.nextTurnNumber(),
      model: this.options.model,
      provider: this.options.provider.name,
      traceparent: request.traceparent,
      input: content,
    });
    // One budget for the prompt's turn and every subagent it starts (cost.ts TurnBudget).
    const budget = request.budget ?? (request.maxCostUsd !== undefined ? new TurnBudget(request.maxCostUsd) : undefined);
    // The turn's end in one reaction (an async layer here made its own promise and frame a turn);
    // whatever fails, here or in the turn, rejects as a turn that recorded no `turn/end`.
    const failed = (error: unknown): MissingTurnEndError => {
      this.bySession.get(session)?.abandon();
      trace?.end({ kind: "internal-error", message: (error as Error).message });
      return new MissingTurnEndError(session.id, error);
    };
    try {
      let parts = this.bySession.get(session);
      if (!parts) this.bySession.set(session, (parts = this.partsFor(session)));
      return runTurn(
        session,
        content,
        {
          provider: this.options.provider,
          model: this.options.model,
          system: this.options.system,
          maxSteps: this.options.maxSteps,
          maxTokens: this.options.maxTokens,
          workspace: this.options.workspace,
          permissionMode: this.options.permissionMode,
          tools: toolsByName(tools, depth, subagentDepth),
          subagents: canDelegate(depth, subagentDepth) ? this.spawnerFor(session, tools, depth + 1, budget) : undefined,
          gate: this.gate,
          client: parts.client,
          output: request.output,
          explainUnknownTool: this.options.explainUnknownTool,
          context: this.context,
          checkpoints: parts.checkpoints,
          hooks: this.hooks?.forDepth(depth),
          steers,
          prices: this.prices,
          maxCostUsd: budget?.limitUsd,
          budget,
          trace,
        },
        signal,
      ).then(
        (reason) => {
          trace?.end(reason);
          return reason;
        },
        (error: unknown) => {
          throw failed(error);
        },
      );
    } catch (error) {
      return Promise.reject(failed(error));
    }
  }

  /** The session's client tool runner and checkpoint source: they read nothing of a turn's own. */
  private partsFor(session: Session): SessionTurnParts {
    let last: TurnRecorder | undefined;
    return {
      client: clientToolRunner(session, this.waits),
      checkpoints: {
        // A subagent's turn is of its parent's family only while it runs in the parent's `task`
        // call: a child session the client prompts itself runs beside its parent, not in it.
        forTurn: (turn) => {
          const parent = this.runningChildren.has(session.id) ? session.parentSessionId : undefined;
          return (last = this.checkpoints.recorder(session.id, turn, this.options.permissionMode, this.options.logger, parent));
        },
      },
      abandon: () => last?.abandon(),
    };
  }

  /** The subagents `parent` may start: children at `depth`, offered `tools` (less `task` at the depth limit). */
  private spawnerFor(parent: Session, tools: Tool[], depth: number, budget: TurnBudget | undefined): SubagentSpawner {
    return { spawn: (request, signal) => this.runChild(parent, request, signal, tools, depth, budget) };
  }

  /** Runs a subagent in a child session and returns its final text as a tool output. */
  private async runChild(parent: Session, { prompt, description }: SubagentRequest, signal: AbortSignal, tools: Tool[], depth: number, budget: TurnBudget | undefined): Promise<ToolOutput> {
    const childId = childSessionId(parent.id);
    const child = this.take(childId, parent.id);
    // Busy from the moment it is taken until it is released: the client may know its id before
    // its turn starts (`subagent/started`, `session/list`) and after it ended (the awaits on
    // stdout below), and nothing else may run on it, or close its log, while this call holds it.
    this.runningChildren.set(childId, child.nextTurnNumber());
    try {
      const { sink } = this.options;
      await sink.subagentStarted({ parentSessionId: parent.id, childSessionId: childId });
      let reason: TurnEndReason;
      try {
        reason = await this.run(child, [{ type: "text", text: prompt }], signal, tools, depth, budget ? { budget } : {});
      } catch (error) {
        reason = { kind: "internal-error", message: (error as Error).message };
      }
      const last = child.lastAssistantContent;
      await sink.subagentFinished(subagentFinished(this.options.provider.name, parent.id, childId, reason, last));
      child.sync();
      return subagentOutput(reason, last, description);
    } finally {
      this.runningChildren.delete(childId);
      this.release(child);
    }
  }
}
