/**
 * The agent runtime of one bridge process (one successful `initialize`): its sessions, their
 * in-flight turns, compactions and rewinds (one at most per session), and the resources they
 * hold. How a turn itself runs, a subagent's included, is turn-runner.ts.
 */
import type { JsonObject, TextBlock, TurnEndReason } from "../protocol/index.js";
import type { ClientToolAnswer, PermissionAnswer } from "./client-requests.js";
import { ClientWaits, DEFAULT_CLIENT_TOOL_TIMEOUT_MS } from "./client-waits.js";
import { HookPoints, type HookAnswerOutcome } from "./hooks.js";
import type { HookAnswer } from "../protocol/index.js";
import { requestTools, toolsByName, topLevelTools } from "./offered-tools.js";
import { compileOutputSchema, type OutputContract } from "./final-answer.js";
import { DEFAULT_COMPACT_AT, compactNow, contextWindowOf } from "./compaction.js";
import type { Session } from "./session.js";
import { LoadedSessions } from "./loaded-sessions.js";
import { SessionBusyError, UnknownSessionError } from "./runtime-errors.js";
import { MemorySessionStore, type ForkRefusal, type SessionCatalog, type SessionStore } from "./store/index.js";
import { isOutOfDescriptors } from "../tools/out-of-descriptors.js";
import { TurnAdmission, defaultTurnLimit } from "./turn-admission.js";
import type { RuntimeOptions, TurnRequest } from "./runtime-options.js";
import type { Prices } from "../protocol/index.js";
import { SteerInbox } from "./steer.js";
import { pricesFor } from "./prices.js";
import type { SessionRewindParams, SessionRewindResult } from "../protocol/index.js";
import { CheckpointsBySession } from "./checkpoints/by-session.js";
import { rewindSession } from "./checkpoints/rewind-session.js";
import { TurnRunner } from "./turn-runner.js";

export type { RuntimeOptions, RuntimeSink, TurnRequest } from "./runtime-options.js";

export { IDLE_SESSIONS_KEPT } from "./loaded-sessions.js";
export { MissingTurnEndError, SessionBusyError, UnknownSessionError } from "./runtime-errors.js";

interface Flight {
  controller: AbortController;
  settled: Promise<TurnEndReason>;
  /** The number of the turn it runs. */
  turn: number;
  /** A `session/compact`, not a prompt: a prompt meanwhile is told so. */
  compacting?: true;
  /** Where `session/steer` leaves its messages for the turn (absent for a compaction: nothing to steer). */
  steers?: SteerInbox;
}

/**
 * How a rewind's or a compaction's flight settles, whatever its outcome: its caller has the
 * outcome itself, and a flight only tells `cancel` and `settled` when it is over (a second
 * promise that rejected too would be a rejection nobody handles).
 */
const flightEnded = (): TurnEndReason => ({ kind: "completed" });

export class AgentRuntime {
  /** The sessions held in memory, and the bound on the idle ones (loaded-sessions.ts). */
  private readonly sessions: LoadedSessions;
  private readonly flights = new Map<string, Flight>();
  /** Child sessions whose subagent turn is running (turn-runner.ts records them): as busy as a session with a prompt in flight. */
  private readonly runningChildren = new Map<string, number>();
  /** How many top-level turns run at once; the rest wait in order (turn-admission.ts). */
  private readonly admission: TurnAdmission;

  /** Client tool calls and approvals waiting for the client's request. */
  private readonly waits: ClientWaits;
  /** The hook points of `initialize.hooks`; absent: none asked for. */
  private readonly hooks: HookPoints | undefined;
  /** Where sessions are kept: the durable store, or memory. */
  private readonly store: SessionStore | MemorySessionStore;
  /** The model's prices (`initialize.prices`, else the built-in table); `undefined`: no `costUsd`. */
  readonly prices: Prices | undefined;
  /** Each session's checkpoints (agent/checkpoints/), beside its log (or in a private temporary folder without one). */
  private readonly checkpoints: CheckpointsBySession;
  /** The window and threshold of every session's compaction: the options' own, fixed for the runtime's life, so one object for every turn. */
  private readonly context: Readonly<{ window: number; compactAt: number }>;
  /** Runs the turns, top-level and subagents' (turn-runner.ts). */
  private readonly turns: TurnRunner;

