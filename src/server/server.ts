/**
 * The method handlers and the process lifecycle: `initialize`, `session/prompt`,
 * `session/cancel`, `shutdown`, and what end of input, a closed stdout and signals do.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { ErrorCode, RpcError } from "../protocol/errors.js";
import {
  PROTOCOL_VERSION,
  statusOf,
  type InitializeParams,
  type InitializeResult,
  type JsonObject,
  type PermissionMode,
  type SessionCancelResult,
  type SessionPromptResult,
} from "../protocol/types.js";
import type { ServerEndpoint } from "../transport/server-endpoint.js";
import type { Logger } from "../log.js";
import type { Redactor } from "../redact.js";
// Types only: the agent modules are loaded after `initialize` has answered (agent-modules.ts).
import type { AgentRuntime } from "../agent/runtime.js";
import { plainInitializeParams } from "../protocol/initialize-fast-path.js";
import { PROVIDERS } from "../providers/registry.js";
import { ProviderUnavailableError } from "../providers/types.js";
import { loadAgentModules, type AgentModules } from "./agent-modules.js";
import { buildSystemPrompt } from "./system-prompt.js";
import { defaultSessionRoot } from "../agent/session-root.js";
import { hideFromSandbox, sandboxStatusAtStart, type SandboxStatus } from "../tools/sandbox.js";

/** How long the process waits for stdout to drain before it exits anyway. */
export const DRAIN_DEADLINE_MS = 5_000;
/** The same when the client is known to be gone: what is still queued has no reader. */
export const CLIENT_GONE_DRAIN_MS = 500;

const PERMISSION_ORDER: PermissionMode[] = ["read-only", "workspace-write", "full"];

export interface ServerOptions {
  endpoint: ServerEndpoint;
  version: string;
  logger: Logger;
  env: NodeJS.ProcessEnv;
  /** Cleans the bridge's secrets out of session events (redact.ts); default: none. */
  redactor?: Redactor;
  /** Whether sessions are logged durably; `false` keeps them in memory only. */
  sessionLog: boolean;
  /**
   * Where session logs go when `sessionLog` is on; `undefined`: the store's default
   * (`defaultSessionRoot`, resolved with `env`, once the agent modules are loaded).
   */
  sessionRoot: string | undefined;
  /** Default `maxSteps` when `initialize` gives none. */
  defaultMaxSteps: number;
  /** The widest permission mode `initialize` may ask for. */
  permissionCeiling: PermissionMode;
  /** How deep subagents nest (1: children cannot start children). */
  subagentDepth: number;
  /** Ends the process; called once, after stdout drained or the drain deadline passed. */
  exit: (code: number) => void;
}

type Schemas = typeof import("../protocol/schemas.js");

/** The runtime of a successful `initialize`, with the modules it was built from. */
interface Agent {
  runtime: AgentRuntime;
  modules: AgentModules;
}

/** Exit codes after a signal: 128 + the signal's number, except SIGTERM's clean 0 (PROTOCOL.md). */
const SIGNAL_EXIT_CODES = { SIGTERM: 0, SIGINT: 130, SIGHUP: 129 } as const;

export class HarnessServer {
  /**
   * Set by a successful `initialize`; resolves once the agent modules are loaded and the
   * runtime is built, which happens after the `initialize` response was written.
   */
  private agent: Promise<Agent> | undefined;
  /** The runtime, as soon as `agent` has resolved (synchronous access for abort paths). */
  private runtime: AgentRuntime | undefined;
  /** The `initialize` in progress: session requests pipelined behind it wait for it. */
  private initializing: Promise<unknown> | undefined;
  /**
   * A `shutdown` (or a signal, or a closed stdout) arrived. Requests that arrived after it
   * are refused with -32003; those that arrived before run, as if the client had waited for
   * each answer, and a turn they start is aborted at once.
   */
  private shuttingDown = false;
  private exiting = false;
  /** The exit code a signal asked for: it wins over the 0 of an end of input racing it. */
  private signalExitCode: number | undefined;
  /**
   * A ref'd timer held while any request is unanswered: a turn that waits on nothing but its
   * abort signal (a hung model stream) must not let the event loop empty and the process exit
   * with the request unanswered, e.g. after stdin's EOF.
   */
  private keepAlive: NodeJS.Timeout | undefined;
  /**
   * The promise each in-flight prompt handed to the transport, by session. Whoever awaits one
   * of these registers after the transport did, so its continuation runs after the prompt's
   * response was written: that is how cancel and shutdown answer after the prompts they end.
   */
  private readonly prompts = new Map<string, Promise<unknown>>();
  private readonly pending = new Set<Promise<unknown>>();
  private schemas: Promise<Schemas> | undefined;

  constructor(private readonly options: ServerOptions) {}

