/**
 * Generators and an oracle for fuzzing the transport (in process and through the binary).
 *
 * A case is a list of input lines — well-formed requests mixed with every kind of bad input —
 * that is concatenated and then cut into chunks at random byte offsets. The oracle reads the
 * same bytes the way docs/PROTOCOL.md ("Framing") says the server must, and predicts the
 * multiset of responses: for each line, none (blank, notification- or response-shaped) or
 * exactly one, with the id and the error code (or result) the contract gives it.
 */
import fc from "fast-check";

/** One predicted or observed response, as a comparable key: `<id JSON>|<outcome>`. */
export type ResponseKey = string;

/** How the server under test answers a well-formed request: an outcome string, or `skip` (not predictable). */
export type HandlerModel = (method: string, params: unknown) => string | "skip";

export interface Prediction {
  /** Every response, as keys (a multiset: sort before comparing). */
  responses: ResponseKey[];
  /** The error codes of the id-null responses, in line order (the transport writes them synchronously). */
  nullErrors: number[];
  /** False when a line holds a request whose outcome the model cannot predict (the case is skipped). */
  predictable: boolean;
}

const NEWLINE = 0x0a;

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** An id the server can echo exactly: a string, or a finite number that is not an integer beyond ±(2^53−1). */
export function echoableId(value: unknown): value is string | number {
  if (typeof value === "string") return true;
  if (typeof value !== "number" || !Number.isFinite(value)) return false;
  return !Number.isInteger(value) || Number.isSafeInteger(value);
}

export function responseKey(id: unknown, outcome: string): ResponseKey {
  return `${JSON.stringify(id)}|${outcome}`;
}

/** The key of an observed response frame. */
export function keyOfFrame(frame: { id?: unknown; result?: unknown; error?: { code: number } }): ResponseKey {
  return responseKey(frame.id, frame.error ? `err:${frame.error.code}` : `ok:${JSON.stringify(frame.result)}`);
}

/** Splits a byte stream into lines the way the contract does; `atEof`: a last piece without `\n` counts. */
export function splitLines(bytes: Buffer, atEof: boolean): Buffer[] {
  const lines: Buffer[] = [];
  let start = 0;
  for (;;) {
    const nl = bytes.indexOf(NEWLINE, start);
    if (nl === -1) break;
    lines.push(bytes.subarray(start, nl));
    start = nl + 1;
  }
  if (atEof && start < bytes.length) lines.push(bytes.subarray(start));
  return lines;
}

/**
 * The depth above which a frame is refused (docs/PROTOCOL.md, "Nesting depth"); the oracle
 * measures depth on its own, not with the server's helper.
 */
export const FRAME_DEPTH_LIMIT = 128;

/** Whether `value` nests objects/arrays deeper than `limit` (iterative: any depth is safe). */
export function deeperThan(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== "object" || v === null) continue;
    if (depth + 1 > limit) return true;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

/** What the contract says about one input line. */
export function predictLine(line: Buffer, maxLineBytes: number, handler: HandlerModel): { key?: ResponseKey; nullCode?: number; skip?: boolean } {
  if (line.length > maxLineBytes) return { key: responseKey(null, "err:-32600"), nullCode: -32600 };
  const end = line.length > 0 && line[line.length - 1] === 0x0d ? line.length - 1 : line.length;
  const text = line.toString("utf8", 0, end);
  if (text.trim() === "") return {};
  let frame: unknown;
  try {
    frame = JSON.parse(text);
  } catch {
    return { key: responseKey(null, "err:-32700"), nullCode: -32700 };
  }
  if (!isPlainObject(frame)) return { key: responseKey(null, "err:-32600"), nullCode: -32600 };
  const hasMethod = "method" in frame;
  const hasId = "id" in frame;
  if (hasMethod && hasId) {
    if (deeperThan(frame, FRAME_DEPTH_LIMIT)) {
      return echoableId(frame.id) ? { key: responseKey(frame.id, "err:-32600") } : { key: responseKey(null, "err:-32600"), nullCode: -32600 };
    }
    if (!echoableId(frame.id)) return { key: responseKey(null, "err:-32600"), nullCode: -32600 };
    const id = frame.id;
    if (frame.jsonrpc !== "2.0" || typeof frame.method !== "string") return { key: responseKey(id, "err:-32600") };
    if (Array.isArray(frame.params)) return { key: responseKey(id, "err:-32602") };
    if (frame.params !== undefined && !isPlainObject(frame.params)) return { key: responseKey(id, "err:-32600") };
    const outcome = handler(frame.method, frame.params);
    if (outcome === "skip") return { skip: true };
    return { key: responseKey(id, outcome) };
  }
  if (hasMethod) return {};
  if ("result" in frame || "error" in frame) return {};
  const id = echoableId(frame.id) ? frame.id : null;
  return id === null ? { key: responseKey(null, "err:-32600"), nullCode: -32600 } : { key: responseKey(id, "err:-32600") };
}

