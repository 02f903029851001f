/** Retry and backoff, and the errors HTTP statuses map to. */
import { describe, expect, it } from "vitest";
import { createStderrLogger } from "../../../src/log.js";
import { deepseekProvider } from "../../../src/providers/deepseek.js";
import { backoffDelay, parseRetryAfter } from "../../../src/providers/openai-compatible/index.js";
import { ModelError } from "../../../src/providers/types.js";
import { chunk, errorBody, frame, jsonReply, sseReply } from "../../support/fake-openai-server.js";
import { collect, collectError, makeProvider, okReply, server, testEnv, text, useFakeServer } from "./support.js";

useFakeServer();

describe("retries and HTTP errors", () => {
  it("retries a 500 before any output, then streams", async () => {
    server.enqueue(jsonReply(500, errorBody("internal", "server_error")), okReply());
    const parts = await collect(await makeProvider());
    expect(text(parts)).toBe("ok");
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1].rawBody).toBe(server.requests[0].rawBody);
  });

  it("retries a connection reset before any response", async () => {
    server.enqueue({ sendHeaders: false, actions: [{ type: "destroy" }] }, okReply());
    const parts = await collect(await makeProvider());
    expect(text(parts)).toBe("ok");
    expect(server.requests).toHaveLength(2);
  });

  it("does not retry a port fetch refuses (a WHATWG bad port), and says to move the server", async () => {
    // Nothing needs to listen: fetch refuses port 6000 before it connects.
    const { created, delays } = loggedProvider({ DEEPSEEK_BASE_URL: "http://127.0.0.1:6000" });
    const { error } = (await collectError(await created)) as { error: ModelError };
    expect(error).toBeInstanceOf(ModelError);
    expect(error.message).toContain("bad port");
    expect(error.message).not.toContain("gave up after");
    expect(error.message).toMatch(/fetch refuses to connect to a blocked "bad port" .*the base URL's port is 6000, .*: run the server on another port and point DEEPSEEK_BASE_URL/);
    expect(delays()).toEqual([]);
  });

  // The delay a retry waits is read from the provider's own warning ("retry 1 of 3 in N ms"):
  // a wall-clock upper bound would fail on a busy machine. The gap between the two requests can
  // only be longer than the delay, never shorter, so that bound stays.
  function loggedProvider(extra: NodeJS.ProcessEnv) {
    const lines: string[] = [];
    const created = deepseekProvider.create({ model: "deepseek-flash", cwd: "/tmp", env: testEnv(extra), logger: createStderrLogger("warn", (line) => lines.push(line)) });
    const delays = () => lines.flatMap((l) => [...l.matchAll(/; retry \d+ of \d+ in (\d+) ms\n/g)].map((m) => Number(m[1])));
    return { created, delays };
  }

  it("honours Retry-After: 0 and Retry-After: 1 on 429", async () => {
    const { created, delays } = loggedProvider({ HARNESS_RETRY_BASE_MS: "3000", HARNESS_RETRY_MAX_MS: "3000" });
    const provider = await created;
    server.enqueue(jsonReply(429, errorBody("rate limited", "rate_limit"), { "retry-after": "0" }), okReply());
    expect(text(await collect(provider))).toBe("ok");
    // Backoff alone would have waited >= 1.5 s: Retry-After 0 overrides it.
    expect(delays()).toEqual([0]);

    server.enqueue(jsonReply(429, errorBody("rate limited", "rate_limit"), { "retry-after": "1" }), okReply());
    expect(text(await collect(provider))).toBe("ok");
    expect(delays()).toEqual([0, 1000]);
    const gap = server.requests[3].receivedAt - server.requests[2].receivedAt;
    expect(gap).toBeGreaterThanOrEqual(950);
    expect(server.requests).toHaveLength(4);
  });

  it("caps Retry-After at HARNESS_RETRY_AFTER_MAX_MS", async () => {
    server.enqueue(jsonReply(503, errorBody("busy"), { "retry-after": "3600" }), okReply());
    const { created, delays } = loggedProvider({ HARNESS_RETRY_AFTER_MAX_MS: "50" });
    expect(text(await collect(await created))).toBe("ok");
    expect(delays()).toEqual([50]);
  });

  it("writes its retry warnings and debug lines through the logger it is given, prefixed with its name", async () => {
    server.enqueue(jsonReply(503, errorBody("busy")), sseReply(["data: not json\n\n", frame(chunk({ content: "ok" }, "stop"))]));
    const lines: string[] = [];
    const provider = await deepseekProvider.create({
      model: "m",
      cwd: "/tmp",
      env: testEnv({ HARNESS_LOG_LEVEL: "silent" }),
      logger: createStderrLogger("debug", (line) => lines.push(line)),
    });
    expect(text(await collect(provider))).toBe("ok");
    expect(lines.some((l) => l.startsWith("harness-bridge warn: provider deepseek: deepseek answered HTTP 503: busy; retry 1 of 3"))).toBe(true);
    expect(lines.some((l) => l.startsWith("harness-bridge debug: provider deepseek: ignored a non-JSON data line"))).toBe(true);
    expect(lines.some((l) => l.includes("without [DONE]"))).toBe(true);
  });

  it("gives up after the configured retries with the last status", async () => {
    server.enqueue(
      jsonReply(500, errorBody("boom 1", "server_error")),
      jsonReply(502, errorBody("boom 2", "server_error")),
      jsonReply(503, errorBody("boom 3", "server_error")),
      jsonReply(500, errorBody("boom 4", "server_error")),
    );
    const { error } = await collectError(await makeProvider());
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).httpStatus).toBe(500);
    expect((error as ModelError).message).toContain("boom 4");
    expect((error as ModelError).message).toContain("3 retries");
    expect(server.requests).toHaveLength(4);
  });

  it("reports a 429 that outlasts the retries as rate-limit", async () => {
    const limited = () => jsonReply(429, errorBody("Rate limit reached", "rate_limit"), { "retry-after": "0" });
    server.enqueue(limited(), limited(), okReply());
    const { error } = await collectError(await makeProvider({ HARNESS_MAX_RETRIES: "1" }));
    expect(error).toMatchObject({ name: "ModelError", httpStatus: 429, code: "rate-limit" });
    expect((error as ModelError).message).toContain("Rate limit reached");
    expect(server.requests).toHaveLength(2);
  });

  it("does not retry a 401: the key was refused", async () => {
    server.enqueue(jsonReply(401, errorBody("Authentication Fails, Your api key: ****-key is invalid", "authentication_error")), okReply());
    const { error } = await collectError(await makeProvider());
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).message).toMatch(/API key was refused/);
    expect((error as ModelError).message).toContain("Authentication Fails");
    expect((error as ModelError).httpStatus).toBe(401);
    expect((error as ModelError).code).toBe("auth");
    expect(server.requests).toHaveLength(1);
  });

  it("maps a context-window 400 to code context-window, without retry", async () => {
    server.enqueue(
      jsonReply(
        400,
        errorBody(
          "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens (140000 in the messages, 0 in the completion). Please reduce the length of the messages or completion.",
        ),
      ),
    );
    const { error } = await collectError(await makeProvider());
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).code).toBe("context-window");
    expect((error as ModelError).httpStatus).toBe(400);
    expect((error as ModelError).message).toContain("maximum context length is 131072");
    expect(server.requests).toHaveLength(1);
  });

  it("reports other HTTP errors with status and the server's message, without retry", async () => {
    server.enqueue(jsonReply(404, errorBody("Model Not Exist")), jsonReply(400, { message: "bad field" }));
    const provider = await makeProvider();
    let { error } = await collectError(provider);
    expect(error).toMatchObject({ name: "ModelError", httpStatus: 404, code: "http" });
    expect((error as ModelError).message).toContain("Model Not Exist");
    ({ error } = await collectError(provider));
    expect(error).toMatchObject({ httpStatus: 400, code: "http" });
    expect((error as ModelError).message).toContain("bad field");
    expect(server.requests).toHaveLength(2);
  });
});

describe("retry helpers", () => {
  it("parseRetryAfter reads seconds and HTTP dates", () => {
    const now = Date.parse("Wed, 21 Oct 2015 07:28:00 GMT");
    expect(parseRetryAfter("0", now)).toBe(0);
    expect(parseRetryAfter("2", now)).toBe(2000);
    expect(parseRetryAfter("1.5", now)).toBe(1500);
    expect(parseRetryAfter("Wed, 21 Oct 2015 07:28:05 GMT", now)).toBe(5000);
    expect(parseRetryAfter("Wed, 21 Oct 2015 07:27:00 GMT", now)).toBe(0);
    expect(parseRetryAfter("soon", now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });

  it("backoffDelay grows exponentially with jitter, up to the cap", () => {
    expect(backoffDelay(0, 500, 8000, () => 0)).toBe(250);
    expect(backoffDelay(0, 500, 8000, () => 1)).toBe(500);
    expect(backoffDelay(2, 500, 8000, () => 1)).toBe(2000);
    expect(backoffDelay(10, 500, 8000, () => 1)).toBe(8000);
    expect(backoffDelay(10, 500, 8000, () => 0)).toBe(4000);
  });
});
