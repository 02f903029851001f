/**
 * One MCP server: its connection (the SDK's Client over our stdio or streamable HTTP transport),
 * its tools as offered, and what each failure turns into. Nothing here throws at a caller: a
 * start that fails is a `failed` status, a call that fails is an error output the model reads.
 *
 * - Start: connect + MCP `initialize` + `tools/list` (every page), all within `startupTimeoutMs`.
 * - A call: `tools/call` with `toolTimeoutMs`; its timeout and the turn's abort signal both make
 *   the SDK send `notifications/cancelled` for the request, and the call ends at once.
 * - `notifications/tools/list_changed`: the tools are listed again; a turn that starts after the
 *   notification arrived waits for the new list (within `toolTimeoutMs`) and is offered it; a
 *   turn keeps the tools it started with.
 * - A stdio server that exited (crashed, killed) is started again by the next call, once per
 *   bridge process; after that its calls are errors. HTTP servers have no process to restart:
 *   each call is tried on the connection as it is.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { CallToolResultSchema, ErrorCode, McpError, ResultSchema, ToolListChangedNotificationSchema, type Tool } from "@modelcontextprotocol/sdk/types.js";
import * as path from "node:path";
import type { Logger } from "../log.js";
import { DEFAULT_MCP_STARTUP_TIMEOUT_MS, DEFAULT_MCP_TOOL_TIMEOUT_MS, type McpServerConfig, type McpServerStatus } from "../protocol/mcp-types.js";
import type { JsonObject } from "../protocol/types.js";
import { commandEnv } from "../sandbox/command-env.js";
import type { ToolOutput } from "../tools/types.js";
import { HttpTransport, httpTransport } from "./http-transport.js";
import { offerTools, type ListedTool, type OfferedTool } from "./names.js";
import { LazyOutputValidator, ready as outputValidatorReady } from "./output-validator.js";
import { toToolOutput } from "./results.js";
import { cacheListedTools, listToolPage } from "./tool-list.js";
import { ProcessGroupTransport } from "./stdio-transport.js";

/** Pages of `tools/list` read at most (a server paging forever must not hold the start). */
const MAX_LIST_PAGES = 20;
/** Tools of one server read at most, over its pages (`MAX_TOOLS_PER_SERVER` of them are offered). */
export const MAX_LISTED_TOOLS = 1024;
/** Left-out tools named in the log line of one listing; the rest are counted. */
const MAX_NOTES_LOGGED = 20;

export interface ConnectionContext {
  workspace: string;
  /** The bridge's environment; a stdio server gets it less its secrets, plus its own `env`. */
  env: NodeJS.ProcessEnv;
  logger: Logger;
  version: string;
  /** Loads re2js, for the output schemas' patterns (output-validator.ts). */
  loadRe2: () => Promise<unknown>;
  /** Called when the offered tools changed (tools/list_changed, a restart). */
  onToolsChanged: () => void;
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
const errorOutput = (text: string): ToolOutput => ({ content: [{ type: "text", text }], isError: true });
const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error)).slice(0, 2000);

export class McpConnection {
  tools: OfferedTool[] = [];
  leftOut: string[] = [];
  /** The notes of the tools left out, by the name each would have had (names.ts offerTools). */
  withheld = new Map<string, string[]>();
  /** Each offered name and the server tool it ran, over this connection's lists: never silently remapped (names.ts). */
  private readonly boundNames = new Map<string, string>();
  private client: Client | undefined;
  private transport: Transport | undefined;
  /** Whether the connection is up; a closed one is restarted (stdio, once) by the next call. */
  private alive = false;
  private failure: string | undefined;
  private restarted = false;
  private closed = false;
  private starting: Promise<void> | undefined;
  private refreshing: Promise<void> | undefined;
  private refreshAgain = false;
  private readonly startupTimeoutMs: number;
  private readonly toolTimeoutMs: number;

  constructor(
    readonly name: string,
    private readonly config: McpServerConfig,
    private readonly context: ConnectionContext,
  ) {
    this.startupTimeoutMs = config.startupTimeoutMs ?? DEFAULT_MCP_STARTUP_TIMEOUT_MS;
    this.toolTimeoutMs = config.toolTimeoutMs ?? DEFAULT_MCP_TOOL_TIMEOUT_MS;
  }

  get isStdio(): boolean {
    return "command" in this.config;
  }

  status(): McpServerStatus {
    if (this.alive) return { name: this.name, status: "connected", tools: this.tools.map((t) => t.name) };
    return { name: this.name, status: "failed", tools: [], error: this.failed };
  }

