/**
 * An MCP `tools/call` result as a tool output: text blocks for the model. Text is kept; every
 * other content type is described in a line of text (what it is, its type and size), since the
 * history holds text only; `structuredContent` is shown as JSON when the server sent no content;
 * `isError` is honoured. The whole is capped like bash's output, so a server cannot flood the
 * model's context.
 */
import type { TextBlock } from "../protocol/types.js";
import type { ToolOutput } from "../tools/types.js";

/** Characters of a result kept for the model; the rest is cut with a marker. */
export const MAX_RESULT_CHARS = 100_000;

type Item = { type?: unknown; [key: string]: unknown };

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
/** Bytes a base64 string decodes to. */
const base64Bytes = (data: unknown): number => {
  const s = str(data) ?? "";
  return Math.floor((s.replace(/=+$/, "").length * 3) / 4);
};

function describeResource(resource: Item): string {
  const uri = str(resource.uri) ?? "(no uri)";
  const mime = str(resource.mimeType);
  if (typeof resource.text === "string") return `[resource ${uri}${mime ? ` (${mime})` : ""}]\n${resource.text}`;
  return `[resource ${uri}: ${mime ?? "binary"}, ${base64Bytes(resource.blob)} bytes, not shown]`;
}

function describe(item: Item): string {
  switch (item.type) {
    case "text":
      return str(item.text) ?? "";
    case "image":
    case "audio":
      return `[${item.type}: ${str(item.mimeType) ?? "unknown type"}, ${base64Bytes(item.data)} bytes, not shown]`;
    case "resource_link": {
      const name = str(item.name);
      const mime = str(item.mimeType);
      return `[resource link: ${str(item.uri) ?? "(no uri)"}${name ? ` "${name}"` : ""}${mime ? ` (${mime})` : ""}]`;
    }
    case "resource":
      return typeof item.resource === "object" && item.resource !== null ? describeResource(item.resource as Item) : "[resource: (empty)]";
    default:
      return `[content of type ${JSON.stringify(item.type)?.slice(0, 50) ?? "(none)"}, not shown]`;
  }
}

/** The tool output for a `tools/call` result. */
export function toToolOutput(result: { [key: string]: unknown }): ToolOutput {
  const items = Array.isArray(result.content) ? (result.content as unknown[]) : [];
  const parts = items.map((item) => (typeof item === "object" && item !== null ? describe(item as Item) : "[malformed content item]"));
  // Structured content, or the `toolResult` of servers on protocol 2024-10-07, when there is no content.
  const structured = result.structuredContent ?? result.toolResult;
  if (parts.length === 0 && structured !== undefined) parts.push(JSON.stringify(structured) ?? "");
  let text = parts.join("\n");
  if (text.length > MAX_RESULT_CHARS) text = `${text.slice(0, MAX_RESULT_CHARS)}\n[… ${text.length - MAX_RESULT_CHARS} characters of the result cut]`;
  const isError = result.isError === true;
  const content: TextBlock[] = [{ type: "text", text: text || (isError ? "(the tool failed without a message)" : "(no output)") }];
  return { content, isError };
}