  constructor(private readonly options: RuntimeOptions) {
    this.store = options.store ?? new MemorySessionStore(options.workspace);
    const { provider, model, sink, logger, redactor } = options;
    this.checkpoints = new CheckpointsBySession(options.workspace, options.store?.directory);
    this.sessions = new LoadedSessions({
      store: this.store,
      durable: options.store !== undefined,
      provider: provider.name,
      model,
      sink,
      logger,
      redactor,
      dropped: (sessionId) => this.checkpoints.forget(sessionId),
    });
    this.admission = new TurnAdmission(options.maxRunningTurns ?? defaultTurnLimit());
    this.waits = new ClientWaits(options.clientToolTimeoutMs ?? DEFAULT_CLIENT_TOOL_TIMEOUT_MS);
    this.hooks = options.hooks?.length ? new HookPoints(options.hooks, this.waits) : undefined;
    this.prices = pricesFor(options.provider.name, options.model, options.prices);
    this.context = { window: options.contextWindow ?? contextWindowOf(provider.name, model), compactAt: options.compactAt ?? DEFAULT_COMPACT_AT };
    const { waits, hooks, checkpoints, prices, context, runningChildren } = this;
    const take = (id: string, parentId: string) => this.session(id, parentId);
    this.turns = new TurnRunner(options, { waits, hooks, checkpoints, prices, context, runningChildren, take, release: (session) => this.release(session) });
  }

  /** Hands a `session/hook` to the hook waiting for it (agent/hooks.ts). */
  answerHook(sessionId: string, hookId: string, answer: HookAnswer): HookAnswerOutcome {
    return this.hooks?.answer(sessionId, hookId, answer) ?? { kind: "unknown" };
  }

  /**
   * `session/steer` (steer.ts): `true` once recorded; `false` when no top-level turn is in flight
   * (none, a compaction, a subagent's, an unknown session: nothing is created) or it ends first.
   * Synchronous up to the queueing, so steers keep the order of their requests.
   */
  steer(sessionId: string, content: TextBlock[]): Promise<boolean> {
    const flight = this.flights.get(sessionId);
    if (!flight?.steers || flight.controller.signal.aborted) return Promise.resolve(false);
    return flight.steers.offer(sessionId, content);
  }

  /** Hands a `session/tool_result` to the call waiting for it; `false`: no call of that session waits under that id. */
  answerToolResult(sessionId: string, callId: string, answer: ClientToolAnswer): boolean {
    return this.waits.answer("tool-result", sessionId, callId, answer);
  }

  /** Hands a `session/permission` to the call waiting for it; `false`: no request of that session waits under that id. */
  answerPermission(sessionId: string, requestId: string, answer: PermissionAnswer): boolean {
    return this.waits.answer("permission", sessionId, requestId, answer);
  }

  /** No client request can come any more (end of input): pending and later waits end now (error results, denies). */
  closeClientWaits(why: string): void {
    this.waits.close(why);
  }

  /** The sessions API (`session/list`, `read`, `fork`, `delete`) over this runtime's store. */
  get catalog(): SessionCatalog {
    return this.store;
  }

  /**
   * A prompt's `outputSchema`, compiled into the turn's `final_answer` tool and its check
   * (final-answer.ts); throws `OutputSchemaError` naming what is wrong with the schema.
   */
  compileOutput(schema: JsonObject): Promise<OutputContract> {
    return compileOutputSchema(schema);
  }

  /**
   * `session/delete`: unloads the session (closing its log) and removes it from the store.
   * Throws `SessionBusyError` while a turn of it runs (its own or, for a child, its parent's
   * `task` call). Synchronous, so no prompt can start in between.
   */
  deleteSession(sessionId: string): boolean {
    if (this.isBusy(sessionId)) throw new SessionBusyError(sessionId, "has a turn running; cancel it or wait for it to end before deleting it");
    this.sessions.unload(sessionId);
    const deleted = this.store.delete(sessionId);
    if (deleted) {
      this.checkpoints.remove(sessionId);
    }
    return deleted;
  }

  /**
   * `session/fork` of `sessionId` at `turn` (default: all) into `newSessionId`. The fork gets the
   * checkpoints of the turns it copied (so it can rewind their files too) before the store makes
   * it visible and lets go of its locks, and one whose checkpoints cannot be copied is not made:
   * no one ever sees, prompts or lists a fork without them, not even after a kill
   * (store/interface.ts, `SessionCatalog.fork`).
   */
  forkSession(sessionId: string, newSessionId: string, turn: number | undefined): ForkRefusal | undefined {
    let copying = false;
    try {
      return this.store.fork(sessionId, newSessionId, turn, () => {
        copying = true;
        this.checkpoints.fork(sessionId, newSessionId, turn);
      });
    } catch (error) {
      // What this process holds of the removed fork's checkpoints goes with it.
      if (copying) this.checkpoints.remove(newSessionId);
      throw error;
    }
  }

