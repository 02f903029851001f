/**
 * `initialize`: checks the params, builds the provider, narrows the permission mode under the
 * command line's ceiling and reports the sandbox — all before the response, with no agent
 * module loaded — then, after the response, loads the agent modules and builds the runtime.
 *
 * Nothing here imports the agent modules statically (see agent-modules.ts): they load behind
 * a `setImmediate`, after the transport has written the response.
 */
import { isUtf8 } from "node:buffer";
import { realpathSync } from "node:fs";
import * as path from "node:path";
import { ErrorCode, RpcError } from "../protocol/errors.js";
import { plainInitializeParams } from "../protocol/initialize-fast-path.js";
import type { ClientToolSpec } from "../protocol/types.js";
import { PERMISSION_MODES, PROTOCOL_VERSION, type InitializeParams, type InitializeResult, type JsonObject, type PermissionMode } from "../protocol/types.js";
import { PROVIDERS } from "../providers/registry.js";
import { ProviderSettingError, ProviderUnavailableError } from "../providers/types.js";
import type { Logger } from "../log.js";
import type { Redactor } from "../redact.js";
import { defaultSessionRoot } from "../agent/store/root.js";
// Types only: the runtime loads after the response (agent-modules.ts).
import type { AgentRuntime, RuntimeSink } from "../agent/runtime.js";
import { hideFromSandbox } from "../sandbox/hidden.js";
import { resolvedPath } from "../normal-path.js";
import { initialSandboxStatus } from "../sandbox/probe.js";
import type { SandboxStatus } from "../sandbox/status.js";
import { loadAgentModules, type AgentModules } from "./agent-modules.js";
import { loadMcp } from "./mcp-loader.js";
import { checkWorkspace } from "./workspace-access.js";
import { tracerFor } from "./tracing-loader.js";
import { buildSystemPrompt } from "./system-prompt.js";
import { loadPackages } from "../tools/packages-loader.js";
import { runtimeInfo } from "../version.js";

/** The runtime of a successful `initialize`, with the modules it was built from. */
export interface Agent {
  runtime: AgentRuntime;
  modules: AgentModules;
  /** The absolute folder of this workspace's session logs (`session/list` reports it); none without a session log. */
  logFolder?: string;
}

/** The process's settings, from the command line and the environment (cli.ts). */
export interface ProcessSettings {
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
}

/** What `initialize` needs of the server: the process's settings and how to reach the client. */
export interface InitializeSettings extends ProcessSettings {
  sink: RuntimeSink;
  /** Validates against the zod schema (loading it); throws the -32602 RpcError. */
  validate(raw: JsonObject | undefined): Promise<InitializeParams>;
  /** Starts loading what prompts will need besides the agent modules (the schemas). */
  preload(): Promise<unknown>;
  /**
   * Handed the MCP servers before they connect, so a shutdown that arrives while `initialize`
   * waits for them can stop them (server.ts); the server closes them when the process ends.
   */
  onMcpServers?(servers: McpServersHandle): void;
}

/** What the server needs of the MCP servers (mcp/index.ts): stopping them. */
export interface McpServersHandle {
  close(): Promise<void>;
}

/** A successful `initialize`: the response now, the agent once its modules have loaded. */
export interface Initialized {
  result: InitializeResult;
  agent: Promise<Agent>;
}

