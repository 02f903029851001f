/**
 * scripts/audit.sh's npm verdicts, against a fake of npm's bulk advisory endpoint on 127.0.0.1:
 * a known high advisory for a package the binary bundles fails the audit and is named; a low one
 * or none passes with the report line; an endpoint that refuses (this machine's registry answers
 * 405) is "NOT AUDITED", a failure only with HARNESS_REQUIRE_AUDIT=1.
 *
 * The real npm (the one the script's PATH finds) runs `npm audit` on the real package-lock.json;
 * only its registry is the fake (npm_config_registry; env config outranks every npmrc). The fake
 * answers as the registry does and refuses what it would refuse, so a passing test means npm
 * really asked and really got the advisory:
 *   - POST /-/npm/v1/security/advisories/bulk, the body gzip-compressed JSON (npm-registry-fetch's
 *     `gzip: true`), `{ name: [installed versions] }`; the answer a JSON object mapping a package
 *     name to its advisories `{id, url, title, severity, vulnerable_versions, cwe, cvss}`.
 *   - GET /<name>: the packument, which npm (@npmcli/metavuln-calculator) fetches for every
 *     package an advisory names, to turn `vulnerable_versions` into the versions that exist.
 *
 * pip-audit's verdicts are not tested: its PyPI service's URL (https://pypi.org/pypi/...) is
 * fixed in pip-audit, with no option or environment variable for another base.
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import * as zlib from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "..", "..");
const BULK = "/-/npm/v1/security/advisories/bulk";
const lock = JSON.parse(fs.readFileSync(path.join(root, "package-lock.json"), "utf8")) as { packages: Record<string, { version: string; dev?: boolean }> };
/** A package the binary bundles (package.json `dependencies`), at its locked version. */
const BUNDLED = "undici";
const locked = lock.packages[`node_modules/${BUNDLED}`]!.version;

type Advisory = { id: number; url: string; title: string; severity: "info" | "low" | "moderate" | "high" | "critical"; vulnerable_versions: string; cwe: string[]; cvss: { score: number; vectorString: string | null } };
const advisory = (id: number, severity: Advisory["severity"], title: string): Advisory => ({
  id,
  url: `https://github.com/advisories/GHSA-fake-${id}`,
  title,
  severity,
  // Includes the locked version; the version after it is the fix.
  vulnerable_versions: `<=${locked}`,
  cwe: ["CWE-400"],
  cvss: { score: severity === "high" ? 7.5 : 3.1, vectorString: null },
});

interface Fake {
  url: string;
  /** The bulk requests' bodies, decoded. */
  asked: Record<string, string[]>[];
  close(): Promise<void>;
}

