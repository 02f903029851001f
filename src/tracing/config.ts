/**
 * The standard OpenTelemetry variables, read once when tracing is loaded: where to send spans,
 * with which headers and resource, how long to wait, and whether message content is captured.
 * Only what the bridge supports is honoured: OTLP over HTTP, encoded as JSON (see
 * docs/tracing.md for why JSON); a `grpc` protocol is refused with a warning rather than
 * sending what the receiver cannot read.
 *
 * @module
 */

export interface TracingConfig {
  /** The full URL spans are POSTed to (…/v1/traces). */
  url: string;
  /** OTEL_EXPORTER_OTLP_HEADERS (and _TRACES_HEADERS, which wins per key). Never put in a span. */
  headers: Record<string, string>;
  /** The resource: service.name and OTEL_RESOURCE_ATTRIBUTES. */
  resource: Record<string, string>;
  /** One export request's timeout (OTEL_EXPORTER_OTLP_TIMEOUT, default 10 s). */
  timeoutMs: number;
  /** How long spans wait to be batched (OTEL_BSP_SCHEDULE_DELAY, default 5 s); a turn's end exports sooner. */
  scheduleDelayMs: number;
  /** Spans kept while the collector is slow or away (OTEL_BSP_MAX_QUEUE_SIZE, default 2048); past it new spans are dropped. */
  maxQueue: number;
  /** Spans per request (OTEL_BSP_MAX_EXPORT_BATCH_SIZE, default 512). */
  maxBatch: number;
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: messages, tool arguments and results go into spans. */
  captureContent: boolean;
  /**
   * The most characters of one content attribute (OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT, else
   * OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT; default 16384, where the spec's default is no limit): a tool
   * result can be megabytes, and the export queue holds up to maxQueue spans.
   */
  contentLimit: number;
  /** OTEL_TRACES_SAMPLER and _ARG: which turns' spans are exported (sampler.ts). */
  sampler: Sampler;
  /** Why the sampler variables were not taken as written, for the log; absent when they were. */
  samplerNote?: string;
}

/**
 * A sampler of the spec's list: `ratio` of new traces are sampled (always_on: 1, always_off: 0,
 * traceidratio: OTEL_TRACES_SAMPLER_ARG), decided from the trace id; `parentBased`: a turn under
 * a caller's span (a traceparent) or a subagent's follows its parent's sampled flag instead.
 */
export interface Sampler {
  parentBased: boolean;
  ratio: number;
}

const DEFAULT_ENDPOINT = "http://localhost:4318";

/** Whether a variable says true (the spec's boolean: "true", any case). */
const isTrue = (value: string | undefined) => value?.trim().toLowerCase() === "true";

/**
 * The tracing configuration, or a reason it is off. `wanted` (server/tracing-loader.ts) has
 * already said some variable asks for traces; this decides the rest.
 */
export function readConfig(env: NodeJS.ProcessEnv, version: string): TracingConfig | { off: string; misread?: true } {
  if (isTrue(env.OTEL_SDK_DISABLED)) return { off: "OTEL_SDK_DISABLED is true" };
  const exporters = (env.OTEL_TRACES_EXPORTER ?? "otlp").split(",").map((s) => s.trim().toLowerCase());
  if (exporters.includes("none")) return { off: "OTEL_TRACES_EXPORTER is none" };
  // `misread`: the variables ask for traces the bridge cannot send. Said as a warning (the
  // default log level shows it): at info, a user who set an endpoint saw no trace and no word why.
  if (!exporters.includes("otlp")) return { off: `OTEL_TRACES_EXPORTER=${env.OTEL_TRACES_EXPORTER}: only otlp is supported`, misread: true };
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? "http/json").trim().toLowerCase();
  if (protocol === "grpc") return { off: "the OTLP protocol grpc is not supported: the bridge sends OTLP/HTTP (JSON); point it at the collector's HTTP port (4318)", misread: true };
  const url = tracesUrl(env);
  // The value is not quoted: written without a scheme, `user:token@host` reads as a URL whose scheme is `user:`.
  if (!url) return { off: "the OTLP endpoint is not an http(s) URL (it needs its scheme: http://host:4318)", misread: true };
  const resource: Record<string, string> = { ...parsePairs(env.OTEL_RESOURCE_ATTRIBUTES) };
  resource["service.name"] = env.OTEL_SERVICE_NAME?.trim() || resource["service.name"] || "harness-bridge";
  resource["service.version"] ??= version;
  resource["telemetry.sdk.name"] = "harness-bridge";
  resource["telemetry.sdk.language"] = "nodejs";
  return {
    url,
    headers: { ...parsePairs(env.OTEL_EXPORTER_OTLP_HEADERS), ...parsePairs(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS) },
    resource,
    timeoutMs: duration(env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT ?? env.OTEL_EXPORTER_OTLP_TIMEOUT, 10_000),
    scheduleDelayMs: duration(env.OTEL_BSP_SCHEDULE_DELAY, 5_000),
    maxQueue: count(env.OTEL_BSP_MAX_QUEUE_SIZE, 2048),
    maxBatch: count(env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE, 512),
    captureContent: isTrue(env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT),
    contentLimit: count(env.OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT ?? env.OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT, 16_384),
    ...readSampler(env),
  };
}

