/**
 * First aid for the failures a new user meets first — nothing listening at the base URL, a
 * host that does not resolve, a port fetch refuses, a base URL whose path has no chat-completions endpoint (HTTP 404),
 * a model name the server does not know — as one sentence appended to the model error's
 * message, naming the cause and the fix (the variable or field to change). The message the
 * error had stays first and whole: it is what the server or the network said.
 *
 * @module
 */
import { ModelError } from "../types.js";

/** What a hint may name: where the requests went and how the user moves them. */
export interface HintContext {
  /** The provider's name (`deepseek`, `openai`). */
  name: string;
  /** The full chat-completions URL the requests go to. */
  endpoint: string;
  /** The variable holding the base URL (`DEEPSEEK_BASE_URL`). */
  baseUrlVar: string;
  /** The route's default base URL (`https://api.deepseek.com`). */
  defaultBaseUrl: string;
  /** The model name of the request (`initialize.model`). */
  model: string;
}

// describeNetworkError always writes the errno-style code of the cause chain into the message.
const NETWORK_CODE = /\b(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|ECONNRESET|ETIMEDOUT|UND_ERR_CONNECT_TIMEOUT|UND_ERR_SOCKET|CERT_[A-Z_]+|UNABLE_TO_[A-Z_]+|SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|ERR_TLS_CERT_ALTNAME_INVALID)\b/;
// DeepSeek: HTTP 400 "Model Not Exist"; OpenAI: 404, code model_not_found, "The model `x` does
// not exist or you do not have access to it"; vLLM/Ollama: 404 "model 'x' not found".
const UNKNOWN_MODEL = /model[^.]{0,80}\b(not exist|does not exist|not found|unknown|is not supported|invalid)\b|model_not_found|unknown model|invalid model/i;

function hostOf(endpoint: string): string {
  try {
    return new URL(endpoint).host;
  } catch {
    return endpoint;
  }
}

function portOf(endpoint: string): string | undefined {
  try {
    return new URL(endpoint).port || undefined;
  } catch {
    return undefined;
  }
}

/** The hint for `error`, or undefined when it is not one of the first failures above. */
export function hintFor(error: ModelError, context: HintContext): string | undefined {
  const { endpoint, baseUrlVar, defaultBaseUrl, model } = context;
  const moveIt = `${baseUrlVar} (default ${defaultBaseUrl})`;
  if (error.code === "network" || error.code === "timeout") {
    const code = NETWORK_CODE.exec(error.message)?.[1];
    if (code === "ECONNREFUSED") {
      return `nothing accepts connections at ${hostOf(endpoint)}: start the server there, or point ${moveIt} at one that runs`;
    }
    if (code === "ENOTFOUND" || code === "EAI_AGAIN") {
      return `the host ${hostOf(endpoint).replace(/:\d+$/, "")} does not resolve: check the spelling of ${moveIt}, this machine's network and DNS (HTTPS_PROXY when only a proxy reaches out)`;
    }
    if (code === "EHOSTUNREACH" || code === "ENETUNREACH" || code === "ETIMEDOUT" || code === "UND_ERR_CONNECT_TIMEOUT") {
      return `${hostOf(endpoint)} cannot be reached from here: check the network, a firewall or proxy (HTTPS_PROXY, NO_PROXY) and ${moveIt}`;
    }
    if (/: bad port\b/.test(error.message)) {
      // The port refused may be a redirect's, not the base URL's: both are named.
      const port = portOf(endpoint);
      return `fetch refuses to connect to a blocked "bad port" (the web's list, such as 6000, 6665–6669 and 10080; the base URL's port is ${port ?? "its scheme's default"}, unless a redirect led to another): run the server on another port and point ${moveIt} at it`;
    }
    if (code !== undefined && /CERT|UNABLE_TO|SELF_SIGNED/.test(code)) {
      return `the TLS certificate of ${hostOf(endpoint)} is not trusted here: give the CA that signed it in NODE_EXTRA_CA_CERTS (a PEM file), or check ${moveIt}`;
    }
    return undefined;
  }
  // "http": not a refused key ("auth") or an overlong request ("context-window"), named already.
  if (error.code === "http" && (error.httpStatus === 400 || error.httpStatus === 404 || error.httpStatus === 422)) {
    if (UNKNOWN_MODEL.test(error.message)) {
      return `the server at ${hostOf(endpoint)} does not serve the model '${model}': pass a model it serves (initialize.model; model= in the Python SDK)`;
    }
    if (error.httpStatus === 404) {
      return `there is no chat-completions endpoint at ${endpoint}: check ${moveIt}; the bridge appends /chat/completions to it, so it ends where that path starts (e.g. https://api.deepseek.com, http://127.0.0.1:8000/v1)`;
    }
  }
  return undefined;
}

/** `err` with its hint appended when it is a {@link ModelError} that has one; else `err`. */
export function withHint(err: unknown, context: HintContext): unknown {
  if (!(err instanceof ModelError)) return err;
  const hint = hintFor(err, context);
  return hint === undefined ? err : new ModelError(`${err.message} — ${hint}`, err.httpStatus, err.code);
}
