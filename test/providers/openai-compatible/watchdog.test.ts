/** Timeouts, resets after output, and aborts: the attempt's watchdog. */
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../../src/log.js";
import { deepseekProvider } from "../../../src/providers/deepseek.js";
import { ModelError, ProviderSettingError, type ModelStreamPart } from "../../../src/providers/types.js";
import { DONE, KEEP_ALIVE, chunk, errorBody, frame, jsonReply, sseReply } from "../../support/fake-openai-server.js";
import { collect, collectError, makeProvider, okReply, request, server, testEnv, text, useFakeServer } from "./support.js";

useFakeServer();

describe("timeouts and aborts", () => {
  it("does not retry a connection reset after output", async () => {
    server.enqueue(sseReply([frame(chunk({ content: "half an ans" }))], { then: "destroy" }), okReply());
    const { parts, error } = await collectError(await makeProvider());
    expect(text(parts)).toBe("half an ans");
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).code).toBe("network");
    expect(server.requests).toHaveLength(1);
  });

  it("times out a stream that stalls after output, quickly and without retry", async () => {
    server.enqueue(sseReply([frame(chunk({ content: "thinking..." }))], { then: "stall" }), okReply());
    const started = performance.now();
    const { parts, error } = await collectError(await makeProvider({ HARNESS_IDLE_TIMEOUT_MS: "200" }));
    expect(text(parts)).toBe("thinking...");
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).code).toBe("timeout");
    // The 200 ms timer ended it (testEnv's default is 5 s): its message names it. A timer never
    // fires early, so the lower bound holds on any machine.
    expect((error as ModelError).message).toContain("no data from the model for 200 ms");
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    expect(server.requests).toHaveLength(1);
    await server.requests[0].socketClosed;
  });

  it("keep-alive comments keep a slow stream alive", async () => {
    // Each gap (300 ms) is well inside the idle timeout, the whole stream (~2.4 s) well past
    // it: a process stalled for over a second by a busy machine could still fire the timer.
    const frames = [...Array(7).fill(KEEP_ALIVE), frame(chunk({ content: "late" })), frame(chunk({}, "stop")), DONE];
    server.enqueue(sseReply(frames, { delayMs: 300 }));
    const parts = await collect(await makeProvider({ HARNESS_IDLE_TIMEOUT_MS: "1500" }));
    expect(text(parts)).toBe("late");
  });

  it("does not time out while the consumer holds the stream (a client slow to read stdout), only while the model is silent", async () => {
    // The server sends everything promptly; the turn stops taking parts for longer than the idle
    // timeout, as it does while waiting for a client that does not read. That wait is not the
    // model's silence: the stream goes on where it stopped.
    const frames = [frame(chunk({ content: "before " })), frame(chunk({ content: "after" })), frame(chunk({}, "stop")), DONE];
    server.enqueue(sseReply(frames, { delayMs: 20 }));
    // The idle timeout well past a busy machine's stall, the hold well past the timeout.
    const provider = await makeProvider({ HARNESS_IDLE_TIMEOUT_MS: "1000" });
    const parts: ModelStreamPart[] = [];
    let held = false;
    for await (const batch of provider.stream(request(), new AbortController().signal)) {
      parts.push(...batch);
      if (!held) {
        held = true;
        await new Promise((resolve) => setTimeout(resolve, 2500));
      }
    }
    expect(text(parts)).toBe("before after");
    expect(parts.at(-1)).toEqual({ type: "finish", finishReason: "stop" });
    expect(server.requests).toHaveLength(1);
  });

  it("retries a request that stalls before any output (no headers, then no body), then gives up with a timeout", async () => {
    server.enqueue({ sendHeaders: false, actions: [{ type: "stall" }] }, sseReply([KEEP_ALIVE], { then: "stall" }));
    const { error } = await collectError(await makeProvider({ HARNESS_IDLE_TIMEOUT_MS: "600", HARNESS_MAX_RETRIES: "1" }));
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).code).toBe("timeout");
    expect((error as ModelError).message).toContain("1 retry");
    expect(server.requests).toHaveLength(2);
  });

  it("stops at once when aborted mid-stream, and the server sees the socket close", async () => {
    server.enqueue(sseReply([frame(chunk({ content: "first" }))], { then: "stall" }));
    const provider = await makeProvider();
    const controller = new AbortController();
    const iterator = provider.stream(request(), controller.signal)[Symbol.asyncIterator]();
    // The chunk's id and model come first, just before its text, in its event's batch.
    const first = await iterator.next();
    expect(first.done).toBe(false);
    expect(first.value).toMatchObject([{ type: "response-metadata", model: "deepseek-flash" }, { type: "text-delta", text: "first" }]);
    const pending = iterator.next();
    setTimeout(() => controller.abort(new Error("user cancelled")), 50);
    // The abort's own reason, not the idle timeout (5 s) that would end the stall otherwise.
    await expect(pending).rejects.toThrow("user cancelled");
    await server.requests[0].socketClosed; // the test's timeout is the bound
    expect(server.requests).toHaveLength(1);
  });

  it("closes the HTTP stream when the consumer stops iterating", async () => {
    server.enqueue(sseReply([frame(chunk({ content: "first" }))], { then: "stall" }));
    const provider = await makeProvider();
    for await (const batch of provider.stream(request(), new AbortController().signal)) {
      // The chunk's id and model, just before its text.
      expect(batch).toMatchObject([{ type: "response-metadata" }, { type: "text-delta", text: "first" }]);
      break;
    }
    // Closed while the idle timeout (5 s) has not fired: the test's timeout is the bound.
    await server.requests[0].socketClosed;
  });

  it("aborts a retry's backoff sleep at once", async () => {
    server.enqueue(jsonReply(503, errorBody("busy"), { "retry-after": "30" }), okReply());
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("user cancelled")), 100);
    // A sleep the abort did not cut would take 30 s, past the test's timeout.
    const { error } = await collectError(await makeProvider(), request(), controller.signal);
    expect((error as Error).message).toBe("user cancelled");
    expect(server.requests).toHaveLength(1);
  });

  it("sends no request when aborted while the stream is starting", async () => {
    server.enqueue(sseReply([frame(chunk({ content: "x" }))], { then: "stall" }));
    const controller = new AbortController();
    const iterator = (await makeProvider()).stream(request(), controller.signal)[Symbol.asyncIterator]();
    const first = iterator.next();
    controller.abort(new Error("cancelled early"));
    await expect(first).rejects.toThrow("cancelled early");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(server.requests).toHaveLength(0);
  });

  it("throws at once for an already aborted signal, without a request", async () => {
    const controller = new AbortController();
    controller.abort(new Error("too late"));
    const { error } = await collectError(await makeProvider(), request(), controller.signal);
    expect((error as Error).message).toBe("too late");
    expect(server.requests).toHaveLength(0);
  });

  it("a stream of keep-alive comments only ends at the first-token deadline, without retry (keep-alives re-arm the idle timer)", async () => {
    // Keep-alives every 50 ms; the idle timeout (1 s) leaves a busy machine room to stall.
    server.enqueue(sseReply([KEEP_ALIVE], { then: "keep-alive" }), okReply());
    const { parts, error } = await collectError(await makeProvider({ HARNESS_FIRST_TOKEN_TIMEOUT_MS: "2500", HARNESS_IDLE_TIMEOUT_MS: "1000" }));
    expect(parts).toEqual([]);
    expect(error).toMatchObject({ name: "ModelError", code: "first-token-timeout" });
    expect((error as ModelError).message).toContain("no output within 2500 ms");
    expect(server.requests).toHaveLength(1);
    await server.requests[0].socketClosed;
  });

  it("the first-token deadline stops counting at the first output", async () => {
    // The first output comes at ~200 ms, well inside the 2.5 s deadline even on a busy machine;
    // the stream then goes on for ~3 s, past it.
    const frames = [KEEP_ALIVE, frame(chunk({ content: "early" })), ...Array(30).fill(KEEP_ALIVE), frame(chunk({}, "stop")), DONE];
    server.enqueue(sseReply(frames, { delayMs: 100 }));
    const parts = await collect(await makeProvider({ HARNESS_FIRST_TOKEN_TIMEOUT_MS: "2500" }));
    expect(text(parts)).toBe("early");
    expect(parts.at(-1)).toEqual({ type: "finish", finishReason: "stop" });
  });

  it("a stream kept alive after output ends at the request deadline, keeping what was streamed", async () => {
    server.enqueue(sseReply([frame(chunk({ content: "half" }))], { then: "keep-alive" }));
    const { parts, error } = await collectError(await makeProvider({ HARNESS_REQUEST_TIMEOUT_MS: "2500", HARNESS_IDLE_TIMEOUT_MS: "1000" }));
    expect(text(parts)).toBe("half");
    expect(error).toMatchObject({ name: "ModelError", code: "request-timeout" });
    expect((error as ModelError).message).toContain("did not complete within 2500 ms");
    await server.requests[0].socketClosed;
  });

  it("the request deadline covers retries and their backoff", async () => {
    server.enqueue(jsonReply(503, errorBody("busy"), { "retry-after": "30" }), okReply());
    // Retry-After 30 s: only the 300 ms deadline can end it before the test's timeout.
    const { error } = await collectError(await makeProvider({ HARNESS_REQUEST_TIMEOUT_MS: "300" }));
    expect(error).toMatchObject({ name: "ModelError", code: "request-timeout" });
    expect(server.requests).toHaveLength(1);
  });

  it("ProviderConfig's deadlines win over the variables; a malformed one is a setting error naming initialize's field", async () => {
    server.enqueue(sseReply([KEEP_ALIVE], { then: "keep-alive" }));
    const provider = await deepseekProvider.create({
      model: "m",
      cwd: "/tmp",
      env: testEnv({ HARNESS_FIRST_TOKEN_TIMEOUT_MS: "600000" }),
      logger: silentLogger,
      firstTokenTimeoutMs: 300,
    });
    const { error } = await collectError(provider);
    expect(error).toMatchObject({ code: "first-token-timeout" });
    const bad = deepseekProvider.create({ model: "m", cwd: "/tmp", env: testEnv(), requestTimeoutMs: -1 });
    await expect(bad).rejects.toBeInstanceOf(ProviderSettingError);
    await expect(bad).rejects.toMatchObject({ field: "modelRequestTimeoutMs" });
  });
});
