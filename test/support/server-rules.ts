/**
 * What real chat-completions servers refuse, for the fakes to refuse it the same way, so that no
 * test passes with a request a real server would reject. Each rule returns the HTTP answer the
 * real server gives, or undefined when the request passes.
 */

export interface Refusal {
  status: number;
  body: unknown;
}

type Message = { role?: unknown; content?: unknown; tool_calls?: unknown; reasoning_content?: unknown };
type Body = { messages?: unknown; thinking?: { type?: unknown }; reasoning_effort?: unknown; user_id?: unknown };

const messagesOf = (body: Body): Message[] => (Array.isArray(body?.messages) ? (body.messages as Message[]) : []);
const hasToolCalls = (m: Message) => m.role === "assistant" && Array.isArray(m.tool_calls) && m.tool_calls.length > 0;

/**
 * DeepSeek's thinking mode (on unless the request sends `thinking: {type: "disabled"}`): between
 * two user messages in which the model called a tool, every assistant message must carry its
 * `reasoning_content` (a string, "" allowed), in every later request; else HTTP 400.
 * Source: https://api-docs.deepseek.com/guides/thinking_mode
 */
export function deepseekThinkingRefusal(body: Body): Refusal | undefined {
  if (body?.thinking?.type === "disabled") return undefined;
  const messages = messagesOf(body);
  let start = 0;
  for (let end = 0; end <= messages.length; end++) {
    if (end < messages.length && messages[end].role !== "user") continue;
    const exchange = messages.slice(start, end);
    const lacking = exchange.some(hasToolCalls) && exchange.some((m) => m.role === "assistant" && typeof m.reasoning_content !== "string");
    if (lacking) {
      return {
        status: 400,
        body: {
          error: {
            message: "The `reasoning_content` in the thinking mode must be passed back to the API.",
            type: "invalid_request_error",
            param: null,
            code: "invalid_request_error",
          },
        },
      };
    }
    start = end + 1;
  }
  return undefined;
}

const invalidRequest = (message: string): Refusal => ({
  status: 400,
  body: { error: { message, type: "invalid_request_error", param: null, code: "invalid_request_error" } },
});

/** The efforts DeepSeek takes, each mapped to low, high or max (guides/thinking_mode). */
export const DEEPSEEK_KNOWN_EFFORTS = ["minimal", "low", "medium", "high", "xhigh", "max", "ultra"];

/**
 * DeepSeek's model settings: `thinking.type` is `enabled` or `disabled` (guides/thinking_mode),
 * `reasoning_effort` one of the efforts its table maps, `user_id` a string of at most 512 UTF-8
 * bytes (quick_start/rate_limit); anything else is HTTP 400.
 */
export function deepseekSettingsRefusal(body: Body): Refusal | undefined {
  if (body?.thinking !== undefined && !(body.thinking?.type === "enabled" || body.thinking?.type === "disabled")) {
    return invalidRequest(`thinking.type must be 'enabled' or 'disabled' (got ${JSON.stringify(body.thinking)})`);
  }
  const effort = body?.reasoning_effort;
  if (effort !== undefined && !DEEPSEEK_KNOWN_EFFORTS.includes(effort as string)) {
    return invalidRequest(`unknown reasoning_effort ${JSON.stringify(effort)}`);
  }
  const user = body?.user_id;
  if (user !== undefined && (typeof user !== "string" || Buffer.byteLength(user) > 512)) {
    return invalidRequest("user_id must be a string of at most 512 bytes");
  }
  return undefined;
}

type WireToolCall = { id?: unknown };
type ToolMessage = Message & { tool_call_id?: unknown };

/** DeepSeek's 400 for a tool message that answers no call of the assistant message before it (the OpenAI rule). */
export const TOOL_WITHOUT_CALL = "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'";
/** DeepSeek's 400 for an assistant message whose calls are not each answered by the tool messages right after it. */
export const CALL_WITHOUT_TOOL = "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. (insufficient tool messages following tool_calls message)";

/**
 * DeepSeek's pairing of calls and results (the OpenAI chat format's rule; its two messages as
 * users report them, e.g. FoundationAgents/OpenManus#23, zed-industries/zed#51944): the tool
 * messages right after an assistant message with `tool_calls` must answer each of its calls'
 * ids, and every tool message must answer a call of that assistant message — one whose
 * `tool_call_id` matches no call id (a bridge that renamed a repeated id on one side only)
 * is refused, not guessed at. A history whose calls and results do not pair is HTTP 400.
 */
export function deepseekToolPairingRefusal(body: Body): Refusal | undefined {
  const messages = messagesOf(body) as ToolMessage[];
  let calls: Set<unknown> | undefined; // the call ids of the assistant message the tool messages follow
  let answered = new Set<unknown>();
  const unanswered = () => calls !== undefined && [...calls].some((id) => !answered.has(id));
  for (const m of messages) {
    if (m?.role === "tool") {
      if (calls === undefined || !calls.has(m.tool_call_id)) return invalidRequest(TOOL_WITHOUT_CALL);
      answered.add(m.tool_call_id);
      continue;
    }
    if (unanswered()) return invalidRequest(CALL_WITHOUT_TOOL);
    calls = hasToolCalls(m) ? new Set((m.tool_calls as WireToolCall[]).map((c) => c?.id)) : undefined;
    answered = new Set();
  }
  return unanswered() ? invalidRequest(CALL_WITHOUT_TOOL) : undefined;
}

/** Everything DeepSeek refuses that the fakes know of: its settings, the pairing of calls and results, then thinking mode's history rule. */
export function deepseekRefusal(body: Body): Refusal | undefined {
  return deepseekSettingsRefusal(body) ?? deepseekToolPairingRefusal(body) ?? deepseekThinkingRefusal(body);
}

/**
 * llama-cpp-python's server answers HTTP 500 to an assistant message whose `content` is null
 * (its chat templates concatenate the content as a string), and 200 to `""`.
 */
export function llamaCppNullContentRefusal(body: Body): Refusal | undefined {
  if (!messagesOf(body).some((m) => m.role === "assistant" && m.content === null)) return undefined;
  return { status: 500, body: { error: { message: "can only concatenate str (not \"NoneType\") to str", type: "internal_server_error" } } };
}

/** A request's size as the fakes count it: a quarter of the characters of its messages (content, reasoning, tool calls), and `max_tokens`. */
export function requestTokens(body: Body & { max_tokens?: unknown }): { messages: number; completion: number } {
  let chars = 0;
  for (const m of messagesOf(body)) {
    chars += typeof m.content === "string" ? m.content.length : JSON.stringify(m.content ?? "").length;
    if (typeof m.reasoning_content === "string") chars += m.reasoning_content.length;
    if (m.tool_calls !== undefined) chars += JSON.stringify(m.tool_calls).length;
  }
  return { messages: Math.ceil(chars / 4), completion: typeof body.max_tokens === "number" ? body.max_tokens : 0 };
}

/**
 * DeepSeek's refusal of a request longer than the model's context window: HTTP 400 with this
 * message (as users report it, e.g. github.com/evalstate/fast-agent/issues/621,
 * FoundationAgents/OpenManus/issues/79). The fakes count tokens as `requestTokens` does.
 */
export function deepseekContextRefusal(body: Body & { max_tokens?: unknown }, window: number): Refusal | undefined {
  const { messages, completion } = requestTokens(body);
  if (messages + completion <= window) return undefined;
  return invalidRequest(
    `This model's maximum context length is ${window} tokens. However, you requested ${messages + completion} tokens (${messages} in the messages, ${completion} in the completion). Please reduce the length of the messages or completion.`,
  );
}