export function predict(bytes: Buffer, atEof: boolean, maxLineBytes: number, handler: HandlerModel): Prediction {
  const responses: ResponseKey[] = [];
  const nullErrors: number[] = [];
  let predictable = true;
  for (const line of splitLines(bytes, atEof)) {
    const p = predictLine(line, maxLineBytes, handler);
    if (p.skip) predictable = false;
    if (p.key !== undefined) responses.push(p.key);
    if (p.nullCode !== undefined) nullErrors.push(p.nullCode);
  }
  return { responses, nullErrors, predictable };
}

// ---------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------

const text = fc.oneof(
  fc.string({ maxLength: 24 }),
  fc.string({ unit: "binary", maxLength: 24 }),
  fc.string({ unit: "grapheme-composite", maxLength: 12 }),
  fc.constantFrom("héllo € 😀 中文", "\u2028\u2029", "\ud800", "\\n\n\r", '"}{', "\u0000"),
);

/** Ids the server must echo exactly. */
export const idArb: fc.Arbitrary<string | number> = fc.oneof(
  text,
  fc.integer({ min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Number.isInteger(d)),
);

const anyJson = fc.jsonValue({ maxDepth: 2 });

export interface GenOptions {
  /** Methods of well-formed requests (drawn from these). */
  methods: string[];
  maxLineBytes: number;
}

/**
 * A line nesting around the depth limit and far past what recursion takes (JSON.stringify,
 * zod), in every place a frame can hold it: a notification's method, a response's id, result
 * or error, a request's params, id or an extra field. Only parsing and the depth check may
 * meet them.
 */
export function deepLineArb(options: GenOptions): fc.Arbitrary<Buffer> {
  const methodArb = fc.constantFrom(...options.methods);
  const ending = fc.constantFrom("\n", "\r\n");
  const utf8 = (s: string) => Buffer.from(s, "utf8");
  const nest = (depth: number, kind: "array" | "object", leaf: string) =>
    kind === "array" ? `${"[".repeat(depth)}${leaf === "" ? "" : leaf}${"]".repeat(depth)}` : `${'{"k":'.repeat(depth)}${leaf || "1"}${"}".repeat(depth)}`;
  return fc
    .tuple(
      fc.constantFrom(FRAME_DEPTH_LIMIT - 2, FRAME_DEPTH_LIMIT - 1, FRAME_DEPTH_LIMIT, FRAME_DEPTH_LIMIT + 1, 1_000, 5_000, 20_000),
      fc.constantFrom<"array" | "object">("array", "object"),
      fc.constantFrom("", "1", '"x"', "null"),
      fc.constantFrom("notification-method", "response-id", "response-result", "error-response", "request-params", "request-id", "request-extra", "no-method"),
      idArb,
      methodArb,
      ending,
    )
    .map(([depth, kind, leaf, where, id, method, end]) => {
      const d = (n: number) => nest(n, kind, leaf);
      const m = JSON.stringify(method);
      const i = JSON.stringify(id);
      const line = {
        "notification-method": `{"jsonrpc":"2.0","method":${d(depth)}}`,
        "response-id": `{"jsonrpc":"2.0","id":${d(depth)},"result":1}`,
        "response-result": `{"jsonrpc":"2.0","id":${i},"result":${d(depth)}}`,
        "error-response": `{"jsonrpc":"2.0","id":${i},"error":${d(depth)}}`,
        // params nest one level below the frame: this many levels of params make the frame one deeper.
        "request-params": `{"jsonrpc":"2.0","id":${i},"method":${m},"params":{"p":${d(Math.max(0, depth - 2))}}}`,
        "request-id": `{"jsonrpc":"2.0","id":${d(depth)},"method":${m}}`,
        "request-extra": `{"jsonrpc":"2.0","id":${i},"method":${m},"x":${d(depth)}}`,
        "no-method": `{"jsonrpc":"2.0","id":${i},"x":${d(depth)}}`,
      }[where];
      return utf8(`${line}${end}`);
    });

}

/** One input line (its bytes end with `\n` or `\r\n`). */
export function lineArb(options: GenOptions): fc.Arbitrary<Buffer> {
  const methodArb = fc.constantFrom(...options.methods);
  const ending = fc.constantFrom("\n", "\r\n");
  const pad = fc.constantFrom("", " ", "\t", "  \t");
  const utf8 = (s: string) => Buffer.from(s, "utf8");

  const request = fc
    .record({ id: idArb, method: methodArb, params: fc.option(fc.dictionary(fc.string({ maxLength: 6 }), fc.oneof(text, anyJson), { maxKeys: 3 }), { nil: undefined }) })
    .map(({ id, method, params }) => (params === undefined ? { jsonrpc: "2.0", id, method } : { jsonrpc: "2.0", id, method, params }));
  const wellFormed = fc.tuple(pad, request, pad, ending).map(([a, frame, b, end]) => utf8(`${a}${JSON.stringify(frame)}${b}${end}`));

  // Frame-like objects with every field optional and possibly of the wrong type.
  const frameish = fc
    .record(
      {
        jsonrpc: fc.oneof(fc.constant("2.0"), fc.constant("1.0"), anyJson),
        id: fc.oneof(idArb, anyJson),
        method: fc.oneof(methodArb, anyJson),
        params: fc.oneof(fc.dictionary(fc.string({ maxLength: 4 }), anyJson, { maxKeys: 2 }), anyJson),
        result: anyJson,
        error: anyJson,
      },
      { requiredKeys: [] },
    )
    .chain((frame) => fc.tuple(fc.constant(frame), ending))
    .map(([frame, end]) => utf8(`${JSON.stringify(frame)}${end}`));

  // A well-formed request with exactly one field broken.
  const broken = fc
    .tuple(
      request,
      fc.constantFrom<[string, unknown]>(
        ["jsonrpc", "1.0"],
        ["jsonrpc", 2],
        ["jsonrpc", undefined],
        ["method", 7],
        ["method", null],
        ["method", ["echo"]],
        ["params", [1, 2]],
        ["params", []],
        ["params", "text"],
        ["params", 0],
        ["params", null],
        ["id", null],
        ["id", true],
        ["id", { nested: 1 }],
        ["id", [1]],
      ),
      ending,
    )
    .map(([frame, [field, value], end]) => utf8(`${JSON.stringify({ ...frame, [field]: value })}${end}`));

  // Ids that JSON can carry but a JavaScript number cannot echo exactly.
  const unechoable = fc
    .tuple(fc.constantFrom("1e400", "-1e400", "18446744073709551616", "9007199254740993", "1e300", "123456789012345678901234567890"), methodArb, ending)
    .map(([id, method, end]) => utf8(`{"jsonrpc":"2.0","id":${id},"method":${JSON.stringify(method)}}${end}`));

  const randomJson = fc.tuple(fc.json({ maxDepth: 3 }), ending).map(([json, end]) => utf8(`${json}${end}`));

  const randomBytes = fc
    .tuple(fc.uint8Array({ minLength: 1, maxLength: 80 }), ending)
    .map(([bytes, end]) => Buffer.concat([Buffer.from(bytes.filter((b) => b !== NEWLINE)), utf8(end)]));

  const blank = fc.constantFrom("\n", "\r\n", "   \n", "\t\r\n", "\u00a0\n").map(utf8);

  // A request with one multibyte character cut short inside a string: invalid UTF-8 in the line.
  const truncatedUtf8 = fc
    .tuple(idArb, methodArb, fc.string({ unit: "binary", minLength: 1, maxLength: 8 }), ending)
    .map(([id, method, s, end]) => {
      const bytes = utf8(`${JSON.stringify({ jsonrpc: "2.0", id, method, params: { text: `${s}é😀` } })}${end}`);
      const at = bytes.lastIndexOf(Buffer.from("😀"));
      return Buffer.concat([bytes.subarray(0, at + 2), bytes.subarray(at + 4)]);
    });

  // Garbage that stops in the middle of a multibyte character.
  const cutCharacter = fc.tuple(fc.constantFrom("é", "€", "😀", "中"), fc.string({ maxLength: 8 }), ending).map(([c, s, end]) => {
    const bytes = utf8(`{"jsonrpc":"2.0","method":"${s}${c}`);
    return Buffer.concat([bytes.subarray(0, bytes.length - 1), utf8(end)]);
  });

  // Lines over the limit: a request, blanks, garbage; a few bytes over or far over.
  const oversized = fc
    .tuple(fc.integer({ min: 1, max: options.maxLineBytes * 3 }), fc.constantFrom("request", "blank", "garbage"), idArb, ending)
    .map(([over, kind, id, end]) => {
      const size = options.maxLineBytes + over;
      if (kind === "blank") return utf8(`${" ".repeat(size)}${end}`);
      if (kind === "garbage") return utf8(`${"x".repeat(size)}${end}`);
      const head = JSON.stringify({ jsonrpc: "2.0", id, method: options.methods[0], params: { pad: "" } });
      const fill = Math.max(0, size - Buffer.byteLength(head));
      return utf8(`${head.slice(0, -3)}${"p".repeat(fill)}"}}${end}`);
    });

  const deep = deepLineArb(options);

  return fc.oneof(
    { arbitrary: wellFormed, weight: 6 },
    { arbitrary: deep, weight: 2 },
    { arbitrary: frameish, weight: 3 },
    { arbitrary: broken, weight: 2 },
    { arbitrary: unechoable, weight: 1 },
    { arbitrary: randomJson, weight: 2 },
    { arbitrary: randomBytes, weight: 2 },
    { arbitrary: blank, weight: 1 },
    { arbitrary: truncatedUtf8, weight: 1 },
    { arbitrary: cutCharacter, weight: 1 },
    { arbitrary: oversized, weight: 1 },
  );
}

/** Cut points for a stream of `length` bytes: a few random offsets, or a fixed small stride. */
export const cutsArb = fc.oneof(
  fc.array(fc.nat(), { maxLength: 12 }).map((offsets) => ({ offsets, stride: 0 })),
  fc.integer({ min: 1, max: 7 }).map((stride) => ({ offsets: [] as number[], stride })),
);

/** Cuts `bytes` into chunks at the given offsets (taken modulo the length) or every `stride` bytes. */
export function cut(bytes: Buffer, cuts: { offsets: number[]; stride: number }): Buffer[] {
  if (bytes.length === 0) return [];
  const points = new Set<number>();
  if (cuts.stride > 0) for (let i = cuts.stride; i < bytes.length; i += cuts.stride) points.add(i);
  for (const o of cuts.offsets) points.add(o % bytes.length);
  const sorted = [...points].filter((p) => p > 0).sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let start = 0;
  for (const p of sorted) {
    chunks.push(bytes.subarray(start, p));
    start = p;
  }
  chunks.push(bytes.subarray(start));
  return chunks;
}

/** Checks that a stdout byte stream holds protocol frames only; returns the parsed frames or throws. */
export function parseProtocolOutput(output: Buffer): any[] {
  const text = output.toString("utf8");
  if (!Buffer.from(text, "utf8").equals(output)) throw new Error("the output is not valid UTF-8");
  if (text.length > 0 && !text.endsWith("\n")) throw new Error(`the output ends without a newline: ${JSON.stringify(text.slice(-80))}`);
  const frames: any[] = [];
  for (const line of text.split("\n").slice(0, -1)) {
    let frame: any;
    try {
      frame = JSON.parse(line);
    } catch {
      throw new Error(`a non-JSON line on the output: ${JSON.stringify(line.slice(0, 200))}`);
    }
    assertFrame(frame, line);
    frames.push(frame);
  }
  return frames;
}

/** A server-to-client frame: a response (id, exactly one of result/error) or a notification (method, params object, no id). */
export function assertFrame(frame: any, line = JSON.stringify(frame)): void {
  const bad = (why: string) => new Error(`not a protocol frame (${why}): ${line.slice(0, 200)}`);
  if (!isPlainObject(frame) || frame.jsonrpc !== "2.0") throw bad("jsonrpc");
  if ("method" in frame) {
    if ("id" in frame) throw bad("the server sent a request");
    if (typeof frame.method !== "string" || !isPlainObject(frame.params)) throw bad("notification shape");
    return;
  }
  if (!("id" in frame) || ("result" in frame) === ("error" in frame)) throw bad("response shape");
  if (frame.id !== null && typeof frame.id !== "string" && typeof frame.id !== "number") throw bad("id type");
  if ("error" in frame) {
    const e = frame.error;
    if (!isPlainObject(e) || !Number.isInteger(e.code) || typeof e.message !== "string" || e.message === "") throw bad("error object");
  }
}

/** How many cases to run: `HB_FUZZ_RUNS` (the long run: 100000), else `fallback`. */
export function fuzzRuns(fallback: number, scale = 1): number {
  const env = Number(process.env.HB_FUZZ_RUNS);
  return Number.isInteger(env) && env > 0 ? Math.max(1, Math.round(env * scale)) : fallback;
}

/** fast-check parameters: the run count, and `HB_FUZZ_SEED` to replay a failure. */
export function fuzzParams(numRuns: number): fc.Parameters<unknown> {
  const seed = Number(process.env.HB_FUZZ_SEED);
  return { numRuns, ...(Number.isInteger(seed) ? { seed } : {}) };
}