  /** The transport's request handler. */
  readonly handle = (method: string, params: JsonObject | undefined): Promise<unknown> => {
    const result = this.dispatch(method, params);
    this.pending.add(result);
    this.keepAlive ??= setInterval(() => undefined, 2 ** 30);
    const sessionId = method === "session/prompt" && typeof params?.sessionId === "string" ? params.sessionId : undefined;
    // A prompt refused as busy must not take the place of the one in flight.
    if (sessionId !== undefined && !this.prompts.has(sessionId)) this.prompts.set(sessionId, result);
    const forget = () => {
      this.pending.delete(result);
      if (this.pending.size === 0 && this.keepAlive) {
        clearInterval(this.keepAlive);
        this.keepAlive = undefined;
      }
      if (sessionId !== undefined && this.prompts.get(sessionId) === result) this.prompts.delete(sessionId);
    };
    result.then(forget, forget);
    return result;
  };

  private dispatch(method: string, params: JsonObject | undefined): Promise<unknown> {
    if (this.shuttingDown) {
      return Promise.reject(new RpcError(ErrorCode.ShuttingDown, `shutting down: ${method} was not run`, { kind: "shutting-down" }));
    }
    switch (method) {
      case "initialize":
        return this.initialize(params);
      case "session/prompt":
        return this.prompt(params);
      case "session/cancel":
        return this.cancel(params);
      case "shutdown":
        return this.shutdown();
      default:
        return Promise.reject(
          new RpcError(ErrorCode.MethodNotFound, `method not found: ${method} (known: initialize, session/prompt, session/cancel, shutdown)`, {
            kind: "method-not-found",
          }),
        );
    }
  }

  private async validate<K extends "initializeParamsSchema" | "sessionPromptParamsSchema" | "sessionCancelParamsSchema">(
    schema: K,
    params: JsonObject | undefined,
  ) {
    const schemas = await this.loadSchemas();
    const parsed = schemas[schema].safeParse(params ?? {});
    if (!parsed.success) {
      throw new RpcError(ErrorCode.InvalidParams, `invalid params: ${schemas.describeIssues(parsed.error)}`, { kind: "invalid-params" });
    }
    return parsed.data as ReturnType<Schemas[K]["parse"]>;
  }

