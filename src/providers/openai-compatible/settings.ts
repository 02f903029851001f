/**
 * Settings of the OpenAI-compatible providers: the routes (`deepseek`, `openai`), the retry and
 * timeout tuning, proxy settings, and how they are resolved from the bridge's environment.
 *
 * @module
 */
import { createStderrLogger, type Logger, type LogMessage } from "../../log.js";
import { ProviderSettingError, ProviderUnavailableError, type ProviderConfig, type ThinkingMode, type ToolChoice } from "../types.js";

/** Log sink of the provider: one line per call. A debug message may be a function, called only when debug lines are written. */
export type ProviderLog = (level: "debug" | "warn", message: LogMessage) => void;

/** Proxy settings, read from the bridge's environment (never from `process.env` directly). */
export interface ProxySettings {
  /** `http_proxy` / `HTTP_PROXY`; "" for none. */
  httpProxy: string;
  /** `https_proxy` / `HTTPS_PROXY`; "" for none (then `httpProxy` is used for https too). */
  httpsProxy: string;
  /** `no_proxy` / `NO_PROXY`: comma- or space-separated hosts (`host`, `host:port`, `.suffix`, `*`). */
  noProxy: string;
}

/** Retry and timeout tuning, shared by every OpenAI-compatible route. */
export interface TransportTuning {
  /** Retries after the first attempt for 408/429/5xx, connection errors and timeouts before any output. Default 3 (`HARNESS_MAX_RETRIES`). */
  maxRetries: number;
  /** First backoff delay; doubles per retry, with jitter. Default 500 ms (`HARNESS_RETRY_BASE_MS`). */
  retryBaseMs: number;
  /** Ceiling of one backoff delay. Default 8000 ms (`HARNESS_RETRY_MAX_MS`). */
  retryMaxMs: number;
  /** Ceiling of a server's `Retry-After`. Default 60000 ms (`HARNESS_RETRY_AFTER_MAX_MS`). */
  retryAfterMaxMs: number;
  /** TCP (and TLS) connect timeout. Default 30000 ms (`HARNESS_CONNECT_TIMEOUT_MS`). */
  connectTimeoutMs: number;
  /** Longest silence (no byte, keep-alive comments count) while waiting for headers or body. Default 120000 ms (`HARNESS_IDLE_TIMEOUT_MS`). */
  idleTimeoutMs: number;
  /**
   * Longest wait, per attempt, from sending the request to the model's first output (a delta,
   * usage or finish): keep-alive comments do not count. Default 600000 ms, DeepSeek's own limit
   * for a queued request (`HARNESS_FIRST_TOKEN_TIMEOUT_MS`).
   */
  firstTokenTimeoutMs: number;
  /** Longest a whole model request may take, retries and backoff included. Default 3600000 ms (`HARNESS_REQUEST_TIMEOUT_MS`). */
  requestTimeoutMs: number;
}

/** The tuning `ProviderConfig` may set; each field wins over its variable. */
export type TuningOverrides = Partial<Pick<TransportTuning, "firstTokenTimeoutMs" | "requestTimeoutMs">>;

/** The `initialize` field of each override, for its error message. */
const OVERRIDE_FIELDS: Readonly<Record<keyof TuningOverrides, string>> = {
  firstTokenTimeoutMs: "firstTokenTimeoutMs",
  requestTimeoutMs: "modelRequestTimeoutMs",
};

/** Everything one OpenAI-compatible provider instance needs. */
export interface OpenAICompatibleSettings extends TransportTuning {
  /** The provider's registered name, used in messages (`deepseek`, `openai`). */
  name: string;
  /** The full URL of the chat completions endpoint. */
  endpoint: string;
  /** The route's base URL variable and its default, named by the hints of a failure (hints.ts). */
  baseUrlVar: string;
  defaultBaseUrl: string;
  /** Sent as `Authorization: Bearer …` when present. */
  apiKey?: string;
  /** Send `reasoning_content` back on assistant messages with tool calls (DeepSeek thinking mode needs it). */
  sendReasoningContent: boolean;
  /** Sent as `tool_choice` with a request that offers tools (`required` and a named tool only on a turn's first request). */
  toolChoice?: ToolChoice;
  /** The model settings of `initialize`, as body fields sent with every request. */
  modelFields: ModelFields;
  proxy: ProxySettings;
  log: ProviderLog;
}

/** Body fields carrying `initialize`'s model settings; only those that were set. */
export interface ModelFields {
  thinking?: { type: ThinkingMode };
  reasoning_effort?: string;
  user_id?: string;
  user?: string;
}

