/**
 * The TypeScript fake's rules against the shared cases (test/fixtures/deepseek-refusals.json),
 * which the Python fake (scripts/fake_deepseek.py) is checked against too: both refuse exactly
 * what the real API refuses, as far as the cases go.
 */
import * as fs from "node:fs";
import { describe, expect, it } from "vitest";
import { deepseekRefusal } from "../support/server-rules.js";

const { cases } = JSON.parse(fs.readFileSync(new URL("../fixtures/deepseek-refusals.json", import.meta.url), "utf8")) as {
  cases: Array<{ name: string; status: number; message?: string; body: Record<string, unknown> }>;
};

describe("the fake DeepSeek refuses what DeepSeek refuses", () => {
  it.each(cases.map((c) => [c.name, c] as const))("%s", (_name, { status, message, body }) => {
    const refusal = deepseekRefusal(body);
    expect(refusal?.status ?? 200).toBe(status);
    if (refusal) expect(refusal.body).toMatchObject({ error: { type: "invalid_request_error", message: expect.any(String) } });
    if (message !== undefined) expect((refusal?.body as { error: { message: string } }).error.message.startsWith(message)).toBe(true);
  });
});