  /**
   * `session/rewind` (checkpoints/rewind-session.ts): busy like a prompt while it runs, under
   * the session's lock. Throws `SessionBusyError`, `UnknownSessionError`, `RewindRefusal`.
   */
  rewind(sessionId: string, params: SessionRewindParams): Promise<SessionRewindResult> {
    if (this.isBusy(sessionId)) throw new SessionBusyError(sessionId, "has a turn in flight; cancel it or wait for it to end before rewinding it");
    if (!this.sessions.has(sessionId) && !this.options.store?.exists(sessionId)) throw new UnknownSessionError(sessionId);
    const session = this.session(sessionId);
    const controller = new AbortController();
    const done = Promise.resolve()
      .then(() => rewindSession(session, this.checkpoints.of(sessionId), params))
      .finally(() => {
        this.flights.delete(sessionId);
        this.release(session);
      });
    this.flights.set(sessionId, { controller, settled: done.then(flightEnded, flightEnded), turn: session.nextTurnNumber() });
    return done;
  }

  /** The number of the turn a session runs now, if it runs one. */
  runningTurn(sessionId: string): number | undefined {
    return this.flights.get(sessionId)?.turn ?? this.runningChildren.get(sessionId);
  }

  /** Whether a session has a turn in flight. */
  isBusy(sessionId: string): boolean {
    return this.flights.has(sessionId) || this.runningChildren.has(sessionId);
  }

  /**
   * Starts a turn. Synchronous up to the start, so a second prompt for the same session is
   * refused (`SessionBusyError`) before anything of the first could interleave.
   */
  prompt(sessionId: string, content: TextBlock[], request: TurnRequest = {}): Promise<TurnEndReason> {
    if (this.isBusy(sessionId)) {
      const compacting = this.flights.get(sessionId)?.compacting;
      throw new SessionBusyError(sessionId, compacting ? "is compacting (a session/compact is in flight); prompt it once the compaction has ended" : undefined);
    }
    const controller = new AbortController();
    // Beyond the bound of running turns, or out of descriptors: it waits (turn-admission.ts).
    if (!this.admission.tryEnter()) return this.deferred(sessionId, content, controller, false, request);
    let session: Session;
    try {
      session = this.session(sessionId);
    } catch (error) {
      if (isOutOfDescriptors(error)) return this.deferred(sessionId, content, controller, true, request);
      this.admission.leave();
      throw error;
    }
    const turn = session.nextTurnNumber();
    const steers = new SteerInbox();
    const ended = () => {
      steers.close();
      this.flights.delete(sessionId);
      this.release(session);
      this.admission.leave();
    };
    // A turn that fails before its first await (a tracer, the tools' listing) rejects like any
    // other: thrown here, it would keep the session's lock and its slot among the running turns.
    let started: Promise<TurnEndReason>;
    try {
      started = this.turns.runTop(session, content, controller.signal, request, steers);
    } catch (error) {
      started = Promise.reject(error);
    }
    // `finally`'s work in one reaction (`finally` itself makes two more promises a turn).
    const settled = started.then(
      (reason) => {
        ended();
        return reason;
      },
      (error: unknown) => {
        ended();
        throw error;
      },
    );
    this.flights.set(sessionId, { controller, settled, turn, steers });
    return settled;
  }

  /**
   * A prompt that waits for its turn to be admitted (`holding`: it has its slot, and waits for
   * descriptors only). Busy at once, like any prompt in flight, as a turn after the session's
   * last (its number is known once its log is open); cancelled before it started, it answers
   * `aborted` and records nothing. Failures to open the session reject, as `prompt` throws them.
   */
  private deferred(sessionId: string, content: TextBlock[], controller: AbortController, holding: boolean, request: TurnRequest): Promise<TurnEndReason> {
    const { signal } = controller;
    // Steers sent while the prompt waits join its turn's first step (refused if it never starts).
    const steers = new SteerInbox();
    const flight: Flight = { controller, settled: undefined as unknown as Promise<TurnEndReason>, turn: Number.MAX_SAFE_INTEGER, steers };
    const run = async (): Promise<TurnEndReason> => {
      if (!holding && !(await this.admission.enter(signal))) return { kind: "aborted" };
      let session: Session | undefined;
      try {
        // A compaction or a rewind (the flights with no steers) holds descriptors beside the turns.
        const besideTurns = () => [...this.flights.values()].some((f) => !f.steers);
        session = await this.admission.withDescriptors(sessionId, () => this.session(sessionId), signal, besideTurns);
      } finally {
        if (!session) this.admission.leave();
      }
      if (!session) return { kind: "aborted" };
      flight.turn = session.nextTurnNumber();
      try {
        return await this.turns.runTop(session, content, signal, request, steers);
      } finally {
        this.release(session);
        this.admission.leave();
      }
    };
    flight.settled = run().finally(() => {
      steers.close();
      this.flights.delete(sessionId);
    });
    this.flights.set(sessionId, flight);
    return flight.settled;
  }


