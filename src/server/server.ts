/**
 * The method handlers and the process lifecycle: `initialize` (initialize.ts), `session/prompt`,
 * `session/cancel`, `shutdown`, and what end of input, a closed stdout and signals do.
 *
 * The lifecycle is one phase (lifecycle.ts), changed only by `Lifecycle.moveTo` and read by `dispatch`:
 *
 *   starting ──initialize──▶ initializing ──ok──▶ ready
 *       ▲                         │
 *       └────────failed───────────┘
 *   any of those ──shutdown, signal, stdout closed, client gone──▶ shutting-down ──▶ exiting
 *   any of those ──end of input, once every request is answered──────────────────▶ exiting
 *
 * `agent`, `runtime` and `initializing` are data the phases carry, not flags.
 */
import { ErrorCode, RpcError } from "../protocol/errors.js";
import type { RequestMap, RequestMethod } from "../protocol/methods.js";
import {
  statusOf,
  type InitializeResult,
  type JsonObject,
  type SessionCancelResult,
  type SessionPromptResult,
} from "../protocol/types.js";
import type { ServerEndpoint } from "../transport/server-endpoint.js";
// Types only: the agent modules are loaded after `initialize` has answered (agent-modules.ts).
import type { AgentRuntime } from "../agent/runtime.js";
import { initialize, type Agent, type McpServersHandle, type ProcessSettings } from "./initialize.js";
import { answerHook, answerPermission, answerToolResult } from "./client-answers.js";
import { CLIENT_GONE_DRAIN_MS, Lifecycle } from "./lifecycle.js";
import { compactSession, deleteSession, forkSession, listSessions, readSession } from "./sessions-handlers.js";
import { toRpcError } from "./rpc-errors.js";
import { checkBudget, steerSession } from "./turn-control-handlers.js";
import { rewindSession } from "./rewind-handler.js";
import { ParamsSchemas, checkParams, type Params, type ParamsSchema, type Schemas } from "./params-schemas.js";
import { runtimeSink } from "./runtime-sink.js";
import { plainPromptParams } from "../protocol/prompt-fast-path.js";

export { CLIENT_GONE_DRAIN_MS, DRAIN_DEADLINE_MS } from "./lifecycle.js";

export interface ServerOptions extends ProcessSettings {
  endpoint: ServerEndpoint;
  /** Ends the process; called once, after stdout drained or the drain deadline passed. */
  exit: (code: number) => void;
}

/** A method's handler, from its raw params to its result (see `HarnessServer.methods`). */
type Method<R = unknown> = (server: HarnessServer, params: JsonObject | undefined, method: string) => Promise<R>;
/** One handler per method of the protocol (methods.ts), each answering that method's result type. */
type MethodTable = { [M in RequestMethod]: Method<RequestMap[M]["result"]> };

export class HarnessServer {
  /** The phase and the way out (lifecycle.ts). */
  private readonly life: Lifecycle;
  /**
   * Set by a successful `initialize` (phase `ready`); resolves once the agent modules are loaded
   * and the runtime is built, which happens after the `initialize` response was written.
   */
  private agent: Promise<Agent> | undefined;
  /** The runtime, as soon as `agent` has resolved (synchronous access for abort paths). */
  private runtime: AgentRuntime | undefined;
  /** What `agent` resolved to, once it has: a request then takes it without awaiting `requireRuntime`. */
  private readyAgent: Agent | undefined;
  /** The `initialize` in progress: session requests pipelined behind it wait for it. */
  private initializing: Promise<unknown> | undefined;
  /**
   * A timer ref'd while any request is unanswered (unref'd otherwise): a turn that waits on
   * nothing but its abort signal (a hung model stream) must not let the event loop empty and the
   * process exit with the request unanswered, e.g. after stdin's EOF.
   */
  private keepAlive: NodeJS.Timeout | undefined;
  /**
   * The promise each in-flight prompt handed to the transport, by session. Whoever awaits one
   * of these registers after the transport did, so its continuation runs after the prompt's
   * response was written: that is how cancel and shutdown answer after the prompts they end.
   */
  private readonly prompts = new Map<string, Promise<unknown>>();
  /**
   * Requests not yet answered, and what waits for there to be none (the end of input). A count,
   * not a set of the requests: a table that goes from one entry to none every request is given a
   * new backing store by V8 each time.
   */
  private unanswered = 0;
  private whenAllAnswered: (() => void) | undefined;
  /** The params' schemas, loaded after `initialize` answered (params-schemas.ts). */
  private readonly schemas = new ParamsSchemas();
  /** The MCP servers of `initialize`, from before they connect: every way out stops them. */
  private mcp: McpServersHandle | undefined;
  /**
   * Why no client answer can come any more, once stdin ended. Kept, not only acted on: an end of
   * input read while `initialize` was still under way (MCP servers connecting) finds no runtime to
   * tell, and the runtime built after it must still end its waits at once, not after
   * `clientToolTimeoutMs`.
   */
  private inputEnded: string | undefined;

