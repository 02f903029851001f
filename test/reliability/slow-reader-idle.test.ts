/**
 * A client that stops reading stdout in the middle of a model stream holds the turn by
 * backpressure (docs/guarantees.md, "A slow reader"), for as long as it likes: that pause is not
 * the model's silence, so the model's idle timeout does not end the turn, and the turn completes
 * once the client reads again.
 */
import { describe, expect, it } from "vitest";
import { useDeepSeekBridge } from "../support/deepseek-bridge.js";
import { promptParams } from "../support/raw-client.js";

// The idle timeout is well past any stall of a busy machine, the client's pause well past it.
const IDLE_MS = 1500;
const bridge = useDeepSeekBridge("hb-slow-reader-", { HARNESS_MAX_RETRIES: "0", HARNESS_IDLE_TIMEOUT_MS: String(IDLE_MS) });

describe("a client that stops reading mid-stream", () => {
  it("for longer than the model's idle timeout: the turn waits for it, then completes", async () => {
    // About 400 KB of frames: more than the pipe, the coalescer and the stream's mark hold.
    const events: object[] = [{ delta: { role: "assistant", content: "" } }];
    for (let i = 0; i < 4000; i++) events.push({ delta: { content: "x".repeat(100) } });
    events.push({ delta: {}, finish_reason: "stop" }, { usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } });
    bridge.server.table = { "a long answer, please": [{ events }] };
    const c = await bridge.start();
    c.request("p", "session/prompt", promptParams("s", "a long answer, please"));
    await c.waitFrame((f) => f.method === "session.event" && f.params.event.type === "assistant/chunk", "a chunk");
    c.child.stdout.pause();
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS * 2.5));
    c.child.stdout.resume();
    expect((await c.response("p")).result).toEqual({ status: "ok", reason: { kind: "completed" } });
    const text = c.frames
      .filter((f) => f.method === "session.event" && f.params.sessionId === "s" && f.params.event.type === "assistant/chunk")
      .map((f) => f.params.event.data.chunk.text)
      .join("");
    expect(text).toBe("x".repeat(400_000));
  }, 30_000);
});
