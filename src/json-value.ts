/** Shapes of parsed JSON values, shared by every layer that reads JSON from outside. */

/** A JSON object (not null, not an array). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