  constructor(private readonly options: ServerOptions) {
    this.life = new Lifecycle({
      logger: options.logger,
      endpoint: options.endpoint,
      exit: options.exit,
      beforeExit: async () => {
        if (this.keepAlive) clearInterval(this.keepAlive);
        // Spans not yet sent go now, bounded by the tracer (tracing on only: otherwise nothing waits).
        await this.runtime?.flushTraces();
      },
    });
  }

  /** Whether new requests are refused (lifecycle.ts). */
  private get stopping(): boolean {
    return this.life.stopping;
  }

  /** The transport's request handler. */
  readonly handle = (method: string, params: JsonObject | undefined): Promise<unknown> => {
    const result = this.dispatch(method, params);
    // One timer for the process, not one made and cleared per request (work on the timer list).
    if (++this.unanswered === 1) (this.keepAlive ??= setInterval(() => undefined, 2 ** 30)).ref();
    const sessionId = method === "session/prompt" && typeof params?.sessionId === "string" ? params.sessionId : undefined;
    // A prompt refused as busy must not take the place of the one in flight.
    if (sessionId !== undefined && !this.prompts.has(sessionId)) this.prompts.set(sessionId, result);
    // The first reaction on `result`: the transport's, which writes the response, is queued beside
    // it, so whatever `whenAllAnswered` wakes runs after the response was written.
    const forget = () => {
      if (sessionId !== undefined && this.prompts.get(sessionId) === result) this.prompts.delete(sessionId);
      if (--this.unanswered > 0) return;
      this.keepAlive?.unref();
      this.whenAllAnswered?.();
    };
    result.then(forget, forget);
    return result;
  };

  private dispatch(method: string, params: JsonObject | undefined): Promise<unknown> {
    if (this.stopping) {
      return Promise.reject(new RpcError(ErrorCode.ShuttingDown, `shutting down: ${method} was not run`, { kind: "shutting-down" }));
    }
    const run = HarnessServer.methods.get(method);
    if (!run) {
      return Promise.reject(
        new RpcError(ErrorCode.MethodNotFound, `method not found: ${method} (known: ${HarnessServer.methodNames.join(", ")})`, { kind: "method-not-found" }),
      );
    }
    return run(this, params, method);
  }

  /**
   * A method that needs the runtime: sent before a successful `initialize` it is refused
   * (-32002) before its params are checked against `schema`; then `run` gets them parsed.
   */
  private static withAgent<K extends ParamsSchema, R>(
    schema: K,
    run: (server: HarnessServer, params: Params<K>, agent: Agent) => R | Promise<R>,
    plain?: (raw: JsonObject) => Params<K> | undefined,
  ): Method<R> {
    // The params checked and the handler run synchronously (a throw is the answer's rejection).
    // The schemas are loaded with the agent (initialize.ts), so requests start in the order they came.
    // Plainly valid params skip zod (`plain`, e.g. prompt-fast-path.ts); anything else gets the schema's verdict and wording.
    const start = (server: HarnessServer, raw: JsonObject | undefined, agent: Agent, schemas: Schemas): Promise<R> => {
      try {
        return Promise.resolve(run(server, (raw && plain?.(raw)) ?? checkParams(schemas, schema, raw), agent)); // a native promise as it is
      } catch (error) {
        return Promise.reject(error);
      }
    };
    // Once the agent is built and no `initialize` is in progress, `requireRuntime` would give it
    // at once: taken as it is, the request starts without a tick of waiting, and the handler's
    // own promise is the answer, with no async layer (its promise, the ticks of resolving one
    // promise with another) around it.
    return (server, raw, method) => {
      const ready = !server.initializing && server.readyAgent;
      if (ready && server.schemas.loaded) return start(server, raw, ready, server.schemas.loaded);
      return (async () => start(server, raw, ready || (await server.requireRuntime(method)), server.schemas.loaded ?? (await server.schemas.load())))();
    };
  }

