/**
 * The first-aid hints appended to a new user's first model errors (src/providers/openai-compatible/hints.ts):
 * which failures get one, and that the original message stays first and whole. The binary's
 * own messages are pinned end to end by python/sdk/tests/test_first_errors.py.
 */
import { describe, expect, it } from "vitest";
import { hintFor, withHint, type HintContext } from "../../../src/providers/openai-compatible/hints.js";
import { describeNetworkError, httpFailure } from "../../../src/providers/openai-compatible/errors.js";
import { ModelError } from "../../../src/providers/types.js";

const context: HintContext = {
  name: "openai",
  endpoint: "https://llm.example.test:8443/v1/chat/completions",
  baseUrlVar: "OPENAI_BASE_URL",
  defaultBaseUrl: "https://api.openai.com/v1",
  model: "gpt-nope",
};

const networkError = (code: string, message: string) => {
  const cause = Object.assign(new Error(message), { code });
  return new ModelError(`the request to ${context.endpoint} failed: ${describeNetworkError(new TypeError("fetch failed", { cause }))}`, undefined, "network");
};
const http = (status: number, body: object) => httpFailure("openai", status, JSON.stringify(body), null, true).error;

describe("first-aid hints", () => {
  it("a host that does not resolve names the variable, the network and DNS", () => {
    expect(hintFor(networkError("ENOTFOUND", "getaddrinfo ENOTFOUND llm.example.test"), context)).toBe(
      "the host llm.example.test does not resolve: check the spelling of OPENAI_BASE_URL (default https://api.openai.com/v1), this machine's network and DNS (HTTPS_PROXY when only a proxy reaches out)",
    );
  });

  it("an untrusted certificate names NODE_EXTRA_CA_CERTS", () => {
    expect(hintFor(networkError("SELF_SIGNED_CERT_IN_CHAIN", "self-signed certificate in certificate chain"), context)).toMatch(
      /^the TLS certificate of llm\.example\.test:8443 is not trusted here: give the CA that signed it in NODE_EXTRA_CA_CERTS/,
    );
  });

  it("OpenAI's unknown model (404, model_not_found) is about the model, not the URL", () => {
    const error = http(404, { error: { message: "The model `gpt-nope` does not exist or you do not have access to it.", type: "invalid_request_error", param: null, code: "model_not_found" } });
    expect(hintFor(error, context)).toBe("the server at llm.example.test:8443 does not serve the model 'gpt-nope': pass a model it serves (initialize.model; model= in the Python SDK)");
  });

  it("other failures get no hint: a refused key, an overlong request, a bad setting, a server error", () => {
    expect(hintFor(http(401, { error: { message: "Incorrect API key provided" } }), context)).toBeUndefined();
    expect(hintFor(http(400, { error: { message: "This model's maximum context length is 8192 tokens" } }), context)).toBeUndefined();
    expect(hintFor(http(400, { error: { message: "thinking.type must be 'enabled' or 'disabled'" } }), context)).toBeUndefined();
    expect(hintFor(http(500, { error: { message: "internal error" } }), context)).toBeUndefined();
    expect(hintFor(networkError("ECONNRESET", "other side closed"), context)).toBeUndefined();
  });

  it("withHint keeps the message first and whole, and the status and code", () => {
    const error = http(404, { detail: "Not Found" });
    const hinted = withHint(error, context) as ModelError;
    expect(hinted).toBeInstanceOf(ModelError);
    expect(hinted.message.startsWith(`${error.message} — there is no chat-completions endpoint at ${context.endpoint}: check OPENAI_BASE_URL`)).toBe(true);
    expect([hinted.httpStatus, hinted.code]).toEqual([404, "http"]);
    const plain = new Error("not a model error");
    expect(withHint(plain, context)).toBe(plain);
  });
});
