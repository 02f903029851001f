/**
 * The agent's spans, named and attributed after the OpenTelemetry GenAI semantic conventions:
 *
 *   invoke_agent harness-bridge          one per turn (INTERNAL); a subagent's turn nests under
 *   ├─ chat {model}                      the execute_tool span of the `task` call that ran it
 *   └─ execute_tool {tool}               one per model request (CLIENT) and per tool call
 *
 * Invariants: no attribute ever holds a key or a header (the config's headers go to the
 * exporter only); message content — the user's text, the model's text, tool arguments and
 * results, error texts — is recorded only with `captureContent`, and then through the bridge's
 * redactor like every session event. And every span as a whole — its name, each string
 * attribute and its status message — goes through the redactor once more when it ends: a
 * failure's message is the model server's error text, which may echo the key (a server that
 * quotes the request's credentials), and it reaches the span before any session event is
 * redacted; the export queue must never hold a secret, whichever attribute carries it. Which span is "current" for nesting is carried by an
 * AsyncLocalStorage set around each tool call, so the runtime need not thread it through the
 * `task` tool.
 *
 * @module
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { ChatResult, ChatSpan, Tracer, TurnInfo, TurnTrace } from "../agent/turn-trace.js";
import type { AssistantContentBlock, TextBlock, ToolCallBlock, TurnEndReason, Usage } from "../protocol/index.js";
import { mergeResponse, type ModelProvider, type ModelRequest, type ModelStreamBatch, type ResponseMetadata } from "../providers/types.js";
import type { Redactor } from "../redact.js";
import type { ToolOutput } from "../tools/types.js";
import { addUsage } from "../agent/usage.js";
import type { Sampler } from "./config.js";
import type { SpanExporter } from "./exporter.js";
import { newSpanId, newTraceId, nowNs, parseTraceparent, spanString, SpanKind, StatusCode, type AttributeValue, type SpanContext, type SpanData } from "./span.js";

export const AGENT_NAME = "harness-bridge";
const MCP_PREFIX = "mcp__";

/** Where a span sits: its trace, the sampled flag it carries, its parent (none for a trace's root). */
interface Placement {
  traceId: string;
  flags: number;
  parentSpanId?: string;
}

/** A span being recorded: ended once, then handed to the exporter (a sampled one only). */
class OpenSpan {
  readonly context: SpanContext;
  readonly attributes: Record<string, AttributeValue>;
  private readonly parentSpanId: string | undefined;
  private readonly startNs = nowNs();
  private status: SpanData["status"];
  private ended = false;

  constructor(
    private readonly exporter: SpanExporter,
    private readonly redactor: Redactor | undefined,
    /** The most characters of any string the span carries (contentLimit: OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT). */
    private readonly limit: number,
    private readonly name: string,
    private readonly kind: number,
    placement: Placement,
    attributes: Record<string, AttributeValue>,
  ) {
    this.context = { traceId: placement.traceId, spanId: newSpanId(), flags: placement.flags };
    this.parentSpanId = placement.parentSpanId;
    this.attributes = attributes;
  }

  /** Whether the span is exported: its sampled flag (W3C trace-flags bit 0). */
  get sampled(): boolean {
    return (this.context.flags & 1) === 1;
  }

  fail(errorType: string, message?: string): void {
    this.attributes["error.type"] = errorType;
    this.status = { code: StatusCode.ERROR, ...(message ? { message } : {}) };
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    if (!this.sampled) return;
    const { context, parentSpanId, kind, startNs, attributes, status } = this;
    let name = this.name;
    if (this.redactor?.active) {
      name = this.redactor.text(name);
      this.redactor.inPlace(attributes);
      if (status) this.redactor.inPlace(status);
    }
    // Every string is capped, not only captured content: a tool's name and call id come from the
    // model server as sent (no bound upstream), a status message is a server's error text. One
    // megabyte name made two megabytes a span, times the 2048 spans the queue holds.
    name = spanString(name, this.limit);
    for (const [key, value] of Object.entries(attributes)) {
      if (typeof value === "string") attributes[key] = spanString(value, this.limit);
      else if (Array.isArray(value)) attributes[key] = value.map((v) => spanString(v, this.limit));
    }
    if (status?.message !== undefined) status.message = spanString(status.message, this.limit);
    this.exporter.add({ context, ...(parentSpanId ? { parentSpanId } : {}), name, kind, startNs, endNs: nowNs(), attributes, ...(status ? { status } : {}) });
  }
}

export class GenAiTracer implements Tracer {
  /** The span tool calls run under, for a subagent's turn to nest in. */
  private readonly current = new AsyncLocalStorage<SpanContext>();

  constructor(
    private readonly exporter: SpanExporter,
    private readonly options: { captureContent: boolean; contentLimit: number; redactor?: Redactor; sampler?: Sampler },
  ) {}