  /**
   * Every method the server answers, in the order the "method not found" answer lists them.
   * Typed by the protocol's `RequestMap`: a method missing here, one it does not list, or a
   * handler whose result is not the method's fails the build. Each runs synchronously up to
   * its first await, so what `initialize` and `shutdown` change is seen by the requests read
   * after them. `initialize` checks its params itself (initialize.ts); `shutdown` takes none.
   */
  private static readonly table: MethodTable = {
    initialize: (server, raw) => server.initialize(raw),
    "session/prompt": HarnessServer.withAgent("sessionPromptParamsSchema", (server, params, agent) => server.prompt(params, agent), plainPromptParams),
    "session/cancel": HarnessServer.withAgent("sessionCancelParamsSchema", (server, params, agent) => server.cancel(params, agent)),
    // Client tools and approvals (client-answers.ts)
    "session/tool_result": HarnessServer.withAgent("sessionToolResultParamsSchema", (_, params, { runtime }) => answerToolResult(runtime, params)),
    "session/permission": HarnessServer.withAgent("sessionPermissionParamsSchema", (_, params, { runtime }) => answerPermission(runtime, params)),
    "session/hook": HarnessServer.withAgent("sessionHookParamsSchema", (_, params, { runtime }) => answerHook(runtime, params)),
    // The sessions API (sessions-handlers.ts)
    "session/list": HarnessServer.withAgent("sessionListParamsSchema", (server, _, agent) => listSessions(agent, server.options.logger)),
    "session/read": HarnessServer.withAgent("sessionReadParamsSchema", (_, params, agent) => readSession(agent, params)),
    "session/fork": HarnessServer.withAgent("sessionForkParamsSchema", (server, params, agent) => forkSession(agent, params, server.options.logger)),
    "session/delete": HarnessServer.withAgent("sessionDeleteParamsSchema", (_, params, agent) => deleteSession(agent, params)),
    "session/compact": HarnessServer.withAgent("sessionCompactParamsSchema", (_, params, agent) => compactSession(agent, params)),
    // Turn control (turn-control-handlers.ts)
    "session/steer": HarnessServer.withAgent("sessionSteerParamsSchema", (_, params, agent) => steerSession(agent, params)),
    // Checkpoints and rewind (rewind-handler.ts)
    "session/rewind": HarnessServer.withAgent("sessionRewindParamsSchema", (_, params, agent) => rewindSession(agent, params)),
    shutdown: (server) => server.shutdown(),
  };

  /** The table by name, for dispatch (a Map: no inherited names such as `toString` are methods). */
  private static readonly methods: ReadonlyMap<string, Method> = new Map(Object.entries(HarnessServer.table));

  /** The methods the server answers (the wire-shape test holds them against the protocol's types). */
  static get methodNames(): string[] {
    return [...HarnessServer.methods.keys()];
  }

  /**
   * `initialize`s run one after another, in arrival order: one pipelined behind another waits
   * for it, and is refused as "already initialized" only if that one succeeded.
   */
  private initialize(raw: JsonObject | undefined): Promise<InitializeResult> {
    const previous = this.initializing;
    const running = previous ? previous.catch(() => undefined).then(() => this.initializeOnce(raw)) : this.initializeOnce(raw);
    this.initializing = running;
    const done = () => {
      if (this.initializing === running) this.initializing = undefined;
    };
    running.then(done, done);
    return running;
  }

