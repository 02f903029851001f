/**
 * What the standard OTEL variables mean to the bridge (src/tracing/config.ts,
 * src/server/tracing-loader.ts) and the W3C traceparent it accepts (src/tracing/span.ts): the
 * rules a user setting them relies on, checked where a wrong reading could hide (the e2e test,
 * test/server/e2e-tracing.test.ts, covers the common settings through the binary).
 */
import { describe, expect, it } from "vitest";
import { tracesWanted } from "../../src/server/tracing-loader.js";
import { parsePairs, readConfig } from "../../src/tracing/config.js";
import { createTracer } from "../../src/tracing/index.js";
import { formatTraceparent, parseTraceparent } from "../../src/tracing/span.js";

describe("which variables switch tracing on", () => {
  it.each([
    [{}, false],
    [{ OTEL_SERVICE_NAME: "x" }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }, true],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces" }, true],
    [{ OTEL_TRACES_EXPORTER: "otlp" }, true],
    // Explicitly off: the chunk is not even loaded (it was, only to say "off").
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "True" }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_TRACES_EXPORTER: "none" }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_TRACES_EXPORTER: "otlp, none" }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "false" }, true],
  ])("%j → %s", (env, wanted) => {
    expect(tracesWanted(env)).toBe(wanted);
  });
});

describe("readConfig", () => {
  it("appends /v1/traces to the general endpoint, uses the traces endpoint as given, defaults to localhost:4318", () => {
    expect(readConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318/" }, "1")).toMatchObject({ url: "http://c:4318/v1/traces" });
    expect(readConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://t/x" }, "1")).toMatchObject({ url: "https://t/x" });
    expect(readConfig({ OTEL_TRACES_EXPORTER: "otlp" }, "1")).toMatchObject({ url: "http://localhost:4318/v1/traces" });
  });

  it("is off for OTEL_SDK_DISABLED=true, OTEL_TRACES_EXPORTER=none or another exporter, grpc, or an endpoint that is not http(s)", () => {
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" };
    for (const env of [
      { ...on, OTEL_SDK_DISABLED: "TRUE" },
      { ...on, OTEL_TRACES_EXPORTER: "none" },
      { ...on, OTEL_TRACES_EXPORTER: "zipkin" },
      { ...on, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" },
      { OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" },
    ]) {
      expect(readConfig(env, "1")).toHaveProperty("off");
    }
    expect(readConfig({ ...on, OTEL_SDK_DISABLED: "false", OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf" }, "1")).not.toHaveProperty("off");
  });

  it("takes the service name from OTEL_SERVICE_NAME over OTEL_RESOURCE_ATTRIBUTES, and per-signal headers over general ones", () => {
    const config = readConfig(
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://c",
        OTEL_RESOURCE_ATTRIBUTES: "service.name=from-attrs,team=a%20b",
        OTEL_SERVICE_NAME: "svc",
        OTEL_EXPORTER_OTLP_HEADERS: "a=1,b=2",
        OTEL_EXPORTER_OTLP_TRACES_HEADERS: "b=3",
      },
      "9.9.9",
    );
    expect(config).toMatchObject({ resource: { "service.name": "svc", team: "a b", "service.version": "9.9.9" }, headers: { a: "1", b: "3" } });
    expect(readConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_RESOURCE_ATTRIBUTES: "service.name=from-attrs" }, "1")).toMatchObject({ resource: { "service.name": "from-attrs" } });
  });

  it("parses k=v lists leniently: a malformed pair is skipped, the rest apply", () => {
    expect(parsePairs("a=1, =x,noequals,b=%ZZ,c=x=y")).toEqual({ a: "1", c: "x=y" });
  });
});

describe("traceparent", () => {
  it("parses version 00 and later versions, and formats it back", () => {
    const value = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    expect(parseTraceparent(value)).toEqual({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", flags: 1 });
    expect(formatTraceparent(parseTraceparent(value)!)).toBe(value);
    expect(parseTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-future")).toMatchObject({ flags: 0 });
  });

  it.each([
    "",
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
    "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
    "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
    "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
  ])("rejects %j", (value) => {
    expect(parseTraceparent(value)).toBeUndefined();
  });
});

describe("createTracer's word when tracing stays off", () => {
  const logged = (env: NodeJS.ProcessEnv) => {
    const lines: string[] = [];
    const logger = { debug: () => {}, info: (m: string) => lines.push(`info ${m}`), warn: (m: string) => lines.push(`warn ${m}`), error: () => {} };
    expect(createTracer(env, "1", logger)).toBeUndefined();
    return lines;
  };
  const on = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" };

  // The default log level is warn: a setting the bridge cannot follow must say so there, or a
  // user who set an endpoint sees no trace and no reason.
  it.each([
    [{ ...on, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, /grpc is not supported/],
    [{ ...on, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "GRPC" }, /grpc is not supported/],
    [{ ...on, OTEL_TRACES_EXPORTER: "zipkin" }, /only otlp/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }, /not an http\(s\) URL/],
  ])("warns for %j", (env, reason) => {
    const lines = logged(env);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^warn tracing off: /);
    expect(lines[0]).toMatch(reason);
  });

  it("never quotes an endpoint without a scheme (its user:token@ would read as the scheme)", () => {
    expect(logged({ OTEL_EXPORTER_OTLP_ENDPOINT: "user:s3cr3t-token@collector:4318" }).join("\n")).not.toContain("s3cr3t");
  });

  it.each([[{ ...on, OTEL_SDK_DISABLED: "true" }], [{ ...on, OTEL_TRACES_EXPORTER: "none" }]])("says an explicit off at info only: %j", (env) => {
    expect(logged(env)).toEqual([expect.stringMatching(/^info tracing off: /)]);
  });
});
