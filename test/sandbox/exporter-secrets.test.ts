/**
 * The OTLP exporter's secrets the redactor is given (command-env.ts `exporterSecrets`): found
 * under every spelling of the variables' names the patterns accept, in any case, and nothing
 * taken from other variables.
 */
import { describe, expect, it } from "vitest";
import { exporterSecrets } from "../../src/sandbox/command-env.js";

describe("exporterSecrets", () => {
  it("takes the headers' values and the endpoint's password and query, whatever the names' case", () => {
    const secrets = exporterSecrets({
      otel_exporter_otlp_headers: "authorization=Bearer tok1",
      Otel_Exporter_Otlp_Traces_Endpoint: "http://u:pw2@127.0.0.1:9/v1?key=q3",
      OTEL_EXPORTER_OTLP_METRICS_HEADERS: "x-team=t4",
    });
    for (const secret of ["Bearer tok1", "tok1", "pw2", "key=q3", "q3", "t4"]) expect(secrets).toContain(secret);
  });

  it("takes nothing from other variables, near misses included", () => {
    expect(
      exporterSecrets({
        PATH: "/usr/bin",
        OTEL_EXPORTER_OTLP_: "a=b",
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_EXPORTER_OTLP_HEADERSX: "a=c",
        XOTEL_EXPORTER_OTLP_HEADERS: "a=d",
        OTEL_EXPORTER_OTLP_TRACES_SPANS_HEADERS: "a=e",
      }),
    ).toEqual([]);
  });
});