  turn(info: TurnInfo): TurnTrace {
    const parent = (info.traceparent ? parseTraceparent(info.traceparent) : undefined) ?? this.current.getStore();
    const traceId = parent?.traceId ?? newTraceId();
    // The sampler decides once per turn; the turn's chat and tool spans, and a subagent's turn
    // (parent-based, or the same trace id), carry its flag. An unsampled turn exports nothing:
    // under a caller's unsampled span its spans were orphans in the backend, and sampling is
    // how an ops team bounds what tracing costs them.
    const sampled = sample(this.options.sampler ?? { parentBased: true, ratio: 1 }, traceId, parent);
    const placement = { traceId, flags: ((parent?.flags ?? 0) & ~1) | (sampled ? 1 : 0), ...(parent ? { parentSpanId: parent.spanId } : {}) };
    const attributes: Record<string, AttributeValue> = {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.provider.name": info.provider,
      "gen_ai.system": info.provider,
      "gen_ai.agent.name": AGENT_NAME,
      "gen_ai.conversation.id": info.sessionId,
      "gen_ai.request.model": info.model,
      "harness.turn": info.turn,
      ...(info.parentSessionId ? { "harness.parent_session.id": info.parentSessionId } : {}),
    };
    if (this.options.captureContent && sampled) attributes["gen_ai.input.messages"] = this.json([{ role: "user", parts: textParts(info.input) }]);
    const span = new OpenSpan(this.exporter, this.options.redactor, this.options.contentLimit, `invoke_agent ${AGENT_NAME}`, SpanKind.INTERNAL, placement, attributes);
    return new TurnSpans(this, span, info);
  }

  shutdown(): Promise<void> {
    return this.exporter.shutdown();
  }

  /** @internal for TurnSpans */
  open(name: string, kind: number, parent: SpanContext, attributes: Record<string, AttributeValue>): OpenSpan {
    return new OpenSpan(this.exporter, this.options.redactor, this.options.contentLimit, name, kind, { traceId: parent.traceId, flags: parent.flags, parentSpanId: parent.spanId }, attributes);
  }

  /** @internal runs `fn` with `context` as the span nested turns start under. */
  within<T>(context: SpanContext, fn: () => Promise<T>): Promise<T> {
    return this.current.run(context, fn);
  }

  get captureContent(): boolean {
    return this.options.captureContent;
  }

  /** Whether content is recorded in `span`'s children: captured, and the turn sampled (no JSON made for nothing). */
  captures(span: OpenSpan): boolean {
    return this.options.captureContent && span.sampled;
  }

  /**
   * Content as a span attribute: JSON, through the redactor, cut at the limit (content is
   * recorded only when captured). Each string is redacted before it is escaped: a secret with a
   * character JSON escapes (`"`, `\`, a control character) no longer matches in the JSON text,
   * and went to the collector while session events, redacted string by string, hid it. The
   * text is redacted once more for keys (object keys are not passed to the replacer).
   */
  json(value: unknown): string {
    const redactor = this.options.redactor;
    const raw = redactor?.active ? JSON.stringify(value, (_key, v: unknown) => (typeof v === "string" ? redactor.text(v) : v)) : JSON.stringify(value);
    const text = redactor?.active ? redactor.text(raw) : raw;
    return spanString(text, this.options.contentLimit);
  }

  turnEnded(): void {
    this.exporter.flushSoon();
  }
}

class TurnSpans implements TurnTrace {
  private usage: Usage | undefined;

  constructor(
    private readonly tracer: GenAiTracer,
    private readonly span: OpenSpan,
    private readonly info: TurnInfo,
  ) {}

  chat(step: number): ChatSpan {
    return this.chatSpan({ "harness.step": step });
  }

  summarizing(provider: ModelProvider, priced: (usage: Usage | undefined) => Usage | undefined): ModelProvider {
    const chatSpan = () => this.chatSpan({ "harness.compaction": true });
    return {
      name: provider.name,
      async *stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamBatch> {
        const span = chatSpan();
        let usage: Usage | undefined;
        let finish: string | undefined;
        const response: ResponseMetadata = {};
        let failed = false;
        try {
          for await (const batch of provider.stream(request, signal)) {
            for (const part of batch) {
              if (part.type === "usage") usage = part.usage;
              else if (part.type === "finish") finish = part.finishReason;
              else if (part.type === "response-metadata") mergeResponse(response, part);
            }
            yield batch;
          }
        } catch (error) {
          failed = true;
          throw error;
        } finally {
          // Also when compaction stops reading early (an abort): the span ends either way.
          const reason = signal.aborted ? "aborted" : failed || finish === undefined ? "error" : finish;
          const failure: TurnEndReason | undefined = signal.aborted ? { kind: "aborted" } : reason === "error" ? { kind: "model-error", message: "the summarizing request failed" } : undefined;
          // Priced as the loop prices the turn's requests, so the turn's cost adds up to its turn/end's.
          span.end({ finishReason: reason, usage: priced(usage), response, failure });
        }
      },
    };
  }

