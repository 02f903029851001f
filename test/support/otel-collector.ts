/**
 * A real OpenTelemetry Collector for the tracing tests: the binary scripts/otelcol.sh builds
 * (test/otelcol: OTLP receiver → OTLP/HTTP exporter), started on free loopback ports with a
 * config in a temp folder. What its receiver accepts it forwards, as OTLP/JSON, to a sink this
 * process listens on; `spans()` is what arrived there. A machine without the built collector
 * skips these tests saying so; CI builds it and sets HARNESS_REQUIRE_OTELCOL=1, which turns
 * the skip into a failure.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { ROOT } from "./raw-client.js";

export const OTELCOL = execFileSync("bash", [path.join(ROOT, "scripts", "otelcol.sh"), "--path"], { encoding: "utf8" }).trim();
const built = fs.existsSync(OTELCOL);
export const otelcolHere = built || process.env.HARNESS_REQUIRE_OTELCOL === "1";
export const otelcolNote = otelcolHere ? "" : " [skipped: no collector built (bash scripts/otelcol.sh builds it, with Go), and HARNESS_REQUIRE_OTELCOL is not 1]";

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  status?: { code?: number; message?: string };
  resource: Record<string, unknown>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** An OTLP AnyValue as a plain value (ints stay numbers, arrays become arrays). */
function plain(value: any): unknown {
  if (value === undefined || value === null) return undefined;
  if ("stringValue" in value) return value.stringValue;
  if ("intValue" in value) return Number(value.intValue);
  if ("doubleValue" in value) return value.doubleValue;
  if ("boolValue" in value) return value.boolValue;
  if ("arrayValue" in value) return (value.arrayValue.values ?? []).map(plain);
  return value;
}

function attributes(list: any[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, plain(kv.value)]));
}

export class Collector {
  /** The receiver's OTLP/HTTP base URL (what OTEL_EXPORTER_OTLP_ENDPOINT takes). */
  endpoint = "";
  /** Every request the sink got: its headers and body. */
  readonly received: Array<{ headers: http.IncomingHttpHeaders; body: any }> = [];
  private child: ChildProcess | undefined;
  private sink: http.Server | undefined;
  private dir = "";
  log = "";

  async start(): Promise<void> {
    if (!built) throw new Error(`the collector is not built at ${OTELCOL}: run bash scripts/otelcol.sh (it needs Go)`);
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), "hb-otelcol-"));
    this.sink = http.createServer((req, res) => {
      let body = "";
      req.setEncoding("utf8");
      req.on("data", (c: string) => (body += c));
      req.on("end", () => {
        this.received.push({ headers: req.headers, body: JSON.parse(body) });
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((resolve) => this.sink!.listen(0, "127.0.0.1", resolve));
    const sinkPort = (this.sink.address() as net.AddressInfo).port;
    // The receiver's port is found free, then released for the collector to take: another
    // process can take it in between (the collector then exits, address in use): a new port.
    for (let attempt = 1; ; attempt++) {
      if (await this.startCollector(sinkPort, await freePort())) return;
      if (attempt === 3 || !/address already in use/.test(this.log)) throw new Error(`the collector exited: ${this.log}`);
    }
  }

  /** Starts the collector on `receiverPort`; true once it answers, false if it exited first. */
  private async startCollector(sinkPort: number, receiverPort: number): Promise<boolean> {
    this.log = "";
    const config = path.join(this.dir, "config.yaml");
    fs.writeFileSync(
      config,
      [
        "receivers:",
        "  otlp:",
        "    protocols:",
        "      http:",
        `        endpoint: 127.0.0.1:${receiverPort}`,
        "exporters:",
        "  otlphttp:",
        `    endpoint: http://127.0.0.1:${sinkPort}`,
        "    encoding: json",
        "    compression: none",
        "    retry_on_failure:",
        "      enabled: false",
        "    sending_queue:",
        "      enabled: false",
        "service:",
        "  telemetry:",
        "    metrics:",
        "      level: none",
        "  pipelines:",
        "    traces:",
        "      receivers: [otlp]",
        "      exporters: [otlphttp]",
        "",
      ].join("\n"),
    );
    this.child = spawn(OTELCOL, ["--config", `file:${config}`], { stdio: ["ignore", "pipe", "pipe"] });
    this.child.stdout!.on("data", (c) => (this.log += c));
    this.child.stderr!.on("data", (c) => (this.log += c));
    this.endpoint = `http://127.0.0.1:${receiverPort}`;
    // Ready when its receiver answers: an empty export is a valid request.
    const child = this.child;
    const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
    let gone = false;
    void exited.then(() => (gone = true));
    const deadline = Date.now() + 60_000; // a Go binary's start on a busy machine
    for (;;) {
      if (gone) return false;
      const ok = await fetch(`${this.endpoint}/v1/traces`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"resourceSpans":[]}' }).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return true;
      if (Date.now() > deadline) throw new Error(`the collector did not start: ${this.log}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Every span the collector forwarded, with its resource's attributes. */
  spans(): ReceivedSpan[] {
    const out: ReceivedSpan[] = [];
    for (const { body } of this.received) {
      for (const rs of body.resourceSpans ?? []) {
        const resource = attributes(rs.resource?.attributes);
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            out.push({ traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId || undefined, name: s.name, kind: s.kind, attributes: attributes(s.attributes), status: s.status, resource });
          }
        }
      }
    }
    return out;
  }

  /** Waits until `count` spans arrived (the bridge exports at each turn's end). */
  async waitForSpans(count: number, timeoutMs = 15_000): Promise<ReceivedSpan[]> {
    const until = Date.now() + timeoutMs;
    while (this.spans().length < count) {
      if (Date.now() > until) throw new Error(`the collector forwarded ${this.spans().length} spans, not ${count}; its log: ${this.log}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return this.spans();
  }

  async stop(): Promise<void> {
    if (this.child && this.child.exitCode === null) {
      const exited = new Promise((r) => this.child!.once("exit", r));
      this.child.kill("SIGTERM");
      await exited;
    }
    await new Promise<void>((resolve) => (this.sink ? this.sink.close(() => resolve()) : resolve()));
    if (this.dir) fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