/**
 * OTEL_TRACES_SAMPLER (default parentbased_always_on, as the spec says) and, for the ratio
 * samplers, OTEL_TRACES_SAMPLER_ARG (a probability in [0, 1], default 1). Samplers that need a
 * remote service (jaeger_remote, xray) and unknown names fall back to the default with a note.
 */
function readSampler(env: NodeJS.ProcessEnv): { sampler: Sampler; samplerNote?: string } {
  const name = env.OTEL_TRACES_SAMPLER?.trim().toLowerCase() || "parentbased_always_on";
  const parentBased = name.startsWith("parentbased_");
  const root = parentBased ? name.slice("parentbased_".length) : name;
  if (root === "always_on") return { sampler: { parentBased, ratio: 1 } };
  if (root === "always_off") return { sampler: { parentBased, ratio: 0 } };
  if (root === "traceidratio") {
    const raw = env.OTEL_TRACES_SAMPLER_ARG?.trim();
    const ratio = Number(raw);
    if (raw === undefined || raw === "") return { sampler: { parentBased, ratio: 1 } };
    if (Number.isFinite(ratio) && ratio >= 0 && ratio <= 1) return { sampler: { parentBased, ratio } };
    return { sampler: { parentBased, ratio: 1 }, samplerNote: `OTEL_TRACES_SAMPLER_ARG=${raw} is not a probability from 0 to 1: sampling every trace` };
  }
  return { sampler: { parentBased: true, ratio: 1 }, samplerNote: `OTEL_TRACES_SAMPLER=${env.OTEL_TRACES_SAMPLER} is not supported: using parentbased_always_on` };
}

/**
 * `url` as it may be written to a log: without its user name and password (an endpoint may
 * carry basic-auth credentials, `https://user:token@collector`, which the export still sends)
 * nor its query and fragment (where some collectors take an API key). The log is stderr,
 * often kept in CI output or shared in a bug report; only the export request carries them.
 */
export function urlForLog(url: string): string {
  try {
    const u = new URL(url);
    const hidden = u.username !== "" || u.password !== "" || u.search !== "" || u.hash !== "";
    u.username = "";
    u.password = "";
    u.search = "";
    u.hash = "";
    return hidden ? `${u.href} (credentials and query not shown)` : u.href;
  } catch {
    return "(an endpoint that is not a URL)";
  }
}

/** The signal-specific endpoint is used as given; the general one gets `/v1/traces` appended (the OTLP exporter spec). */
function tracesUrl(env: NodeJS.ProcessEnv): string | undefined {
  const specific = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const raw = specific || `${(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || DEFAULT_ENDPOINT).replace(/\/+$/, "")}/v1/traces`;
  try {
    const url = new URL(raw);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/** `k1=v1,k2=v2`, each part percent-decoded (W3C Baggage style, as the spec says); malformed pairs are skipped. */
export function parsePairs(raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (raw ?? "").split(",")) {
    const eq = part.indexOf("=");
    if (eq <= 0) continue;
    try {
      const key = decodeURIComponent(part.slice(0, eq).trim());
      if (key) out[key] = decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      // A bad percent-escape: that pair is skipped, the rest still apply.
    }
  }
  return out;
}

/**
 * A count (spans, characters): a whole number from 1, else the default. A fraction is refused,
 * not rounded: a batch size of 0.5 took no span per batch, and the export loop spun without end
 * on a queue it never emptied, freezing the bridge.
 */
function count(raw: string | undefined, fallback: number): number {
  const n = Number(raw);
  return raw !== undefined && raw.trim() !== "" && Number.isSafeInteger(n) && n > 0 ? n : fallback;
}

/** The longest delay a Node timer takes; past it Node fires after 1 ms (an export would time out at once). */
const MAX_TIMER_MS = 2_147_483_647;

/** Milliseconds: a number above 0, rounded up and capped at a timer's range; else the default. */
function duration(raw: string | undefined, fallback: number): number {
  const n = Number(raw);
  return raw !== undefined && raw.trim() !== "" && Number.isFinite(n) && n > 0 ? Math.min(Math.ceil(n), MAX_TIMER_MS) : fallback;
}
