/**
 * The normalization rules of snapshots/README.md, in TypeScript. The Python suite implements
 * the same rules; keep the two in step with that page.
 */
const ID_KEYS = new Set(["id", "callId", "sessionId", "parentSessionId", "childSessionId", "agentId", "requestId", "hookId"]);

export interface NormalizeContext {
  workspace: string;
  sessionRoot: string;
}

/** Normalizes a list of frames (notifications then the response) as one stream. */
export function normalizeStream(frames: unknown[], ctx: NormalizeContext): unknown[] {
  const ids = new Map<string, string>();
  const visit = (value: unknown, key?: string): unknown => {
    if (typeof value === "string") {
      if (key !== undefined && ID_KEYS.has(key)) {
        if (!ids.has(value)) ids.set(value, `<id:${ids.size + 1}>`);
        return ids.get(value);
      }
      return value.split(ctx.workspace).join("<workspace>").split(ctx.sessionRoot).join("<session-root>");
    }
    if (key === "time") return "<time>";
    if (key === "durationMs") return "<duration>";
    if (Array.isArray(value)) return value.map((item) => visit(item));
    if (typeof value === "object" && value !== null) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, visit(v, k)]));
    }
    return value;
  };
  return frames.map((frame) => visit(frame));
}
