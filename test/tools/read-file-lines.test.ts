/**
 * read_file reads only as far as the lines it returns. Its chunked reader must give exactly
 * what reading the whole file and splitting it gives (the reference below, the former code),
 * wherever the chunk boundaries fall: inside a UTF-8 sequence, between CR and LF, at a line's
 * end — so the property runs with reads as small as one byte. And asking for the first lines of
 * a big file must not read the file.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { OpenedFile } from "../../src/tools/confined-open.js";
import { READ_FILE_MAX_LINE_CHARS, READ_FILE_MAX_OUTPUT_CHARS, readLines } from "../../src/tools/read-file.js";
import { ToolError } from "../../src/tools/types.js";

/** An OpenedFile over bytes in memory, counting the bytes its reads return. */
function memoryFile(bytes: Buffer): OpenedFile & { bytesRead: () => number } {
  let total = 0;
  const handle = {
    async read(buffer: Buffer, offset: number, length: number, position: number) {
      const n = Math.max(0, Math.min(length, bytes.length - position));
      bytes.copy(buffer, offset, position, position + n);
      total += n;
      return { bytesRead: n, buffer };
    },
  };
  return { handle: handle as never, size: bytes.length, realPath: "/mem", bytesRead: () => total };
}

/** The whole-file reading the chunked reader replaced: the lines, or the error text. */
function reference(bytes: Buffer, offset: number, limit: number): string {
  if (bytes.length === 0) return "(f is empty)";
  const lines = bytes.toString("utf8").split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  if (offset > lines.length) return `error: offset ${offset} is past the end of f (${lines.length} lines)`;
  const out: string[] = [];
  let chars = 0;
  let last = offset - 1;
  for (let i = offset - 1; i < Math.min(lines.length, offset - 1 + limit); i++) {
    let line = lines[i].replace(/\r$/, "");
    if (line.length > READ_FILE_MAX_LINE_CHARS) line = `${line.slice(0, READ_FILE_MAX_LINE_CHARS)}… [line cut: ${line.length} characters]`;
    const numbered = `${i + 1}\t${line}`;
    if (chars + numbered.length > READ_FILE_MAX_OUTPUT_CHARS) break;
    out.push(numbered);
    chars += numbered.length + 1;
    last = i + 1;
  }
  if (last < lines.length) out.push(`[showing lines ${offset}-${last} of ${lines.length}; read on with offset ${last + 1}]`);
  return out.join("\n");
}

async function chunked(bytes: Buffer, offset: number, limit: number, first: number, max: number): Promise<string> {
  try {
    const out = await readLines(memoryFile(bytes), "f", offset, limit, new AbortController().signal, { first, max });
    return out.content.map((b) => b.text).join("");
  } catch (err) {
    if (err instanceof ToolError) return `error: ${err.message}`;
    throw err;
  }
}

/** Equal, but for a "more than M" in the chunked note where the reference counted T > M lines. */
function sameAsReference(got: string, want: string): void {
  const more = / of more than (\d+);/.exec(got);
  if (!more) return void expect(got).toBe(want);
  const total = / of (\d+);/.exec(want);
  expect(Number(total?.[1])).toBeGreaterThan(Number(more[1]));
  expect(got.replace(more[0], total?.[0] ?? "")).toBe(want);
}

describe("read_file's chunked reader", () => {
  const text = fc.array(fc.constantFrom("a", "é", "€", "😀", "\n", "\r\n", "\r", " ", "xyz"), { maxLength: 60 }).map((parts) => parts.join(""));

  it("gives what reading the whole file gives, wherever its reads end", async () => {
    await fc.assert(
      fc.asyncProperty(text, fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 9 }), async (content, offset, limit, first) => {
        const bytes = Buffer.from(content, "utf8");
        sameAsReference(await chunked(bytes, offset, limit, first, first * 4), reference(bytes, offset, limit));
      }),
      { numRuns: 2000 },
    );
  });

  it("gives the total when what it read holds the whole file, 'more than' only past that", async () => {
    const bytes = Buffer.from("one\ntwo\nthree\nfour\n");
    expect(await chunked(bytes, 2, 2, 1 << 16, 1 << 16)).toBe("2\ttwo\n3\tthree\n[showing lines 2-3 of 4; read on with offset 4]");
    const longer = Buffer.from("one\ntwo\nthree\nfour\nfive\nsix\n");
    expect(await chunked(longer, 2, 2, 4, 4)).toBe("2\ttwo\n3\tthree\n[showing lines 2-3 of more than 3; read on with offset 4]");
    // Read in 4-byte steps, line 4 ends in the file's last read: the total is known.
    expect(await chunked(bytes, 2, 2, 4, 4)).toBe("2\ttwo\n3\tthree\n[showing lines 2-3 of 4; read on with offset 4]");
  });

  it("the first 2 000 lines of a 10 MiB file read a few hundred KiB, not the file", async () => {
    const line = `${"x".repeat(99)}\n`;
    const bytes = Buffer.from(line.repeat((10 * 1024 * 1024) / line.length));
    const file = memoryFile(bytes);
    const out = await readLines(file, "big.txt", 1, 2000, new AbortController().signal);
    const shown = out.content.map((b) => b.text).join("").split("\n");
    expect(shown).toHaveLength(2001);
    expect(shown.at(-1)).toBe("[showing lines 1-2000 of more than 2000; read on with offset 2001]");
    expect(file.bytesRead()).toBeLessThanOrEqual(512 * 1024);
  });

  it("stops when the turn is cancelled between reads", async () => {
    const controller = new AbortController();
    controller.abort(new Error("cancelled"));
    await expect(readLines(memoryFile(Buffer.from("a\nb\n")), "f", 1, 10, controller.signal)).rejects.toThrow(/cancelled/);
  });
});