  /**
   * `session/compact`: summarizes the session's older history now. Busy like a prompt while it
   * runs (a prompt meanwhile is `SessionBusyError`, cancel aborts it). `false`: nothing to
   * compact, an unknown session (nothing is created), or the summary could not be made.
   */
  compact(sessionId: string): Promise<boolean> {
    if (this.isBusy(sessionId)) throw new SessionBusyError(sessionId);
    if (!this.sessions.has(sessionId) && !this.options.store?.exists(sessionId)) return Promise.resolve(false);
    const session = this.session(sessionId);
    const controller = new AbortController();
    const { provider, model, system, maxTokens, subagentDepth } = this.options;
    // The tools a top-level turn offers (MCP's included), so the provider's prefix cache serves the summary.
    // A listing that throws rejects, so the session is released below like any failure.
    const offered = Promise.resolve()
      .then(() => topLevelTools(this.options))
      .then((all) => requestTools(toolsByName(all, 0, subagentDepth)));
    const turn = session.nextTurnNumber() - 1;
    const done = offered
      .then((specs) => compactNow({ session, provider, model, system, maxTokens, tools: specs, ...this.context, turn, signal: controller.signal }, "request"))
      .then((outcome) => {
        if (!outcome.compacted) this.options.logger.info(`session/compact ${sessionId}: not compacted (${outcome.why})`);
        session.sync();
        return outcome.compacted;
      })
      .finally(() => {
        this.flights.delete(sessionId);
        this.release(session);
      });
    // Busy as a turn numbered after the last one: a fork of any ended turn may go ahead.
    this.flights.set(sessionId, { controller, settled: done.then(flightEnded, flightEnded), turn: session.nextTurnNumber(), compacting: true });
    return done;
  }

  /** Aborts a session's turn; resolves once it has settled. `false` when none was in flight. */
  async cancel(sessionId: string): Promise<boolean> {
    const flight = this.flights.get(sessionId);
    if (!flight) return false;
    flight.controller.abort(new Error("cancelled by session/cancel"));
    await flight.settled.catch(() => undefined);
    return true;
  }

  /** Aborts every turn in flight (shutdown, signals, a closed stdout). */
  abortAll(reason: string): void {
    for (const flight of this.flights.values()) flight.controller.abort(new Error(reason));
  }

  /** Resolves when no turn is in flight. */
  async settled(): Promise<void> {
    while (this.flights.size > 0) await Promise.allSettled([...this.flights.values()].map((f) => f.settled));
  }

  /** Sends the spans not yet exported (tracing on only); resolves within the tracer's bound. */
  flushTraces(): Promise<void> {
    return this.options.tracer?.shutdown() ?? Promise.resolve();
  }

  /**
   * `call`, tried once more after closing the idle sessions' logs when it ran out of file
   * descriptors (loaded-sessions.ts `freeingIdle`), for the sessions API's calls. Only for a call
   * that changes nothing when it fails (a read, a fork that removes what it began): a delete that
   * failed after removing the log would answer `deleted: false` the second time.
   */
  freeingIdle<T>(call: () => T): T {
    return this.sessions.freeingIdle(call);
  }

  /** Closes the idle sessions' logs (loaded-sessions.ts `closeIdle`); whether any was closed. */
  closeIdleSessions(): boolean {
    return this.sessions.closeIdle();
  }

  /** fsyncs and closes every session log. */
  closeAll(): void {
    this.sessions.closeAll();
  }

  /** A session's turn is over: it joins the idle ones (loaded-sessions.ts). */
  private release(session: Session): void {
    this.sessions.release(session, (id) => this.isBusy(id));
  }

  /** The session, loaded and locked for a turn (loaded-sessions.ts). */
  private session(sessionId: string, parentSessionId?: string): Session {
    return this.sessions.take(sessionId, parentSessionId);
  }
}