  private async initializeOnce(raw: JsonObject | undefined): Promise<InitializeResult> {
    // `agent`, not the phase: after a shutdown the phase moved on, but the process still was initialized.
    if (this.agent) {
      throw new RpcError(ErrorCode.NotInitialized, "already initialized: initialize may succeed once per process", { kind: "already-initialized" });
    }
    // A shutdown that arrived after this initialize leaves the phase alone.
    if (this.life.phase === "starting") this.life.moveTo("initializing");
    try {
      const { result, agent } = await initialize(raw, {
        ...this.options,
        sink: runtimeSink(this.options.endpoint),
        validate: (params) => this.schemas.validate("initializeParamsSchema", params),
        preload: () => this.schemas.load(),
        onMcpServers: (servers) => {
          this.mcp = servers;
          if (this.stopping) void servers.close();
        },
      });
      this.agent = agent.then((built) => {
        this.runtime = built.runtime;
        this.readyAgent = built;
        // Input that ended before the runtime existed: its waits end at once, as in onInputEnd.
        if (this.inputEnded !== undefined) built.runtime.closeClientWaits(this.inputEnded);
        return built;
      });
      // A failure here surfaces on the requests that need the runtime, not as an unhandled rejection.
      this.agent.catch(() => undefined);
      if (this.life.phase === "initializing") this.life.moveTo("ready");
      return result;
    } catch (error) {
      if (this.life.phase === "initializing") this.life.moveTo("starting");
      throw error;
    }
  }

  /** The runtime, once an `initialize` sent before this request has finished. */
  private async requireRuntime(method: string): Promise<Agent> {
    if (this.initializing) await this.initializing.catch(() => undefined);
    if (!this.agent) {
      throw new RpcError(ErrorCode.NotInitialized, `not initialized: send initialize before ${method}`, { kind: "not-initialized" });
    }
    return this.agent;
  }

  private prompt(params: Params<"sessionPromptParamsSchema">, agent: Agent): Promise<SessionPromptResult> {
    checkBudget(agent, params);
    // A structured turn compiles its schema first; any other starts here, and its answer is one
    // reaction on the turn's promise, with no async layer around it (its promise and await).
    return params.outputSchema ? this.promptWithOutput(params, params.outputSchema, agent) : this.startPrompt(params, undefined, agent);
  }

  private async promptWithOutput(params: Params<"sessionPromptParamsSchema">, schema: JsonObject, agent: Agent): Promise<SessionPromptResult> {
    let output: import("../agent/final-answer.js").OutputContract;
    try {
      output = await agent.runtime.compileOutput(schema);
    } catch (error) {
      throw toRpcError(agent.modules, error);
    }
    return this.startPrompt(params, output, agent);
  }

  /** Starts the turn; throws (synchronously) what refuses it, and the answer rejects with what ended it badly. */
  private startPrompt(
    params: Params<"sessionPromptParamsSchema">,
    output: import("../agent/final-answer.js").OutputContract | undefined,
    { runtime, modules }: Agent,
  ): Promise<SessionPromptResult> {
    // From here to the registration below nothing awaits, so overlap is decided at once.
    let settled: Promise<import("../protocol/types.js").TurnEndReason>;
    try {
      settled = runtime.prompt(params.sessionId, params.contentBlocks, { output, maxCostUsd: params.maxCostUsd, traceparent: params.traceparent });
      // This prompt arrived before the shutdown (see `stopping`) but starts after it: it
      // runs and is aborted like every turn the shutdown found in flight.
      if (this.stopping) runtime.abortAll(this.shutdownReason);
    } catch (error) {
      // A busy session; a corrupt log; another process's session.
      throw toRpcError(modules, error);
    }
    return settled.then(
      (reason) => ({ status: statusOf(reason), reason }),
      // A missing turn/end; the store's failures too: a prompt that waited to be admitted
      // opened its session only then (agent/turn-admission.ts).
      (error: unknown) => {
        throw toRpcError(modules, error);
      },
    );
  }

