/**
 * The request body: the conversation as chat completions messages, tools and limits.
 *
 * @module
 */
import { ModelError, type ModelMessage, type ModelRequest } from "../types.js";
import type { ModelFields, OpenAICompatibleSettings } from "./settings.js";

/** A message of the chat completions API, as sent. */
export type WireMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | {
      role: "assistant";
      content: string;
      reasoning_content?: string;
      tool_calls?: WireToolCall[];
    }
  | { role: "tool"; tool_call_id: string; content: string };

export interface WireToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** The body of `POST /chat/completions`, as sent. */
export interface ChatCompletionBody extends ModelFields {
  model: string;
  messages: WireMessage[];
  stream: true;
  stream_options: { include_usage: true };
  max_tokens?: number;
  tools?: Array<{ type: "function"; function: { name: string; description: string; parameters: unknown } }>;
  tool_choice?: "auto" | "required" | "none" | { type: "function"; function: { name: string } };
}

/**
 * Maps the conversation to chat completions messages.
 *
 * - user and tool text blocks are joined with "\n" (they are separate pieces of input);
 *   assistant text and reasoning blocks are concatenated as streamed ("").
 * - an assistant message without text has `content: ""`, with tool calls or without (a step
 *   cancelled before any output): every server takes a string, while llama-cpp-python's server
 *   answers HTTP 500 to `content: null`.
 * - tool-call arguments are sent as the model wrote them (`rawArguments` when invalid,
 *   `argumentsText` when valid) when that is a non-empty string, else as the JSON of the parsed
 *   arguments, so that a history's bytes never change between requests.
 * - with `sendReasoningContent`, every assistant message of an exchange (the messages between two
 *   user messages) in which the model called a tool carries `reasoning_content`, "" when it had
 *   no reasoning: DeepSeek's thinking mode answers 400 to a later request without it there, and
 *   ignores it elsewhere, where it is not sent. Other servers may reject the field: never sent
 *   without `sendReasoningContent`.
 */
export function toWireMessages(
  system: string,
  messages: readonly ModelMessage[],
  sendReasoningContent: boolean,
): WireMessage[] {
  const wire: WireMessage[] = [];
  if (system) wire.push({ role: "system", content: system });
  const withReasoning = sendReasoningContent ? exchangesWithToolCalls(messages) : new Set<number>();
  messages.forEach((message, position) => {
    switch (message.role) {
      case "user":
        wire.push({ role: "user", content: message.content.map((b) => b.text).join("\n") });
        break;
      case "tool":
        wire.push({
          role: "tool",
          tool_call_id: message.callId,
          content: message.content.map((b) => b.text).join("\n"),
        });
        break;
      case "assistant": {
        let text = "";
        let reasoning = "";
        const toolCalls: WireToolCall[] = [];
        for (const block of message.content) {
          if (block.type === "text") text += block.text;
          else if (block.type === "reasoning") reasoning += block.text;
          else if (block.type === "tool-call") {
            toolCalls.push({
              id: block.id,
              type: "function",
              function: {
                name: block.name,
                arguments: block.rawArguments || block.argumentsText || JSON.stringify(block.arguments ?? {}),
              },
            });
          }
        }
        const out: WireMessage = toolCalls.length === 0 ? { role: "assistant", content: text } : { role: "assistant", content: text, tool_calls: toolCalls };
        if (withReasoning.has(position)) out.reasoning_content = reasoning;
        wire.push(out);
        break;
      }
    }
  });
  return wire;
}

/** The positions of the assistant messages whose exchange (between two user messages) holds a tool call. */
function exchangesWithToolCalls(messages: readonly ModelMessage[]): Set<number> {
  const covered = new Set<number>();
  let start = 0;
  for (let end = 0; end <= messages.length; end++) {
    if (end < messages.length && messages[end].role !== "user") continue;
    const exchange = messages.slice(start, end);
    if (exchange.some((m) => m.role === "assistant" && m.content.some((b) => b.type === "tool-call"))) {
      exchange.forEach((m, i) => m.role === "assistant" && covered.add(start + i));
    }
    start = end + 1;
  }
  return covered;
}

/** What of the provider's settings shapes a request body. */
export type BodySettings = Pick<OpenAICompatibleSettings, "sendReasoningContent" | "toolChoice" | "modelFields">;

/**
 * Builds the request body of one streamed chat completion, with the model settings' fields.
 * `toolChoice` goes out as `tool_choice` only with tools (servers refuse it without); `required`
 * and a named tool only on a turn's first request (the history ends with the user's message),
 * since forcing a call on every step would never let the turn end.
 * @throws ModelError (code `tool-choice`) when `toolChoice` names a tool the request does not offer.
 */
export function buildRequestBody(request: ModelRequest, settings: BodySettings): ChatCompletionBody {
  const { sendReasoningContent, toolChoice, modelFields } = settings;
  const body: ChatCompletionBody = {
    model: request.model,
    messages: toWireMessages(request.system, request.messages, sendReasoningContent),
    stream: true,
    stream_options: { include_usage: true },
    ...modelFields,
  };
  if (request.maxTokens !== undefined) body.max_tokens = request.maxTokens;
  if (request.tools.length > 0) {
    body.tools = request.tools.map((t) => ({
      type: "function",
      function: { name: t.name, description: t.description, parameters: t.parameters },
    }));
    const firstStep = request.messages.at(-1)?.role === "user";
    // A compaction request asks for a summary in text, never a tool call.
    if (request.purpose === "compaction") body.tool_choice = "none";
    else if (toolChoice === "auto" || toolChoice === "none" || (toolChoice === "required" && firstStep)) body.tool_choice = toolChoice;
    else if (typeof toolChoice === "object" && firstStep) {
      if (!request.tools.some((t) => t.name === toolChoice.name)) {
        const offered = request.tools.map((t) => t.name).join(", ");
        throw new ModelError(`toolChoice names the tool '${toolChoice.name}', which this request does not offer (offered: ${offered})`, undefined, "tool-choice");
      }
      body.tool_choice = { type: "function", function: { name: toolChoice.name } };
    }
  }
  return body;
}