/** One route (provider name) over the shared implementation. */
export interface RouteDefinition {
  name: string;
  /** The environment variable holding the base URL, e.g. `DEEPSEEK_BASE_URL`. */
  baseUrlVar: string;
  defaultBaseUrl: string;
  /** The environment variable holding the API key, e.g. `DEEPSEEK_API_KEY`. */
  apiKeyVar: string;
  /** When true, a missing key is accepted if the base URL variable is set (keyless local servers). */
  keyOptionalWithBaseUrl: boolean;
  sendReasoningContent: boolean;
  /** The reasoning efforts the server knows; absent: any value is passed on. */
  reasoningEfforts?: readonly string[];
  /** The body field that carries `initialize.user`. */
  userField: "user_id" | "user";
}

/** The defaults of {@link TransportTuning}. */
export const DEFAULT_TUNING: Readonly<TransportTuning> = Object.freeze({
  maxRetries: 3,
  retryBaseMs: 500,
  retryMaxMs: 8_000,
  retryAfterMaxMs: 60_000,
  connectTimeoutMs: 30_000,
  idleTimeoutMs: 120_000,
  firstTokenTimeoutMs: 600_000,
  requestTimeoutMs: 3_600_000,
});

const TUNING_VARS: ReadonlyArray<[keyof TransportTuning, string]> = [
  ["maxRetries", "HARNESS_MAX_RETRIES"],
  ["retryBaseMs", "HARNESS_RETRY_BASE_MS"],
  ["retryMaxMs", "HARNESS_RETRY_MAX_MS"],
  ["retryAfterMaxMs", "HARNESS_RETRY_AFTER_MAX_MS"],
  ["connectTimeoutMs", "HARNESS_CONNECT_TIMEOUT_MS"],
  ["idleTimeoutMs", "HARNESS_IDLE_TIMEOUT_MS"],
  ["firstTokenTimeoutMs", "HARNESS_FIRST_TOKEN_TIMEOUT_MS"],
  ["requestTimeoutMs", "HARNESS_REQUEST_TIMEOUT_MS"],
];

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

/**
 * Reads {@link TransportTuning} from the environment; unset or empty variables take the default.
 * @throws ProviderUnavailableError naming the variable when a value is not a non-negative integer;
 *   ProviderSettingError naming the field when an override is not.
 */
export function readTuning(env: NodeJS.ProcessEnv, overrides: TuningOverrides = {}): TransportTuning {
  const tuning: TransportTuning = { ...DEFAULT_TUNING };
  for (const [key, variable] of TUNING_VARS) {
    const raw = nonEmpty(env[variable]);
    if (raw === undefined) continue;
    if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
      throw new ProviderUnavailableError(`${variable} must be a non-negative integer (got ${JSON.stringify(raw)})`);
    }
    tuning[key] = Number(raw);
  }
  for (const [key, value] of Object.entries(overrides) as Array<[keyof TuningOverrides, unknown]>) {
    if (value === undefined) continue;
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
      throw new ProviderSettingError(OVERRIDE_FIELDS[key], `must be a non-negative integer of milliseconds (got ${JSON.stringify(value)})`);
    }
    tuning[key] = value;
  }
  return tuning;
}

/** Reads proxy settings the way curl does: the lowercase variable first, then the uppercase one. */
export function readProxySettings(env: NodeJS.ProcessEnv): ProxySettings {
  const pick = (name: string) => nonEmpty(env[name.toLowerCase()]) ?? nonEmpty(env[name.toUpperCase()]) ?? "";
  return { httpProxy: pick("http_proxy"), httpsProxy: pick("https_proxy"), noProxy: pick("no_proxy") };
}

/**
 * `{base}/chat/completions`: a trailing slash of the base URL is dropped; a base URL that already
 * ends in `/v1` (or any path) is kept as it is.
 */
export function chatCompletionsUrl(baseUrl: string): string {
  return `${baseUrl.trim().replace(/\/+$/, "")}/chat/completions`;
}

/**
 * The provider's log: the bridge's logger (`ProviderConfig.logger`, which follows
 * `--log-level`), each line prefixed `provider NAME:`. Without one, warnings go to stderr.
 */
export function providerLog(logger: Logger | undefined, name: string): ProviderLog {
  const sink = logger ?? createStderrLogger("warn");
  return (level, message) => {
    if (level === "debug") sink.debug(() => `provider ${name}: ${typeof message === "function" ? message() : message}`);
    else sink.warn(`provider ${name}: ${typeof message === "function" ? message() : message}`);
  };
}

/**
 * Resolves a route's settings from the bridge's environment and what `initialize` set in
 * `config` (its fields win over the variables).
 * @throws ProviderUnavailableError when the key is missing (and not optional), the base URL is not
 *   an http(s) URL, or a tuning variable is malformed; ProviderSettingError when a setting of
 *   `config` is one the route cannot take. The message names it.
 */
