/**
 * Redaction of the bridge's own secrets (the provider keys) from everything it writes: log
 * lines, session events (hence notifications, session logs and the model's history) and
 * model-error reasons. A key reaches text in ways no tool check prevents: a server that echoes
 * the key in an error body, a model that repeats one it read somewhere, a command in `full`
 * mode that prints `/proc/<pid>/environ`. Each occurrence becomes `***`.
 *
 * Values shorter than `MIN_SECRET_LENGTH` are not treated as secrets: no real key is that
 * short, and replacing a short string would mangle ordinary text. With no secrets, redaction
 * is the identity and costs nothing (the scripted model, a key-less local server).
 */
export const MIN_SECRET_LENGTH = 8;
export const REDACTED = "***";

export interface Redactor {
  /** Whether there is anything to redact. */
  readonly active: boolean;
  /** `text` with every secret replaced. */
  text(text: string): string;
  /**
   * Replaces secrets in every string of `value` in place (objects and arrays are walked, at
   * any depth) and returns it. In place so
   * that the event recorded, the history and the value handed on (a turn's reason) are one.
   */
  inPlace<T>(value: T): T;
}

export const noRedaction: Redactor = { active: false, text: (t) => t, inPlace: (v) => v };

export function secretRedactor(candidates: Iterable<string | undefined>): Redactor {
  // Longest first: a secret that contains another is replaced whole.
  const secrets = [...new Set([...candidates].filter((s): s is string => typeof s === "string" && s.length >= MIN_SECRET_LENGTH))].sort((a, b) => b.length - a.length);
  if (secrets.length === 0) return noRedaction;
  const text = (t: string): string => {
    for (const secret of secrets) if (t.includes(secret)) t = t.split(secret).join(REDACTED);
    return t;
  };
  // An explicit stack: any depth is cleaned, and none overflows the call stack. Event data is
  // plain JSON (it is serialized next), so there are no cycles to guard against.
  const walk = (root: unknown): void => {
    const stack: unknown[] = [root];
    while (stack.length > 0) {
      const value = stack.pop();
      if (value === null || typeof value !== "object") continue;
      const entries = value as Record<string, unknown>;
      for (const key of Object.keys(entries)) {
        const field = entries[key];
        if (typeof field === "string") {
          const clean = text(field);
          if (clean !== field) entries[key] = clean;
        } else if (field !== null && typeof field === "object") stack.push(field);
      }
    }
  };
  return {
    active: true,
    text,
    inPlace<T>(value: T): T {
      walk(value);
      return value;
    },
  };
}
