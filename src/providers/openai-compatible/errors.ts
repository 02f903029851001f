/**
 * Errors: what a server's error body, status or a network failure means, as {@link ModelError}s
 * (and whether another attempt may fix it).
 *
 * @module
 */
import { isObject } from "../../json-value.js";
import { ModelError } from "../types.js";
import { AttemptFailure, parseRetryAfter } from "./retry.js";


const CONTEXT_WINDOW_PATTERN = /context[ _-]?length|maximum context|context[ _-]?window|too many tokens|context_length_exceeded/i;

/** True when an error message says the request does not fit the model's context window. */
export function isContextWindowMessage(text: string): boolean {
  return CONTEXT_WINDOW_PATTERN.test(text);
}

/** The `message` of `{"error": {"message": …}}`, `{"error": "…"}` or `{"message": …}`. */
export function errorMessageOf(body: unknown): string | undefined {
  if (!isObject(body)) return undefined;
  const error = body.error;
  if (typeof error === "string") return error;
  if (isObject(error) && typeof error.message === "string") return error.message;
  if (typeof body.message === "string") return body.message;
  return undefined;
}

/** The server's error message from a response body (JSON or text), shortened. */
export function serverErrorMessage(bodyText: string): string {
  let message: string | undefined;
  try {
    message = errorMessageOf(JSON.parse(bodyText));
  } catch {
    /* not JSON: use the text */
  }
  message = (message ?? bodyText).trim();
  if (message.length > 1000) message = `${message.slice(0, 1000)}…`;
  return message;
}

/** Classifies an HTTP error status: 401/403 auth, a context-window 4xx, 408/429/5xx retryable (honouring `Retry-After`). */
export function httpFailure(name: string, status: number, bodyText: string, retryAfter: string | null, hasKey: boolean): AttemptFailure {
  const serverMessage = serverErrorMessage(bodyText) || "(empty response body)";
  if (status === 401 || status === 403) {
    const what = hasKey ? `the ${name} API key was refused` : `the ${name} server refused the request made without an API key`;
    return new AttemptFailure(new ModelError(`${what} (HTTP ${status}): ${serverMessage}`, status, "auth"), false);
  }
  if ((status === 400 || status === 413 || status === 422) && isContextWindowMessage(serverMessage)) {
    return new AttemptFailure(
      new ModelError(`the request does not fit the model's context window (HTTP ${status}): ${serverMessage}`, status, "context-window"),
      false,
    );
  }
  const retryable = status === 408 || status === 429 || status >= 500;
  const code = status === 429 ? "rate-limit" : "http";
  return new AttemptFailure(
    new ModelError(`${name} answered HTTP ${status}: ${serverMessage}`, status, code),
    retryable,
    retryable ? parseRetryAfter(retryAfter) : undefined,
  );
}

/** How many errors of a `cause` chain are looked at: a chain may loop (an error its own cause). */
const CAUSE_DEPTH = 4;

/** `err` and the errors of its `cause` chain, outermost first, at most `CAUSE_DEPTH`. */
function causeChain(err: unknown): Error[] {
  const chain: Error[] = [];
  for (let current = err; chain.length < CAUSE_DEPTH && current instanceof Error; current = (current as Error & { cause?: unknown }).cause) chain.push(current);
  return chain;
}

/** Describes a fetch/stream failure from undici: `TypeError('fetch failed', {cause})` and friends. */
export function describeNetworkError(err: unknown): string {
  const parts: string[] = [];
  for (const error of causeChain(err)) {
    const code = (error as NodeJS.ErrnoException).code;
    const text = code && !error.message.includes(code) ? `${error.message} (${code})` : error.message;
    if (text && !parts.includes(text)) parts.push(text);
  }
  return parts.join(": ") || String(err);
}

/**
 * Whether fetch refused the URL's port before connecting: the WHATWG fetch standard blocks a
 * list of "bad ports" (6000, 6665–6669, 10080, …; undici's error is a cause with the message
 * `bad port`). Trying again cannot help, so such a failure is not retried.
 */
export function isBlockedPort(err: unknown): boolean {
  return causeChain(err).some((error) => error.message === "bad port");
}

/** The first errno-style `code` along an error's `cause` chain. */
export function networkCode(err: unknown): string | undefined {
  for (const error of causeChain(err)) {
    const code = (error as NodeJS.ErrnoException).code;
    if (typeof code === "string") return code;
  }
  return undefined;
}