  private chatSpan(extra: Record<string, AttributeValue>): ChatSpan {
    const { model, provider, sessionId } = this.info;
    const span = this.tracer.open(`chat ${model}`, SpanKind.CLIENT, this.span.context, {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": provider,
      "gen_ai.system": provider,
      "gen_ai.request.model": model,
      "gen_ai.conversation.id": sessionId,
      ...extra,
    });
    return {
      end: (result: ChatResult) => {
        const a = span.attributes;
        a["gen_ai.response.finish_reasons"] = [finishReason(result.finishReason)];
        // Cleaned and capped by the provider (untrusted server text); a response model other
        // than the request's (a gateway's routing) shows here, the span name keeps the request's.
        if (result.response?.id !== undefined) a["gen_ai.response.id"] = result.response.id;
        if (result.response?.model !== undefined) a["gen_ai.response.model"] = result.response.model;
        if (result.usage) {
          this.usage = addUsage(this.usage, result.usage);
          Object.assign(a, usageAttributes(result.usage));
        }
        if (result.failure && result.failure.kind !== "completed") {
          span.fail(errorType(result.failure), this.tracer.captures(this.span) && "message" in result.failure ? result.failure.message : undefined);
        }
        if (this.tracer.captures(this.span) && result.content) a["gen_ai.output.messages"] = this.tracer.json([{ role: "assistant", parts: contentParts(result.content()), finish_reason: finishReason(result.finishReason) }]);
        span.end();
      },
    };
  }

  async tool<T extends { output: ToolOutput }>(call: ToolCallBlock, run: () => Promise<T>): Promise<T> {
    const span = this.tracer.open(`execute_tool ${call.name}`, SpanKind.INTERNAL, this.span.context, {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": call.name,
      "gen_ai.tool.call.id": call.id,
      "gen_ai.tool.type": call.name.startsWith(MCP_PREFIX) ? "extension" : "function",
      "gen_ai.conversation.id": this.info.sessionId,
    });
    if (this.tracer.captures(this.span)) span.attributes["gen_ai.tool.call.arguments"] = this.tracer.json(call.rawArguments ?? call.arguments);
    try {
      const result = await this.tracer.within(span.context, run);
      if (result.output.isError) span.fail("tool_error");
      if (this.tracer.captures(this.span)) span.attributes["gen_ai.tool.call.result"] = this.tracer.json(result.output.content);
      return result;
    } catch (error) {
      span.fail(error instanceof Error ? error.name : "Error");
      throw error;
    } finally {
      span.end();
    }
  }

  end(reason: TurnEndReason): void {
    const a = this.span.attributes;
    a["harness.turn.end"] = reason.kind;
    if (this.usage) Object.assign(a, usageAttributes(this.usage));
    if (reason.kind !== "completed") this.span.fail(errorType(reason), this.tracer.captures(this.span) && "message" in reason ? reason.message : undefined);
    this.span.end();
    this.tracer.turnEnded();
  }
}

/**
 * The sampler's decision for a turn: a parent-based sampler follows the parent's sampled flag;
 * otherwise `ratio` of trace ids are sampled, judged from the id's last 56 bits (the W3C
 * random part) against the spec's rejection threshold, so every turn of a trace, in any
 * process sampling at the same ratio, decides alike.
 */
function sample(sampler: Sampler, traceId: string, parent: SpanContext | undefined): boolean {
  if (parent && sampler.parentBased) return (parent.flags & 1) === 1;
  if (sampler.ratio >= 1) return true;
  if (sampler.ratio <= 0) return false;
  const threshold = BigInt(Math.round((1 - sampler.ratio) * 2 ** 56));
  return BigInt(`0x${traceId.slice(-14)}`) >= threshold;
}

/** Finish reasons as the conventions spell them (OpenAI's words): `tool-calls` → `tool_calls`. */
function finishReason(reason: string): string {
  return reason.replace(/-/g, "_");
}

/** A low-cardinality `error.type`: the end reason's kind, and its code when the model gave one. */
function errorType(reason: TurnEndReason): string {
  return "code" in reason && typeof reason.code === "string" ? `${reason.kind}:${reason.code}` : reason.kind;
}

function usageAttributes(usage: Usage & { costUsd?: number }): Record<string, AttributeValue> {
  return {
    "gen_ai.usage.input_tokens": usage.inputTokens,
    "gen_ai.usage.output_tokens": usage.outputTokens,
    ...(usage.cacheHitTokens !== undefined ? { "gen_ai.usage.cache_read.input_tokens": usage.cacheHitTokens } : {}),
    ...(usage.reasoningTokens !== undefined ? { "gen_ai.usage.reasoning.output_tokens": usage.reasoningTokens } : {}),
    // Not in the conventions (yet): the price of the request, when usage carries it (`costUsd`).
    ...(typeof usage.costUsd === "number" ? { "harness.usage.cost_usd": usage.costUsd } : {}),
  };
}

function textParts(blocks: TextBlock[]) {
  return blocks.map((b) => ({ type: "text", content: b.text }));
}

function contentParts(blocks: AssistantContentBlock[]) {
  return blocks.map((b) => {
    if (b.type === "text") return { type: "text", content: b.text };
    if (b.type === "tool-call") return { type: "tool_call", id: b.id, name: b.name, arguments: b.rawArguments ?? b.arguments };
    return { type: b.type };
  });
}