  private async cancel(params: Params<"sessionCancelParamsSchema">, { runtime }: Agent): Promise<SessionCancelResult> {
    const answer = this.prompts.get(params.sessionId);
    const cancelled = await runtime.cancel(params.sessionId);
    // See `prompts`: this puts the cancel response after the cancelled prompt's response.
    if (cancelled && answer) await answer.catch(() => undefined);
    return { cancelled };
  }

  /** Why turns are being aborted, once stopping. */
  private shutdownReason = "shutdown requested";

  private async shutdown(): Promise<Record<string, never>> {
    this.life.stop();
    await this.settleEverything("shutdown requested");
    // Exit once the response itself is on its way: the transport writes it in a reaction to
    // this promise, which runs before the macrotask scheduled here.
    setImmediate(() => void this.life.finish(0));
    return {};
  }

  /** Aborts every turn, waits until their responses were written, and syncs the logs. */
  private async settleEverything(why: string): Promise<void> {
    this.shutdownReason = why;
    // A turn held by backpressure (the client stopped reading) must still see its abort.
    this.options.endpoint.releaseProducers();
    this.runtime?.abortAll(why);
    // Taken now: the field is cleared when that `initialize` settles, which may be during the
    // await below (one refused as already initialized settles at once).
    const initializing = this.initializing;
    if (initializing) {
      // An `initialize` still connecting MCP servers would hold this for up to their start-up
      // timeout, and then start a runtime no one can use: stop the servers now (their status
      // says so), and let its response go out before this one.
      await this.mcp?.close();
      await initializing.catch(() => undefined);
    }
    await Promise.allSettled([...this.prompts.values()]);
    await this.runtime?.settled();
    this.runtime?.closeAll();
    await this.mcp?.close();
  }

  /** stdin ended: no more requests; let what is in flight finish, then exit 0. */
  onInputEnd(): void {
    this.options.logger.debug("stdin ended; finishing in-flight requests");
    // No session/tool_result, session/permission or session/hook can come: what waits for one
    // ends now (and, through `inputEnded`, in a runtime an `initialize` under way builds later).
    const why = (this.inputEnded = "the client closed its input");
    void this.agent?.then((agent) => agent.runtime.closeClientWaits(why), () => undefined);
    void (async () => {
      if (this.unanswered > 0) await new Promise<void>((resolve) => (this.whenAllAnswered = resolve));
      if (this.life.phase === "exiting") return;
      await this.runtime?.settled();
      this.runtime?.closeAll();
      await this.mcp?.close();
      await this.life.finish(0);
    })();
  }

  /** stdout is gone (EPIPE): nobody is listening; abort everything and exit. */
  onOutputClosed(error: Error): void {
    this.options.logger.warn(`stdout closed (${(error as NodeJS.ErrnoException).code ?? error.message}); aborting everything`);
    this.life.stop();
    void this.settleEverything("stdout closed").finally(() => this.life.finish(0));
  }

  /**
   * The client is gone (its process died): nobody will read what is written, so abort every
   * turn (killing its tool processes), sync the logs and exit, waiting at most
   * `CLIENT_GONE_DRAIN_MS` for stdout.
   */
  onClientGone(why: string): void {
    if (this.life.phase === "exiting") return;
    this.options.logger.warn(`${why}; aborting everything`);
    this.life.stop();
    void this.settleEverything(why).finally(() => this.life.finish(0, CLIENT_GONE_DRAIN_MS));
  }

  /**
   * SIGTERM, SIGINT and SIGHUP (the terminal or the parent's session went away): like
   * `shutdown` without a response; exit 0, 130 and 129.
   */
  onSignal(signal: "SIGTERM" | "SIGINT" | "SIGHUP"): void {
    // Even when an exit is already under way (end of input, shutdown), the signal's code is
    // the one the process ends with, as long as it has not exited yet.
    const code = this.life.signalled(signal);
    if (this.life.phase === "exiting") return;
    this.options.logger.info(`${signal} received; shutting down`);
    this.life.stop();
    void this.settleEverything(`${signal} received`).finally(() => this.life.finish(code));
  }
}