export function resolveSettings(
  route: RouteDefinition,
  env: NodeJS.ProcessEnv,
  config: Partial<Omit<ProviderConfig, "model" | "cwd" | "env">> = {},
): OpenAICompatibleSettings {
  const configuredBaseUrl = nonEmpty(env[route.baseUrlVar]);
  const apiKey = nonEmpty(env[route.apiKeyVar]);
  if (!apiKey && !(route.keyOptionalWithBaseUrl && configuredBaseUrl)) {
    throw new ProviderUnavailableError(missingKeyMessage(route));
  }
  const baseUrl = configuredBaseUrl ?? route.defaultBaseUrl;
  let parsed: URL;
  try {
    parsed = new URL(baseUrl);
  } catch {
    throw new ProviderUnavailableError(`${route.baseUrlVar} is not a URL: ${JSON.stringify(redactUserinfo(baseUrl))}`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new ProviderUnavailableError(`${route.baseUrlVar} must be an http:// or https:// URL (got ${JSON.stringify(redactUserinfo(baseUrl))})`);
  }
  if (parsed.username !== "" || parsed.password !== "") {
    // Credentials in the URL would travel in every error, log line and proxy hop that shows it.
    throw new ProviderUnavailableError(
      `${route.baseUrlVar} holds credentials (${JSON.stringify(redactUserinfo(baseUrl))}); remove them from the URL and put the key in ${route.apiKeyVar}`,
    );
  }
  return {
    ...readTuning(env, { firstTokenTimeoutMs: config.firstTokenTimeoutMs, requestTimeoutMs: config.requestTimeoutMs }),
    name: route.name,
    endpoint: chatCompletionsUrl(baseUrl),
    baseUrlVar: route.baseUrlVar,
    defaultBaseUrl: route.defaultBaseUrl,
    apiKey,
    sendReasoningContent: route.sendReasoningContent,
    toolChoice: checkToolChoice(config.toolChoice),
    modelFields: modelFields(route, config),
    proxy: readProxySettings(env),
    log: providerLog(config.logger, route.name),
  };
}

/**
 * The body fields of the model settings. DeepSeek's shapes (guides/thinking_mode,
 * quick_start/rate_limit): `thinking: {type}`, `reasoning_effort`, `user_id`; other routes get
 * `thinking` in the same shape and `reasoning_effort` as given, and `user` (OpenAI's name).
 * @throws ProviderSettingError for an effort the route does not know, or one set with thinking off.
 */
function modelFields(route: RouteDefinition, config: Partial<Pick<ProviderConfig, "thinking" | "reasoningEffort" | "user">>): ModelFields {
  const fields: ModelFields = {};
  if (config.thinking !== undefined) fields.thinking = { type: config.thinking };
  if (config.reasoningEffort !== undefined) {
    const known = route.reasoningEfforts;
    if (known && !known.includes(config.reasoningEffort)) {
      throw new ProviderSettingError("reasoningEffort", `the ${route.name} provider takes ${known.map((e) => `'${e}'`).join(", ")} (got ${JSON.stringify(config.reasoningEffort)})`);
    }
    if (known && config.thinking === "disabled") {
      throw new ProviderSettingError("reasoningEffort", `has no effect with thinking 'disabled' on the ${route.name} provider: drop one of the two`);
    }
    fields.reasoning_effort = config.reasoningEffort;
  }
  if (config.user !== undefined) fields[route.userField] = config.user;
  return fields;
}

/** `choice` when it is a {@link ToolChoice}; @throws ProviderSettingError otherwise. */
function checkToolChoice(choice: unknown): ToolChoice | undefined {
  if (choice === undefined || choice === "auto" || choice === "required" || choice === "none") return choice;
  const name = typeof choice === "object" && choice !== null && !Array.isArray(choice) ? (choice as { name?: unknown }).name : undefined;
  if (typeof name === "string" && name !== "" && Object.keys(choice as object).length === 1) return { name };
  throw new ProviderSettingError("toolChoice", `must be "auto", "required", "none" or {name: TOOL} (got ${JSON.stringify(choice)})`);
}

/** `text` with the userinfo of any URL in it (`scheme://user:password@`) replaced by `***`. */
export function redactUserinfo(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi, "$1***@");
}

/** The message of the error a route without its key fails `initialize` with. */
export function missingKeyMessage(route: RouteDefinition): string {
  if (route.keyOptionalWithBaseUrl) {
    return (
      `the ${route.name} provider needs ${route.apiKeyVar}; set it in the bridge's environment ` +
      `(or set ${route.baseUrlVar} to a local OpenAI-compatible server that needs no key)`
    );
  }
  // The base URL variable only moves the endpoint; naming it as an alternative read as if a
  // URL alone would do.
  return (
    `the ${route.name} provider needs ${route.apiKeyVar}; set it in the bridge's environment or pass it ` +
    `with --secrets-fd (also when ${route.baseUrlVar} names another endpoint)`
  );
}
