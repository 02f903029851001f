/**
 * The environment of every command the bridge starts (bash's, MCP stdio servers'): what of the
 * bridge's own environment it may see.
 */
import * as path from "node:path";
import { PROVIDER_KEY_VARIABLES } from "../providers/types.js";

/** Environment variables never passed to commands, besides any matching `SECRET_ENV_PATTERN`. */
export const SECRET_ENV_NAMES: readonly string[] = PROVIDER_KEY_VARIABLES;
/** Names matching this are treated as secrets and removed from the commands' environment. */
export const SECRET_ENV_PATTERN =
  /KEY|SECRET|TOKEN|PASSWORD|PASSWD|PASSPHRASE|(^|_)PASS(_|$)|PGPASS|CREDENTIAL|AUTH(?!OR)|COOKIE|SESSION|PRIVATE|^AWS_|^AZURE_CLIENT|^GOOGLE_APPLICATION/i;
/** A value holding a URL with credentials (`scheme://user:password@host`, e.g. a proxy or database URL) is a secret too. */
export const CREDENTIAL_URL_PATTERN = /[a-z][a-z0-9+.-]*:\/\/[^\s/@:]*:[^\s/@]*@/i;
/**
 * The OpenTelemetry exporter's headers (`OTEL_EXPORTER_OTLP_HEADERS`, `…_TRACES_HEADERS`, any
 * signal's): they carry the collector's credentials (`authorization=Bearer …`,
 * `x-honeycomb-team=…`, `api-key=…`) under a name no other rule catches. Secrets, always.
 */
export const OTLP_HEADERS_PATTERN = /^OTEL_EXPORTER_OTLP_(?:[A-Z]+_)?HEADERS$/i;
/** An OTLP endpoint: a secret when its URL carries a query or fragment (an API key there) or credentials. */
export const OTLP_ENDPOINT_PATTERN = /^OTEL_EXPORTER_OTLP_(?:[A-Z]+_)?ENDPOINT$/i;
/**
 * Whether `name` can match either OTLP pattern: every name both match starts with this prefix,
 * in any case. Checked first, so that a start whose environment has no OTLP variable (almost
 * every one) never runs the two patterns: a case-insensitive pattern's first runs compile it,
 * on the start-up path (bench/README.md, "Cold start without bubblewrap, round 4").
 */
const OTLP_PREFIX = "OTEL_EXPORTER_OTLP_";
const otlpNamed = (name: string) => name.length > OTLP_PREFIX.length && name.slice(0, OTLP_PREFIX.length).toUpperCase() === OTLP_PREFIX;
const secretEndpoint = (name: string, value: string) => OTLP_ENDPOINT_PATTERN.test(name) && /[?#@]/.test(value);
/**
 * The secrets the OpenTelemetry exporter's settings carry, for the redactor (redact.ts): each
 * header value as written and decoded, and the bearer token in it; an endpoint's password and
 * query values. A command in `full` mode can still read the bridge's own environment
 * (`/proc/<pid>/environ`), so they must not reach the model's history or the logs either.
 */
export function exporterSecrets(env: NodeJS.ProcessEnv): string[] {
  const out: string[] = [];
  const decoded = (raw: string) => {
    try {
      return decodeURIComponent(raw);
    } catch {
      return raw;
    }
  };
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || !otlpNamed(name)) continue;
    if (OTLP_HEADERS_PATTERN.test(name)) {
      for (const part of value.split(",")) {
        const raw = part.slice(part.indexOf("=") + 1).trim();
        const plain = decoded(raw);
        out.push(raw, plain, plain.split(/\s+/).at(-1) ?? "");
      }
    } else if (OTLP_ENDPOINT_PATTERN.test(name)) {
      try {
        const url = new URL(value);
        out.push(url.password, decoded(url.password), url.search.slice(1), ...url.searchParams.values(), url.hash.slice(1));
      } catch {
        // not a URL: nothing the exporter would send
      }
    }
  }
  return out;
}

/** Set for every command: no colours, no pagers, a dumb terminal. */
export const BASH_ENV_OVERRIDES: Readonly<Record<string, string>> = { NO_COLOR: "1", PAGER: "cat", GIT_PAGER: "cat", TERM: "dumb" };

/**
 * The environment of a command: `base` without secrets (names matching `SECRET_ENV_PATTERN`,
 * values holding a URL with credentials, the OTLP exporter's headers and an OTLP endpoint with
 * a query), PATH without relative or empty entries (those
 * resolve against the working directory, which is the workspace: a `git` or `ls` planted there
 * would run in place of the real one), plus `BASH_ENV_OVERRIDES`.
 */
export function commandEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(base)) {
    if (value === undefined || SECRET_ENV_NAMES.includes(name) || SECRET_ENV_PATTERN.test(name) || CREDENTIAL_URL_PATTERN.test(value)) continue;
    if (OTLP_HEADERS_PATTERN.test(name) || secretEndpoint(name, value)) continue;
    env[name] = value;
  }
  if (env.PATH !== undefined) env.PATH = env.PATH.split(path.delimiter).filter((dir) => path.isAbsolute(dir)).join(path.delimiter);
  return { ...env, ...BASH_ENV_OVERRIDES };
}