  /** zod and the schemas: loaded after `initialize` answered (or by an `initialize` that needs them), not at start-up. */
  private loadSchemas(): Promise<Schemas> {
    this.schemas ??= import("../protocol/schemas.js");
    return this.schemas;
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

  private initializeOnce(raw: JsonObject | undefined): Promise<InitializeResult> {
    if (this.agent) {
      return Promise.reject(
        new RpcError(ErrorCode.NotInitialized, "already initialized: initialize may succeed once per process", { kind: "already-initialized" }),
      );
    }
    return this.initializeRuntime(raw);
  }

  private async initializeRuntime(raw: JsonObject | undefined): Promise<InitializeResult> {
    {
      // Plainly valid params skip zod (see initialize-fast-path.ts); anything else gets the schema's verdict and wording.
      const params: InitializeParams = plainInitializeParams(raw ?? {}) ?? (await this.validate("initializeParamsSchema", raw));
      const factory = PROVIDERS.get(params.provider);
      if (!factory) {
        throw new RpcError(ErrorCode.InvalidParams, `invalid params: params.provider: unknown provider '${params.provider}' (registered: ${[...PROVIDERS.keys()].join(", ")})`, {
          kind: "unknown-provider",
          providers: [...PROVIDERS.keys()],
        });
      }
      const workspace = path.resolve(params.cwd);
      if (!fs.statSync(workspace, { throwIfNoEntry: false })?.isDirectory()) {
        throw new RpcError(ErrorCode.InvalidParams, `invalid params: params.cwd: ${workspace} is not a directory`, { kind: "invalid-params" });
      }
      if (params.tools) {
        // Only a client that narrows the tools pays for loading them before the response.
        const { BUILTIN_TOOLS } = (await loadAgentModules()).tools;
        const unknown = params.tools.filter((name) => !BUILTIN_TOOLS.some((t) => t.name === name));
        if (unknown.length > 0) {
          throw new RpcError(
            ErrorCode.InvalidParams,
            `invalid params: params.tools: unknown tool ${unknown.map((n) => `'${n}'`).join(", ")} (built-in: ${BUILTIN_TOOLS.map((t) => t.name).join(", ")})`,
            { kind: "invalid-params" },
          );
        }
      }
      const permissionMode = this.narrowPermission(params.permissionMode);
      // What confines bash, as far as start-up can tell (no process started); the real probe
      // runs after the response (below). The session logs are hidden from sandboxed commands.
      if (this.options.sessionLog) hideFromSandbox(this.options.sessionRoot ?? defaultSessionRoot(this.options.env));
      const bashOffered = !params.tools || params.tools.includes("bash");
      const sandbox: SandboxStatus = bashOffered
        ? sandboxStatusAtStart(permissionMode, this.options.env)
        : { bash: "none", reason: "bash is not among the tools offered" };
      let provider;
      try {
        provider = await factory.create({ model: params.model, cwd: workspace, env: this.options.env });
      } catch (error) {
        if (error instanceof ProviderUnavailableError) {
          throw new RpcError(ErrorCode.ProviderUnavailable, `provider unavailable: ${error.message}`, { kind: "provider-unavailable", provider: params.provider });
        }
        throw error;
      }
      const { sink } = this;
      const { sessionLog, sessionRoot, env, defaultMaxSteps, subagentDepth, logger } = this.options;
      // setImmediate: the loading starts after the transport has written this response (it does
      // so in a promise reaction, which runs before any macrotask), so the agent modules are
      // never on the spawn → initialize path, and are ready by the time a first prompt arrives.
      const agent = new Promise<void>((resolve) => setImmediate(resolve))
        .then(() => {
          if (bashOffered && permissionMode === "workspace-write") {
            // The real probe of the sandbox, ready before the first bash call needs it.
            void import("../tools/sandbox-probe.js").then(({ probeSandbox }) => probeSandbox(fs.realpathSync(workspace), this.options.env)).catch(() => undefined);
          }
          return Promise.all([loadAgentModules(), this.loadSchemas()]);
        })
        .then(([modules]): Agent => {
          const runtime = new modules.runtime.AgentRuntime({
            workspace,
            provider,
            model: params.model,
            system: buildSystemPrompt(workspace, permissionMode, params.instructions),
            maxSteps: params.maxSteps ?? defaultMaxSteps,
            maxTokens: params.maxTokens,
            permissionMode,
            tools: modules.tools.toolsFor(permissionMode, params.tools),
            subagentDepth,
            store: sessionLog ? new modules.store.SessionStore(sessionRoot ?? modules.store.defaultSessionRoot(env), workspace) : undefined,
            sink,
            logger,
            redactor: this.options.redactor,
          });
          this.runtime = runtime;
          return { runtime, modules };
        });
      // A failure here surfaces on the requests that need the runtime, not as an unhandled rejection.
      agent.catch(() => undefined);
      this.agent = agent;
      this.options.logger.info(`initialized: provider ${params.provider}, model ${params.model}, workspace ${workspace}, permission ${permissionMode}`);
      return {
        serverInfo: { name: "harness-bridge", version: this.options.version },
        protocolVersion: PROTOCOL_VERSION,
        providers: [...PROVIDERS.keys()],
        sandbox,
      };
    }
  }

  private narrowPermission(requested: PermissionMode | undefined): PermissionMode {
    const ceiling = this.options.permissionCeiling;
    const wanted = requested ?? (ceiling === "full" ? "workspace-write" : ceiling);
    if (PERMISSION_ORDER.indexOf(wanted) <= PERMISSION_ORDER.indexOf(ceiling)) return wanted;
    this.options.logger.warn(`permissionMode '${wanted}' is wider than the --permission-mode ceiling '${ceiling}'; using '${ceiling}'`);
    return ceiling;
  }

  private get sink() {
    const { endpoint } = this.options;
    return {
      sessionEvent: (sessionId: string, event: import("../protocol/types.js").SessionEvent) => endpoint.notify("session.event", { sessionId, event }),
      subagentStarted: (params: import("../protocol/types.js").SubagentStartedNotification) => endpoint.notify("subagent.started", params),
      subagentFinished: (params: import("../protocol/types.js").SubagentFinishedNotification) => endpoint.notify("subagent.finished", params),
    };
  }

  /** The runtime, once an `initialize` sent before this request has finished. */
  private async requireRuntime(method: string): Promise<Agent> {
    if (this.initializing) await this.initializing.catch(() => undefined);
    if (!this.agent) {
      throw new RpcError(ErrorCode.NotInitialized, `not initialized: send initialize before ${method}`, { kind: "not-initialized" });
    }
    return this.agent;
  }

  private async prompt(raw: JsonObject | undefined): Promise<SessionPromptResult> {
    const { runtime, modules } = await this.requireRuntime("session/prompt");
    const { SessionBusyError, MissingTurnEndError } = modules.runtime;
    const { SessionLogError } = modules.store;
    const params = await this.validate("sessionPromptParamsSchema", raw);
    // From here to the registration below nothing awaits, so overlap is decided at once.
    let settled: Promise<import("../protocol/types.js").TurnEndReason>;
    try {
      settled = runtime.prompt(params.sessionId, params.contentBlocks);
      // This prompt arrived before the shutdown (see `shuttingDown`) but starts after it: it
      // runs and is aborted like every turn the shutdown found in flight.
      if (this.shuttingDown) runtime.abortAll(this.shutdownReason);
    } catch (error) {
      if (error instanceof SessionBusyError) throw new RpcError(ErrorCode.SessionBusy, error.message, { kind: "session-busy", sessionId: params.sessionId });
      if (error instanceof SessionLogError) throw new RpcError(ErrorCode.InternalError, error.message, { kind: "session-log" });
      throw error;
    }
    try {
      const reason = await settled;
      return { status: statusOf(reason), reason };
    } catch (error) {
      if (error instanceof MissingTurnEndError) throw new RpcError(ErrorCode.InternalError, error.message, { kind: "missing-turn-end" });
      throw error;
    }
  }

  private async cancel(raw: JsonObject | undefined): Promise<SessionCancelResult> {
    const { runtime } = await this.requireRuntime("session/cancel");
    const params = await this.validate("sessionCancelParamsSchema", raw);
    const answer = this.prompts.get(params.sessionId);
    const cancelled = await runtime.cancel(params.sessionId);
    // See `prompts`: this puts the cancel response after the cancelled prompt's response.
    if (cancelled && answer) await answer.catch(() => undefined);
    return { cancelled };
  }

  /** Why turns are being aborted, once `shuttingDown` is set. */
  private shutdownReason = "shutdown requested";

  private async shutdown(): Promise<Record<string, never>> {
    this.shuttingDown = true;
    await this.settleEverything("shutdown requested");
    // Exit once the response itself is on its way: the transport writes it in a reaction to
    // this promise, which runs before the macrotask scheduled here.
    setImmediate(() => void this.finish(0));
    return {};
  }

  /** Aborts every turn, waits until their responses were written, and syncs the logs. */
  private async settleEverything(why: string): Promise<void> {
    this.shutdownReason = why;
    // A turn held by backpressure (the client stopped reading) must still see its abort.
    this.options.endpoint.releaseProducers();
    this.runtime?.abortAll(why);
    await Promise.allSettled([...this.prompts.values()]);
    await this.runtime?.settled();
    this.runtime?.closeAll();
  }

  /** stdin ended: no more requests; let what is in flight finish, then exit 0. */
  onInputEnd(): void {
    this.options.logger.debug("stdin ended; finishing in-flight requests");
    void (async () => {
      while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
      if (this.exiting) return;
      await this.runtime?.settled();
      this.runtime?.closeAll();
      await this.finish(0);
    })();
  }

  /** stdout is gone (EPIPE): nobody is listening; abort everything and exit. */
  onOutputClosed(error: Error): void {
    this.options.logger.warn(`stdout closed (${(error as NodeJS.ErrnoException).code ?? error.message}); aborting everything`);
    this.shuttingDown = true;
    void this.settleEverything("stdout closed").finally(() => this.finish(0));
  }

  /**
   * The client is gone (its process died): nobody will read what is written, so abort every
   * turn (killing its tool processes), sync the logs and exit, waiting at most
   * `CLIENT_GONE_DRAIN_MS` for stdout.
   */
  onClientGone(why: string): void {
    if (this.exiting) return;
    this.options.logger.warn(`${why}; aborting everything`);
    this.shuttingDown = true;
    void this.settleEverything(why).finally(() => this.finish(0, CLIENT_GONE_DRAIN_MS));
  }

  /**
   * SIGTERM, SIGINT and SIGHUP (the terminal or the parent's session went away): like
   * `shutdown` without a response; exit 0, 130 and 129.
   */
  onSignal(signal: "SIGTERM" | "SIGINT" | "SIGHUP"): void {
    // Even when an exit is already under way (end of input, shutdown), the signal's code is
    // the one the process ends with, as long as it has not exited yet.
    this.signalExitCode ??= SIGNAL_EXIT_CODES[signal];
    if (this.exiting) return;
    this.options.logger.info(`${signal} received; shutting down`);
    this.shuttingDown = true;
    void this.settleEverything(`${signal} received`).finally(() => this.finish(SIGNAL_EXIT_CODES[signal]));
  }

  private async finish(code: number, drainMs = DRAIN_DEADLINE_MS): Promise<void> {
    if (this.exiting) return;
    this.exiting = true;
    if (this.keepAlive) clearInterval(this.keepAlive);
    this.options.endpoint.close();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        this.options.logger.warn(`stdout did not drain within ${drainMs} ms; exiting anyway`);
        resolve();
      }, drainMs);
    });
    await Promise.race([this.options.endpoint.flush(), deadline]);
    clearTimeout(timer);
    // A signal already delivered is handled by the event loop's next poll: let it run, so its
    // exit code is not lost to an end of input that was read in the same turn.
    await new Promise<void>((resolve) => setTimeout(resolve, 0));
    this.options.exit(this.signalExitCode ?? code);
  }
}