/** Runs one `initialize`: resolves with the response and the agent to come, or throws the RpcError to answer. */
export async function initialize(raw: JsonObject | undefined, settings: InitializeSettings): Promise<Initialized> {
  // Plainly valid params skip zod (see initialize-fast-path.ts); anything else gets the schema's verdict and wording.
  const params: InitializeParams = plainInitializeParams(raw ?? {}) ?? (await settings.validate(raw));
  const factory = PROVIDERS.get(params.provider);
  if (!factory) {
    throw new RpcError(ErrorCode.InvalidParams, `invalid params: params.provider: unknown provider '${params.provider}' (registered: ${[...PROVIDERS.keys()].join(", ")})`, {
      kind: "unknown-provider",
      providers: [...PROVIDERS.keys()],
    });
  }
  const workspace = resolvedPath(params.cwd);
  checkWorkspace(workspace);
  // A link to a folder whose name is not valid UTF-8: every path the bridge makes of it as text
  // (its real path, the sandbox's rules, the checkpoints' root) would name the folder of U+FFFD
  // beside it, and the tools would work in two places. Asked as bytes, once.
  const real = realpathSync.native(workspace, { encoding: "buffer" });
  if (!isUtf8(real)) {
    const why = "leads to a folder whose path is not valid UTF-8, which the bridge cannot name";
    throw new RpcError(ErrorCode.InvalidParams, `invalid params: params.cwd: ${workspace} ${why}; rename the folder, or pass one whose real path is valid UTF-8`, { kind: "invalid-params" });
  }
  if (params.tools) await checkToolNames(params.tools);
  if (params.clientTools) await checkClientTools(params.clientTools);
  const { env, logger } = settings;
  const permissionMode = narrowPermission(params.permissionMode, settings.permissionCeiling, logger);
  // What confines bash: bubblewrap as far as start-up can tell (no process started), else the
  // Landlock probe's answer; the real probe runs after the response (below). The session logs
  // are hidden from sandboxed commands.
  if (settings.sessionLog) hideFromSandbox(settings.sessionRoot ?? defaultSessionRoot(env));
  const bashOffered = !params.tools || params.tools.includes("bash");
  const sandbox: SandboxStatus = bashOffered ? await initialSandboxStatus(permissionMode, workspace, env) : { bash: "none", reason: "bash is not among the tools offered" };
  let provider;
  try {
    provider = await factory.create({
      model: params.model,
      cwd: workspace,
      env,
      logger,
      thinking: params.thinking,
      reasoningEffort: params.reasoningEffort,
      user: params.user,
      toolChoice: params.toolChoice,
      firstTokenTimeoutMs: params.firstTokenTimeoutMs,
      requestTimeoutMs: params.modelRequestTimeoutMs,
    });
  } catch (error) {
    if (error instanceof ProviderSettingError) {
      throw new RpcError(ErrorCode.InvalidParams, `invalid params: params.${error.field}: ${error.message}`, { kind: "invalid-params" });
    }
    if (error instanceof ProviderUnavailableError) {
      throw new RpcError(ErrorCode.ProviderUnavailable, `provider unavailable: ${error.message}`, { kind: "provider-unavailable", provider: params.provider });
    }
    throw error;
  }
  // MCP servers: all connected (or failed) before the response, as PROTOCOL.md fixes; the MCP
  // client is loaded only here (mcp-loader.ts). `{}` asks for the addition and gets `[]`.
  let mcpServers: InitializeResult["mcpServers"];
  let mcp: import("../mcp/index.js").McpServers | undefined;
  if (params.mcpServers && Object.keys(params.mcpServers).length > 0) {
    const { McpServers } = await loadMcp();
    // re2js for the output schemas' patterns comes from this bundle's packages chunk: the MCP chunk holds no copy of it.
    const loadRe2 = () => loadPackages().then((packages) => packages.re2js);
    mcp = new McpServers(params.mcpServers, { workspace, env, logger, version: settings.version, loadRe2 });
    settings.onMcpServers?.(mcp);
    mcpServers = await mcp.start();
  } else if (params.mcpServers) {
    mcpServers = [];
  }
  const mcpTools = mcp ? mcp.tools.bind(mcp, permissionMode) : undefined;
  // setImmediate: the loading starts after the transport has written the response (it does so
  // in a promise reaction, which runs before any macrotask), so the agent modules are never on
  // the spawn → initialize path, and are ready by the time a first prompt arrives.
  const agent = new Promise<void>((resolve) => setImmediate(resolve))
    .then(() => {
      if (bashOffered && permissionMode === "workspace-write") {
        // The real probe of the sandbox, ready before the first bash call needs it.
        void import("../sandbox/probe.js").then(({ chooseSandbox }) => chooseSandbox(real.toString("utf8"), env)).catch(() => undefined);
      }
      // The tracer only when an OTEL variable asks for it (tracing-loader.ts): otherwise undefined, nothing loaded.
      return Promise.all([loadAgentModules(), settings.preload(), tracerFor(env, settings.version, logger, settings.redactor)]);
    })
    .then(([modules, , tracer]): Agent => {
      const store = settings.sessionLog ? new modules.store.SessionStore(settings.sessionRoot ?? modules.store.defaultSessionRoot(env), workspace) : undefined;
      const runtime = new modules.runtime.AgentRuntime({
        workspace,
        provider,
        model: params.model,
        system: buildSystemPrompt(workspace, permissionMode, params.instructions),
        maxSteps: params.maxSteps ?? settings.defaultMaxSteps,
        maxTokens: params.maxTokens,
        permissionMode,
        tools: modules.tools.toolsFor(permissionMode, params.tools, params.clientTools),
        subagentDepth: settings.subagentDepth,
        store,
        sink: settings.sink,
        logger,
        redactor: settings.redactor,
        // Client tools and approvals
        approvals: params.approvals,
        clientToolTimeoutMs: params.clientToolTimeoutMs,
        // MCP servers
        moreTools: mcpTools,
        explainUnknownTool: mcp ? mcp.explain.bind(mcp, permissionMode) : undefined,
        // Compaction
        contextWindow: params.contextWindow,
        compactAt: params.compactAt,
        // Turn control
        prices: params.prices,
        // Hooks
        hooks: params.hooks,
        // Tracing
        tracer,
      });
      return store ? { runtime, modules, logFolder: path.resolve(store.directory) } : { runtime, modules };
    });
  logger.info(`initialized: provider ${params.provider}, model ${params.model}, workspace ${workspace}, permission ${permissionMode}`);
  return {
    result: { serverInfo: { name: "harness-bridge", version: settings.version, runtime: runtimeInfo() }, protocolVersion: PROTOCOL_VERSION, providers: [...PROVIDERS.keys()], sandbox, ...(mcpServers ? { mcpServers } : {}) },
    agent,
  };
}

