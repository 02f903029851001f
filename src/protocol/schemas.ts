/**
 * Runtime validation of request params (zod). The static types in `types.ts` stay the single
 * definition of the wire; the `satisfies`-style checks below fail the build if the two drift.
 *
 * @module
 */
import { z } from "zod";
import type { InitializeParams, SessionCancelParams, SessionPromptParams } from "./types.js";

/** Session ids are file names in the durable store, so they are kept to a safe alphabet. */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

const sessionId = z
  .string()
  .regex(SESSION_ID_PATTERN, "must match [A-Za-z0-9._:-]{1,128}")
  .refine((id) => id !== "." && id !== "..", "must not be '.' or '..'");

export const initializeParamsSchema = z.object({
  cwd: z.string().min(1),
  provider: z.string().min(1),
  model: z.string().min(1),
  maxTokens: z.number().int().positive().optional(),
  maxSteps: z.number().int().positive().optional(),
  permissionMode: z.enum(["read-only", "workspace-write", "full"]).optional(),
  tools: z.array(z.string()).optional(),
  instructions: z.string().optional(),
  protocolVersion: z.literal(1, { error: "unsupported protocolVersion: this server speaks 1" }).optional(),
});

export const sessionPromptParamsSchema = z.object({
  sessionId,
  contentBlocks: z.array(z.object({ type: z.literal("text"), text: z.string() })).min(1),
});

export const sessionCancelParamsSchema = z.object({ sessionId });

// Compile-time agreement between the schemas and the documented wire types.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const agree: [
  Same<z.infer<typeof initializeParamsSchema>, InitializeParams>,
  Same<z.infer<typeof sessionPromptParamsSchema>, SessionPromptParams>,
  Same<z.infer<typeof sessionCancelParamsSchema>, SessionCancelParams>,
] = [true, true, true];
void agree;

/** Renders a zod failure as one line naming each offending field, e.g. `params.sessionId: …`. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const path = ["params", ...issue.path.map(String)].join(".");
      return `${path}: ${issue.message}`;
    })
    .join("; ");
}
