/**
 * An assistant message assembled from a model's streamed parts (agent/loop.ts runs one per
 * step): text and reasoning blocks in order of first appearance, and the step's tool calls —
 * each with an id of its own and its arguments parsed once, here, so history, the session log
 * and the next request carry them the same way. Kept apart from the loop, which only decides
 * what a step's outcome means for the turn.
 */
import { MAX_JSON_DEPTH, exceedsDepth } from "../json-depth.js";
import type { AssistantContentBlock, JsonObject, TextBlock, ToolCallBlock, Usage } from "../protocol/index.js";
import { mergeResponse, type ModelStreamPart, type ResponseMetadata } from "../providers/types.js";
import { TextParts } from "./text-parts.js";

/** Builds an assistant message out of streamed parts, keeping blocks in order of first appearance. */
export class MessageAssembler {
  private readonly parts: TextParts[] = [];
  /** The step's tool calls by index; made at the first call's delta, so a step of text alone makes none. */
  private calls: Map<number, { id?: string; name?: string; args: string }> | undefined;
  usage: Usage | undefined;
  finishReason: string | undefined;
  /** The server's response id and model, for the step's chat span (per field, the last one sent). */
  readonly response: ResponseMetadata = {};

  add(part: ModelStreamPart): void {
    switch (part.type) {
      case "text-delta":
      case "reasoning-delta": {
        const type = part.type === "text-delta" ? "text" : "reasoning";
        // Read only when there is one: `parts[-1]` is no element load but a property lookup by
        // the name "-1", which V8 does in its runtime (a number made a string, then searched).
        const { parts } = this;
        let last = parts.length > 0 ? parts[parts.length - 1] : undefined;
        if (!last || last.type !== type) parts.push((last = new TextParts(type)));
        last.append(part.text);
        break;
      }
      case "tool-call-delta": {
        const calls = (this.calls ??= new Map());
        const call = calls.get(part.index) ?? { args: "" };
        if (part.id) call.id = part.id;
        // The name arrives whole on one delta (OpenAI-compatible servers); the first one wins.
        if (part.name) call.name ??= part.name;
        call.args += part.argumentsDelta;
        calls.set(part.index, call);
        break;
      }
      case "usage":
        this.usage = part.usage;
        break;
      case "finish":
        this.finishReason = part.finishReason;
        break;
      case "response-metadata":
        mergeResponse(this.response, part);
        break;
    }
  }

  isEmpty(): boolean {
    return this.parts.length === 0 && this.calls === undefined;
  }

  /** The text and reasoning blocks, in order. */
  blocks(): Array<TextBlock | { type: "reasoning"; text: string }> {
    const blocks: Array<TextBlock | { type: "reasoning"; text: string }> = [];
    for (const part of this.parts) blocks.push(part.toBlock());
    return blocks;
  }

  /**
   * The assistant message's content: the text and reasoning blocks, then the step's `calls`.
   * Built by pushing onto an empty literal, as `blocks()` is: such an array has one shape
   * (elements kind) whichever of V8's tiers ran the code, where `map` and spread results
   * differ between the interpreter's builtins and optimized code. The content is kept (history,
   * the session's events) and iterated by the hot path every turn, so a second shape arriving
   * once this code is optimized would throw away the optimized code of every function that
   * reads it.
   */
  content(calls: readonly ToolCallBlock[]): AssistantContentBlock[] {
    const content: AssistantContentBlock[] = this.blocks();
    for (const call of calls) content.push(call);
    return content;
  }

  /**
   * The step's calls, each with an id of its own (waits, answers and results are keyed by it):
   * a repeated id (some OpenAI-compatible servers repeat them) gets `#2`, `#3`, …, recorded and
   * sent back to the model as such, so each result pairs with its own call (docs/PROTOCOL.md).
   * `asked`: ids an earlier `tool/request` of the session already carried (Session.callIdAsked).
   * Such an id is taken too: a late answer to that request (it timed out, was aborted, or the
   * client sent it twice) would otherwise be taken as this call's result.
   */
  toolCalls(turn: number, step: number, asked?: (id: string) => boolean): ToolCallBlock[] {
    // Pushed onto an empty literal, for the one shape `content` explains.
    const calls: ToolCallBlock[] = [];
    if (this.calls === undefined) return calls;
    const taken = new Set<string>();
    for (const [index, call] of [...this.calls.entries()].sort(([a], [b]) => a - b)) {
      const given = call.id ?? `call_${turn}_${step}_${index}`;
      let id = given;
      for (let n = 2; taken.has(id) || asked?.(id) === true; n++) id = `${given}#${n}`;
      taken.add(id);
      calls.push(parseToolCall(id, call.name ?? "", call.args));
    }
    return calls;
  }
}

/**
 * The call as the assistant message holds it: valid arguments parsed, with the model's own text
 * kept as `argumentsText` when re-serializing would change it. Arguments that are not a JSON object, or that
 * nest deeper than `MAX_JSON_DEPTH`, stay a string (`rawArguments`, arguments `{}`): history,
 * the session log and the next provider request only ever carry them as that string, so no
 * recursion meets the deep value, and the call is answered with an error tool result.
 */
function parseToolCall(id: string, name: string, raw: string): ToolCallBlock {
  try {
    const parsed: unknown = JSON.parse(raw === "" ? "{}" : raw);
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) && !exceedsDepth(parsed, MAX_JSON_DEPTH)) {
      const block: ToolCallBlock = { type: "tool-call", id, name, arguments: parsed as JsonObject };
      // The text goes back as the model wrote it; "" (no arguments) goes back as "{}".
      if (raw !== "" && raw !== JSON.stringify(parsed)) block.argumentsText = raw;
      return block;
    }
  } catch {
    // fall through: the model sent something that is not a JSON object
  }
  return { type: "tool-call", id, name, arguments: {}, rawArguments: raw };
}

/** Whether raw tool arguments are valid JSON refused only for their depth. */
export function argumentsTooDeep(raw: string): boolean {
  try {
    return exceedsDepth(JSON.parse(raw), MAX_JSON_DEPTH);
  } catch {
    return false;
  }
}