/** Refuses tool names that are not built in. Only a client that narrows the tools pays for loading them before the response. */
async function checkToolNames(names: string[]): Promise<void> {
  const { BUILTIN_TOOLS } = (await loadAgentModules()).tools;
  const unknown = names.filter((name) => !BUILTIN_TOOLS.some((t) => t.name === name));
  if (unknown.length === 0) return;
  throw new RpcError(
    ErrorCode.InvalidParams,
    `invalid params: params.tools: unknown tool ${unknown.map((n) => `'${n}'`).join(", ")} (built-in: ${BUILTIN_TOOLS.map((t) => t.name).join(", ")})`,
    { kind: "invalid-params" },
  );
}

/** Refuses client tools whose names collide (tools/registry.ts); a client that offers tools pays for loading the tools before the response. */
async function checkClientTools(specs: ClientToolSpec[]): Promise<void> {
  const problem = (await loadAgentModules()).tools.clientToolsProblem(specs);
  if (problem) throw new RpcError(ErrorCode.InvalidParams, `invalid params: ${problem}`, { kind: "invalid-params" });
}

/**
 * The mode a session gets: the one asked for, or the default (`workspace-write`, or the
 * ceiling when that is narrower), never wider than `--permission-mode` (the ceiling).
 */
export function narrowPermission(requested: PermissionMode | undefined, ceiling: PermissionMode, logger: Logger): PermissionMode {
  const wanted = requested ?? (ceiling === "full" ? "workspace-write" : ceiling);
  if (PERMISSION_MODES.indexOf(wanted) <= PERMISSION_MODES.indexOf(ceiling)) return wanted;
  logger.warn(`permissionMode '${wanted}' is wider than the --permission-mode ceiling '${ceiling}'; using '${ceiling}'`);
  return ceiling;
}