/** The registry, answering the bulk endpoint with `answer` (or refusing it with 405, as this machine's does). */
async function fakeRegistry(answer: Record<string, Advisory[]> | 405): Promise<Fake> {
  const asked: Record<string, string[]>[] = [];
  const send = (req: http.IncomingMessage, res: http.ServerResponse, status: number, body: unknown) => {
    let data = Buffer.from(JSON.stringify(body));
    const headers: http.OutgoingHttpHeaders = { "content-type": "application/json" };
    if (/\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""))) {
      data = zlib.gzipSync(data);
      headers["content-encoding"] = "gzip";
    }
    res.writeHead(status, headers).end(data);
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://registry");
      if (url.pathname === BULK) {
        if (answer === 405 || req.method !== "POST") return send(req, res, 405, { error: "Method Not Allowed" });
        let body: unknown;
        try {
          if (req.headers["content-encoding"] !== "gzip" || !String(req.headers["content-type"]).startsWith("application/json")) throw new Error("not gzipped JSON");
          body = JSON.parse(zlib.gunzipSync(Buffer.concat(chunks)).toString("utf8"));
        } catch {
          return send(req, res, 400, { error: "Invalid request" });
        }
        const valid =
          typeof body === "object" && body !== null && !Array.isArray(body) && Object.values(body).every((vs) => Array.isArray(vs) && vs.every((v) => typeof v === "string"));
        if (!valid) return send(req, res, 400, { error: "Invalid package list" });
        asked.push(body as Record<string, string[]>);
        return send(req, res, 200, answer);
      }
      // A packument, for a package an advisory names: its locked version and the fix after it.
      const name = decodeURIComponent(url.pathname.slice(1));
      if (req.method === "GET" && name === BUNDLED) {
        const [major, minor, patch] = locked.split(".").map(Number);
        const versions = [locked, `${major}.${minor}.${patch! + 1}`];
        return send(req, res, 200, {
          name,
          "dist-tags": { latest: versions[1] },
          versions: Object.fromEntries(versions.map((version) => [version, { name, version, dist: { tarball: `http://registry/${name}/-/${name}-${version}.tgz` } }])),
        });
      }
      send(req, res, 404, { error: "Not found" });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/`, asked, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** `scripts/audit.sh npm` with npm's registry the fake (asynchronous: the fake answers from this process). */
async function audit(answer: Record<string, Advisory[]> | 405, env: Record<string, string> = {}) {
  const fake = await fakeRegistry(answer);
  const cache = fs.mkdtempSync(path.join(os.tmpdir(), "hb-audit-cache-"));
  cleanups.push(() => fake.close(), () => fs.rmSync(cache, { recursive: true, force: true }));
  const result = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      "bash",
      [path.join(root, "scripts", "audit.sh"), "npm"],
      {
        cwd: root,
        env: {
          ...process.env,
          npm_config_registry: fake.url,
          // Its own cache: npm keeps packuments and computed advisories there, the fake's included.
          npm_config_cache: cache,
          npm_config_offline: "false",
          npm_config_prefer_offline: "false",
          npm_config_update_notifier: "false",
          HARNESS_REQUIRE_AUDIT: "0",
          ...env,
        },
        timeout: 60_000,
      },
      (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr }),
    );
  });
  return { ...result, asked: fake.asked };
}

describe("scripts/audit.sh npm, against a fake advisory endpoint", () => {
  it("is run by CI in full: both parts, npm and pip", () => {
    const ci = fs.readFileSync(path.join(root, ".ci", "run"), "utf8");
    expect(ci).toMatch(/^bash scripts\/audit\.sh$/m);
  });

  it("fails on a high advisory for a bundled package, and names it", async () => {
    const { code, stdout, stderr, asked } = await audit({ [BUNDLED]: [advisory(1001, "high", "Fake request smuggling in undici")] });
    expect(stdout).toContain("npm: high=1 critical=0 total=1");
    expect(code, stderr).toBe(1);
    expect(stderr).toContain("Fake request smuggling in undici");
    // npm's report: the package at the versions the advisory covers, which it had from the packument.
    expect(stderr).toContain(`${BUNDLED}  ${locked}\nSeverity: high`);
    // npm asked about what ships (the bundled package, at its locked version), not the dev tools.
    expect(asked.length).toBeGreaterThan(0);
    expect(asked[0]![BUNDLED]).toEqual([locked]);
    expect(asked[0]).not.toHaveProperty("vitest");
  });

  it("passes on a low advisory only, with the report line", async () => {
    const { code, stdout, stderr } = await audit({ [BUNDLED]: [advisory(1002, "low", "Fake low-severity issue in undici")] });
    expect(code, stderr).toBe(0);
    expect(stdout).toContain("npm: high=0 critical=0 total=1");
    expect(stderr).not.toContain("NOT AUDITED");
  });

  it("passes on no advisories: high=0 critical=0", async () => {
    const { code, stdout, stderr, asked } = await audit({});
    expect(code, stderr).toBe(0);
    expect(stdout).toContain("npm: high=0 critical=0 total=0");
    expect(stderr).not.toContain("NOT AUDITED");
    expect(asked.length).toBe(1);
  });

  it("says NOT AUDITED when the endpoint refuses (405), and fails then only with HARNESS_REQUIRE_AUDIT=1", async () => {
    const lax = await audit(405);
    expect(lax.stderr).toMatch(/audit: NOT AUDITED: npm's advisory endpoint could not be reached \(.*405/);
    expect(lax.stdout).not.toContain("npm: high=");
    expect(lax.code, lax.stderr).toBe(0);
    const strict = await audit(405, { HARNESS_REQUIRE_AUDIT: "1" });
    expect(strict.stderr).toContain("audit: NOT AUDITED: npm's advisory endpoint");
    expect(strict.code).toBe(1);
  });
});