  /** Connects and lists the tools; resolves when done or failed (see `status`). */
  start(): Promise<void> {
    this.starting ??= this.connect().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private async connect(): Promise<void> {
    const { logger, version } = this.context;
    if (this.closed) {
      this.failure = "the bridge shut down before it connected";
      return;
    }
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), this.startupTimeoutMs);
    const transport = this.makeTransport();
    const client = new Client({ name: "harness-bridge", version }, { capabilities: {}, jsonSchemaValidator: new LazyOutputValidator() });
    client.onclose = () => {
      // A close while connecting is the start's failure (below); one after `close()` is ours.
      if (this.client !== client || !this.alive || this.closed) return;
      this.alive = false;
      // Described when read (`failed`): the exit status may trail the closed pipe.
      this.failure = undefined;
      void this.settled(transport).then(() => logger.warn(`MCP server ${this.name}: ${this.failed}`));
    };
    client.onerror = (error) => logger.debug(() => `MCP server ${this.name}: ${messageOf(error)}`);
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.refresh(client));
    this.client = client;
    this.transport = transport;
    try {
      await client.connect(transport, { signal: deadline.signal, timeout: this.startupTimeoutMs });
      const listed = await this.listTools(client, deadline.signal, this.startupTimeoutMs);
      if (this.closed) throw new Error("the bridge shut down while it connected");
      this.setTools(listed);
      this.alive = true;
      this.failure = undefined;
      logger.info(`MCP server ${this.name}: connected, ${this.tools.length} tools`);
    } catch (error) {
      this.alive = false;
      // A server that died at start shows it by its exit, which may trail the failed write (EPIPE).
      if (!deadline.signal.aborted) await this.settled(transport);
      this.failure = this.closed
        ? "the bridge shut down while it connected"
        : deadline.signal.aborted
          ? `did not finish starting within ${this.startupTimeoutMs} ms (startupTimeoutMs)`
          : this.exitDescription(transport, `could not start: ${messageOf(error)}`);
      logger.warn(`MCP server ${this.name}: ${this.failure}`);
      await transport.close().catch(() => undefined);
    } finally {
      clearTimeout(timer);
    }
  }

  private makeTransport(): Transport {
    const config = this.config;
    if (!("command" in config)) return httpTransport(config, this.context.logger);
    const { workspace, env, logger } = this.context;
    return new ProcessGroupTransport({
      command: config.command,
      args: config.args ?? [],
      cwd: path.resolve(workspace, config.cwd ?? "."),
      env: { ...commandEnv(env), ...config.env },
      onStderr: (line) => logger.debug(() => `MCP server ${this.name} stderr: ${line}`),
    });
  }

  /** Why the server is not connected. */
  private get failed(): string {
    return this.failure ?? (this.transport ? this.exitDescription(this.transport, "closed the connection") : "not connected");
  }

  /** Resolves once a stdio server's exit is known (at most a second after its pipe closed). */
  private async settled(transport: Transport): Promise<void> {
    if (transport instanceof ProcessGroupTransport) await Promise.race([transport.exited, delay(1000)]);
  }

  /** What a closed stdio server left to say (exit status, the end of its stderr); `fallback` otherwise. */
  private exitDescription(transport: Transport, fallback: string): string {
    // The bridge's own reason for ending it comes before the signal it sent.
    const stopped = transport instanceof ProcessGroupTransport || transport instanceof HttpTransport ? transport.closedBecause : undefined;
    if (stopped) return `was stopped by the bridge: ${stopped}`;
    if (!(transport instanceof ProcessGroupTransport) || !transport.exit) return fallback;
    const { code, signal } = transport.exit;
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    return `${how}${transport.stderr ? `; its stderr ended with: ${transport.stderr.slice(-500)}` : ""}`;
  }

  /**
   * The server's tools, every page, up to `MAX_LISTED_TOOLS` (`unread`: whether it listed more).
   * A server listing hundreds of thousands must not make the bridge hold them all, nor fail
   * with a stack overflow: a page is copied one tool at a time (tool-list.ts reads each entry).
   */
  private async listTools(client: Client, signal: AbortSignal | undefined, timeout: number): Promise<{ tools: ListedTool[]; unread: boolean }> {
    const tools: ListedTool[] = [];
    const valid: Tool[] = [];
    let cursor: string | undefined;
    let unread = false;
    for (let page = 0; page < MAX_LIST_PAGES && !unread; page++) {
      const result = await listToolPage(client, cursor, { signal, timeout }, MAX_LISTED_TOOLS - tools.length);
      unread = result.unread;
      for (const tool of result.tools) tools.push(tool);
      for (const tool of result.valid) valid.push(tool);
      cursor = result.nextCursor;
      if (cursor === undefined) break;
    }
    cacheListedTools(client, valid);
    return { tools, unread };
  }

  private setTools({ tools: listed, unread }: { tools: ListedTool[]; unread: boolean }): void {
    const { tools, leftOut, withheld } = offerTools(this.name, listed, this.boundNames);
    if (unread) leftOut.push(`every tool past the first ${MAX_LISTED_TOOLS} listed (not read)`);
    this.withheld = withheld;
    this.tools = tools;
    this.leftOut = leftOut;
    if (leftOut.length > 0) {
      const shown = leftOut.length > MAX_NOTES_LOGGED ? [...leftOut.slice(0, MAX_NOTES_LOGGED), `and ${leftOut.length - MAX_NOTES_LOGGED} more`] : leftOut;
      this.context.logger.warn(`MCP server ${this.name}: tools left out: ${shown.join(", ")}`);
    }
    this.context.onToolsChanged();
  }

  /**
   * tools/list_changed: list again; a failure keeps the tools as they were. Notifications that
   * come while a listing runs make one more listing after it, not one each (a server sending
   * them in a loop costs one request at a time).
   */
  private refresh(client: Client): void {
    if (this.refreshing) {
      this.refreshAgain = true;
      return;
    }
    this.refreshing = (async () => {
      try {
        do {
          this.refreshAgain = false;
          await this.refreshOnce(client);
        } while (this.refreshAgain && this.client === client && !this.closed);
      } finally {
        this.refreshing = undefined;
      }
    })();
  }

  /** Resolves once no listing runs: a turn that starts after a tools/list_changed sees its outcome. */
  listed(): Promise<void> {
    return this.refreshing ?? Promise.resolve();
  }

  private async refreshOnce(client: Client): Promise<void> {
    try {
      const listed = await this.listTools(client, undefined, this.toolTimeoutMs);
      if (this.client !== client || this.closed) return;
      this.setTools(listed);
      this.context.logger.info(`MCP server ${this.name}: tool list changed, now ${this.tools.length} tools`);
    } catch (error) {
      this.context.logger.warn(`MCP server ${this.name}: could not list its tools again: ${messageOf(error)}`);
    }
  }

  /** Runs one tool call; never rejects. */
  async call(tool: OfferedTool, args: JsonObject, signal: AbortSignal): Promise<ToolOutput> {
    const label = `the MCP server ${this.name}`;
    if (this.closed) return errorOutput(`${label} is closed: the bridge is shutting down`);
    if (this.starting) await this.starting;
    if (!this.alive) {
      if (!this.isStdio || this.restarted) return errorOutput(`${label} is not available (${this.failed}); its tools cannot run`);
      this.restarted = true;
      this.context.logger.info(`MCP server ${this.name}: restarting it for a call (once)`);
      await this.start();
      if (!this.alive) return errorOutput(`${label} stopped (${this.failed}) and could not be restarted; its tools cannot run`);
    }
    const client = this.client!;
    const transport = this.transport!;
    // The SDK adds an abort listener to the signal it is given and never removes it: given the
    // turn's signal, every finished call of the turn stayed listed (its request with it), and a
    // cancel of the turn then sent notifications/cancelled for each. A signal of this call's
    // own, which follows the turn's only while the call runs.
    const callAbort = new AbortController();
    const follow = () => callAbort.abort(signal.reason);
    if (signal.aborted) follow();
    else signal.addEventListener("abort", follow, { once: true });
    try {
      // The SDK checks a structured result against the tool's output schema with re2js loaded.
      await outputValidatorReady(this.context.loadRe2);
      // Any result object is taken (results.ts describes what it holds): with the SDK's own
      // schema, one content item of a type it does not know failed the whole call with a zod dump.
      const anyResult = ResultSchema as unknown as typeof CallToolResultSchema;
      const result = await client.callTool({ name: tool.serverToolName, arguments: args }, anyResult, { signal: callAbort.signal, timeout: this.toolTimeoutMs });
      return toToolOutput(result);
    } catch (error) {
      if (signal.aborted) return errorOutput(`the ${tool.name} call was aborted; ${label} was told to cancel it`);
      if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
        return errorOutput(`${label} did not answer this call within ${this.toolTimeoutMs} ms (toolTimeoutMs); it was told to cancel it`);
      }
      // A server that dies as the call is written fails the write (EPIPE) before its pipe's close
      // is seen: such a system error is checked against its exit. (A malformed result is the SDK's
      // own validation error: no waiting for an exit that will not come.)
      const lostConnection = error instanceof McpError ? error.code === ErrorCode.ConnectionClosed : transport instanceof ProcessGroupTransport && isSystemError(error);
      if (lostConnection) await this.settled(transport);
      if (lostConnection && (error instanceof McpError || (transport as ProcessGroupTransport).exit)) {
        const next = this.isStdio && !this.restarted ? "; the next call starts it again" : "";
        return errorOutput(`${label} ${this.exitDescription(transport, "closed the connection")} during this call${next}`);
      }
      return errorOutput(`${label} failed this call: ${messageOf(error)}`);
    } finally {
      signal.removeEventListener("abort", follow);
    }
  }

  /** Ends the connection and, for stdio, the server's whole process group. */
  async close(): Promise<void> {
    this.closed = true;
    this.alive = false;
    await this.transport?.close().catch(() => undefined);
  }
}

/** A Node system or stream error (EPIPE, ECONNRESET, ERR_STREAM_DESTROYED…): the pipe failed, not the server's answer. */
function isSystemError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^(E[A-Z]+|ERR_STREAM_[A-Z_]+)$/.test(code);
}
