/**
 * Every string a span carries is bounded and well-formed (src/tracing/span.ts `spanString`,
 * applied as each span ends in genai-tracer.ts), whatever attribute carries it:
 *
 * - a tool call's name and id come from the model server unbounded: a megabyte name made a
 *   span of two megabytes, and the export queue holds 2048 spans;
 * - a failed request's status message (a server's error text) had no bound either;
 * - a cut at the limit never leaves half a surrogate pair, and lone surrogates from the model
 *   become U+FFFD: OTLP strings are UTF-8, and a receiver that checks may refuse the whole batch;
 * - captured content is redacted string by string before it is JSON-escaped, as session events
 *   are: a secret with a quote, a backslash or a control character did not match in the JSON.
 */
import { describe, expect, it } from "vitest";
import type { ToolOutput } from "../../src/tools/types.js";
import type { SpanExporter } from "../../src/tracing/exporter.js";
import { GenAiTracer } from "../../src/tracing/genai-tracer.js";
import { spanString, type SpanData } from "../../src/tracing/span.js";
import { secretRedactor } from "../../src/redact.js";

const LIMIT = 64;

function tracer(captureContent: boolean) {
  const spans: SpanData[] = [];
  const exporter = { add: (s: SpanData) => spans.push(s), flushSoon: () => {}, shutdown: async () => {} } as unknown as SpanExporter;
  return { spans, tracer: new GenAiTracer(exporter, { captureContent, contentLimit: LIMIT }) };
}

/** Every string of a span: its name, string attributes (and array items), its status message. */
function strings(span: SpanData): string[] {
  const values = Object.values(span.attributes).flatMap((v) => (typeof v === "string" ? [v] : Array.isArray(v) ? v : []));
  return [span.name, ...values, ...(span.status?.message !== undefined ? [span.status.message] : [])];
}

const wellFormed = (s: string) => !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);

describe("span strings", () => {
  it.each([false, true])("caps and mends every string of every span (content captured: %s)", async (captureContent) => {
    const { spans, tracer: t } = tracer(captureContent);
    const huge = `tool_${"n".repeat(1_000_000)}`;
    const turn = t.turn({ sessionId: "s", turn: 1, model: "m", provider: "p", input: [{ type: "text", text: `hi \ud800 ${"😀".repeat(100)}` }] });
    const chat = turn.chat(1);
    chat.end({ finishReason: "stop", failure: { kind: "model-error", message: `bad \udc00 ${"e".repeat(100_000)}` }, content: () => [{ type: "text", text: "x\ud83d" }] });
    await turn.tool({ type: "tool-call", id: `call_${"i".repeat(100_000)}\ud83d`, name: huge, arguments: { a: "😀".repeat(1000) } }, async () => ({ output: { content: [{ type: "text", text: "r" }], isError: false } as ToolOutput }));
    turn.end({ kind: "completed" });
    expect(spans).toHaveLength(3);
    for (const span of spans) {
      for (const s of strings(span)) {
        expect(s.length).toBeLessThanOrEqual(LIMIT);
        expect(wellFormed(s)).toBe(true);
      }
    }
    expect(spans.find((s) => s.attributes["gen_ai.operation.name"] === "execute_tool")!.attributes["gen_ai.tool.name"]).toBe(spanString(huge, LIMIT));
  });

  it("spanString drops a high surrogate the cut left alone, keeps whole pairs, and replaces lone ones", () => {
    expect(spanString("ab😀", 3)).toBe("ab");
    expect(spanString("ab😀", 4)).toBe("ab😀");
    expect(spanString("a\udc00b\ud800", 10)).toBe("a\ufffdb\ufffd");
    expect(spanString("plain", 10)).toBe("plain");
  });
});

describe("captured content and the redactor", () => {
  it("redacts a secret that JSON would escape (a quote, a backslash, a control character) in every content attribute", async () => {
    const secrets = ['tok"en-12345', "tok\\en-12345", "tok\ten-12345"];
    const spans: SpanData[] = [];
    const exporter = { add: (s: SpanData) => spans.push(s), flushSoon: () => {}, shutdown: async () => {} } as unknown as SpanExporter;
    const t = new GenAiTracer(exporter, { captureContent: true, contentLimit: 100_000, redactor: secretRedactor(secrets) });
    const all = secrets.join(" ");
    const turn = t.turn({ sessionId: "s", turn: 1, model: "m", provider: "p", input: [{ type: "text", text: all }] });
    turn.chat(1).end({ finishReason: "stop", content: () => [{ type: "text", text: all }] });
    await turn.tool({ type: "tool-call", id: "c", name: "read_file", arguments: { path: all } }, async () => ({ output: { content: [{ type: "text", text: all }], isError: false } as ToolOutput }));
    turn.end({ kind: "completed" });
    const exported = JSON.stringify(spans.map((s) => s.attributes));
    for (const secret of secrets) {
      // As the export's JSON carries it: the content attribute's JSON text, escaped once more.
      expect(exported).not.toContain(JSON.stringify(JSON.stringify(secret).slice(1, -1)).slice(1, -1));
      expect(exported).not.toContain(JSON.stringify(secret).slice(1, -1));
    }
    expect(spans.find((s) => s.attributes["gen_ai.tool.call.result"])!.attributes["gen_ai.tool.call.result"]).toContain("***");
  });
});
