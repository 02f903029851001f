/** write_file, edit_file and read_file: behaviour, limits and confinement attacks. */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EDIT_FILE_MAX_BYTES, editFileTool } from "../../src/tools/edit-file.js";
import {
  READ_FILE_DEFAULT_LINES,
  READ_FILE_MAX_BYTES,
  READ_FILE_MAX_LINE_CHARS,
  READ_FILE_MAX_OUTPUT_CHARS,
  READ_FILE_TEXT_CHECK_BYTES,
  readFileTool,
} from "../../src/tools/read-file.js";
import { useDescriptorPaths } from "../../src/tools/confined-fs.js";
import { ToolError, type Tool } from "../../src/tools/types.js";
import { writeFileTool } from "../../src/tools/write-file.js";
import { makeCtx, makeSandbox, text, writeTree } from "./helpers.js";

let sb: ReturnType<typeof makeSandbox>;
beforeEach(() => {
  sb = makeSandbox();
});
afterEach(() => sb.cleanup());

const ws = (rel: string) => path.join(sb.ws, rel);
const exec = async (tool: Tool, args: Record<string, unknown>, mode: "workspace-write" | "full" | "read-only" = "workspace-write") =>
  tool.execute(args as never, makeCtx(sb.ws, mode));

// Every behaviour below holds both with the descriptor checks (Linux with /proc) and with the
// checks by name used where /proc/self/fd is missing; only the race test needs the former.
for (const check of ["descriptor", "name"] as const) {
describe(`checked ${check === "descriptor" ? "on the descriptor" : "by name"}`, () => {
  beforeEach(() => useDescriptorPaths(check === "name" ? false : undefined));
  afterEach(() => useDescriptorPaths(undefined));

  describe("write_file", () => {
    it("creates parent folders and reports bytes written", async () => {
      const out = await exec(writeFileTool, { path: "a/b/c.txt", content: "héllo\n" });
      expect(out.isError).toBe(false);
      expect(text(out)).toBe("Created a/b/c.txt (7 bytes written)");
      expect(fs.readFileSync(ws("a/b/c.txt"), "utf8")).toBe("héllo\n");
      expect(text(await exec(writeFileTool, { path: "a/b/c.txt", content: "" }))).toBe("Overwrote a/b/c.txt (0 bytes written)");
      expect(fs.readFileSync(ws("a/b/c.txt"), "utf8")).toBe("");
    });

    it("refuses a directory and bad arguments", async () => {
      fs.mkdirSync(ws("dir"));
      await expect(exec(writeFileTool, { path: "dir", content: "x" })).rejects.toThrow(/is a directory/);
      await expect(exec(writeFileTool, { content: "x" })).rejects.toThrow(/path/);
      await expect(exec(writeFileTool, { path: "x.txt" })).rejects.toThrow(/content/);
      await expect(exec(writeFileTool, { path: "x.txt", content: 42 })).rejects.toThrow(/content/);
      await expect(exec(writeFileTool, { path: "x.txt", content: "x" }, "read-only")).rejects.toThrow(/read-only/);
    });

    it("says what went wrong in the model's terms, not the descriptor paths it used", async () => {
      const long = "n".repeat(300);
      await expect(exec(writeFileTool, { path: long, content: "x" })).rejects.toThrow(`path '${long}': ENAMETOOLONG: name too long`);
      await expect(exec(writeFileTool, { path: `${long}/x.txt`, content: "x" })).rejects.not.toThrow(/\/proc\//);
      writeTree(sb.ws, { file: "x" });
      await expect(exec(writeFileTool, { path: "file/x.txt", content: "x" })).rejects.toThrow(/file is not a folder$/);
    });
  });

  describe("edit_file", () => {
    beforeEach(() => writeTree(sb.ws, { "f.ts": "let a = 1;\nlet b = 1;\nlet c = 2;\n" }));

    it("replaces a unique match", async () => {
      const out = await exec(editFileTool, { path: "f.ts", oldText: "let c = 2;", newText: "let c = 3;" });
      expect(text(out)).toBe("Edited f.ts: replaced 1 occurrence at line 3");
      expect(fs.readFileSync(ws("f.ts"), "utf8")).toBe("let a = 1;\nlet b = 1;\nlet c = 3;\n");
    });

    it("refuses 0 or N matches without replaceAll, saying how many", async () => {
      await expect(exec(editFileTool, { path: "f.ts", oldText: "nope", newText: "x" })).rejects.toThrow(/0 matches/);
      await expect(exec(editFileTool, { path: "f.ts", oldText: " = 1;", newText: " = 9;" })).rejects.toThrow(/matches 2 places.*lines 1, 2/);
      expect(fs.readFileSync(ws("f.ts"), "utf8")).toBe("let a = 1;\nlet b = 1;\nlet c = 2;\n");
    });

    it("replaces every match with replaceAll and counts them; newText is literal", async () => {
      const out = await exec(editFileTool, { path: "f.ts", oldText: " = 1;", newText: " = $&$1;", replaceAll: true });
      expect(text(out)).toBe("Edited f.ts: replaced 2 occurrences");
      expect(fs.readFileSync(ws("f.ts"), "utf8")).toBe("let a = $&$1;\nlet b = $&$1;\nlet c = 2;\n");
    });

    it("rejects bad arguments naming them", async () => {
      await expect(exec(editFileTool, { path: "f.ts", oldText: "", newText: "x" })).rejects.toThrow(/oldText must not be empty/);
      await expect(exec(editFileTool, { path: "f.ts", newText: "x" })).rejects.toThrow(/oldText/);
      await expect(exec(editFileTool, { path: "f.ts", oldText: "a" })).rejects.toThrow(/newText/);
      await expect(exec(editFileTool, { path: "f.ts", oldText: "a", newText: "b", replaceAll: "yes" })).rejects.toThrow(/replaceAll/);
      await expect(exec(editFileTool, { oldText: "a", newText: "b" })).rejects.toThrow(/path/);
      await expect(exec(editFileTool, { path: "missing.ts", oldText: "a", newText: "b" })).rejects.toThrow(/no such file/);
    });
  });

  describe("confinement of the file tools", () => {
    const attempts = (s: typeof sb) => ["../outside/secret.txt", path.join(s.outside, "secret.txt"), "sub/../../outside/secret.txt", "/etc/passwd"];

    beforeEach(() => {
      fs.symlinkSync(sb.outside, ws("linkdir"));
      fs.symlinkSync(path.join(sb.outside, "secret.txt"), ws("linkfile"));
      fs.symlinkSync(path.join(sb.outside, "not-yet.txt"), ws("dangling"));
    });

    for (const mode of ["workspace-write", "read-only"] as const) {
      it(`read_file refuses .., absolute paths and symlinks out (${mode})`, async () => {
        for (const p of [...attempts(sb), "linkdir/secret.txt", "linkfile"]) {
          await expect(exec(readFileTool, { path: p }, mode)).rejects.toThrow(ToolError);
        }
      });
    }

    it("write_file refuses .., absolute paths and symlinks out (including a dangling one)", async () => {
      for (const p of [...attempts(sb).slice(0, 3), "linkdir/new.txt", "linkfile", "dangling", "linkdir/deep/new.txt"]) {
        await expect(exec(writeFileTool, { path: p, content: "pwned" }), p).rejects.toThrow(ToolError);
      }
      expect(fs.readFileSync(path.join(sb.outside, "secret.txt"), "utf8")).toBe("TOP SECRET outside\n");
      expect(fs.readdirSync(sb.outside)).toEqual(["secret.txt"]);
    });

    it("edit_file refuses .., absolute paths and symlinks out", async () => {
      for (const p of [...attempts(sb).slice(0, 3), "linkdir/secret.txt", "linkfile"]) {
        await expect(exec(editFileTool, { path: p, oldText: "TOP", newText: "pwned" }), p).rejects.toThrow(ToolError);
      }
      expect(fs.readFileSync(path.join(sb.outside, "secret.txt"), "utf8")).toBe("TOP SECRET outside\n");
    });

    it("allows symlinks inside the workspace and names starting with '..'", async () => {
      writeTree(sb.ws, { "real/x.txt": "inside\n", "..hidden": "dots\n" });
      fs.symlinkSync(ws("real"), ws("linkin"));
      expect(text(await exec(readFileTool, { path: "linkin/x.txt" }))).toBe("1\tinside");
      expect(text(await exec(readFileTool, { path: "..hidden" }))).toBe("1\tdots");
      await exec(writeFileTool, { path: "linkin/y.txt", content: "ok" });
      expect(fs.readFileSync(ws("real/y.txt"), "utf8")).toBe("ok");
    });

    it("full mode reaches outside", async () => {
      expect(text(await exec(readFileTool, { path: "../outside/secret.txt" }, "full"))).toBe("1\tTOP SECRET outside");
      await exec(writeFileTool, { path: "../outside/new.txt", content: "x" }, "full");
      expect(fs.existsSync(path.join(sb.outside, "new.txt"))).toBe(true);
    });
  });

  describe("read_file", () => {
    it("numbers lines from 1, strips CR, and pages with offset and limit, saying how to read on", async () => {
      writeTree(sb.ws, { "f.txt": "one\r\ntwo\nthree\nfour\n" });
      expect(text(await exec(readFileTool, { path: "f.txt" }))).toBe("1\tone\n2\ttwo\n3\tthree\n4\tfour");
      expect(text(await exec(readFileTool, { path: "f.txt", offset: 2, limit: 2 }))).toBe("2\ttwo\n3\tthree\n[showing lines 2-3 of 4; read on with offset 4]");
      await expect(exec(readFileTool, { path: "f.txt", offset: 9 })).rejects.toThrow(/offset 9 is past the end of f.txt \(4 lines\)/);
      await expect(exec(readFileTool, { path: "f.txt", limit: 0 })).rejects.toThrow(/limit must be a positive integer/);
      await expect(exec(readFileTool, { path: "nope.txt" })).rejects.toThrow(/no such file: nope.txt/);
      writeTree(sb.ws, { "empty.txt": "" });
      expect(text(await exec(readFileTool, { path: "empty.txt" }))).toBe("(empty.txt is empty)");
    });

    it(`shows ${READ_FILE_DEFAULT_LINES} lines by default, cuts long lines and caps the output size`, async () => {
      writeTree(sb.ws, { "many.txt": Array.from({ length: READ_FILE_DEFAULT_LINES + 5 }, (_, i) => `l${i + 1}`).join("\n") });
      const many = text(await exec(readFileTool, { path: "many.txt" }));
      expect(many.split("\n").at(-1)).toBe(`[showing lines 1-${READ_FILE_DEFAULT_LINES} of ${READ_FILE_DEFAULT_LINES + 5}; read on with offset ${READ_FILE_DEFAULT_LINES + 1}]`);

      writeTree(sb.ws, { "long.txt": "x".repeat(READ_FILE_MAX_LINE_CHARS + 10) + "\nshort\n" });
      const long = text(await exec(readFileTool, { path: "long.txt" }));
      expect(long).toContain(`… [line cut: ${READ_FILE_MAX_LINE_CHARS + 10} characters]`);
      expect(long.endsWith("2\tshort")).toBe(true);

      // Lines of the longest kept length: the output stops under the cap and says where to go on.
      const line = "y".repeat(READ_FILE_MAX_LINE_CHARS);
      const count = Math.ceil(READ_FILE_MAX_OUTPUT_CHARS / READ_FILE_MAX_LINE_CHARS) + 10;
      writeTree(sb.ws, { "wide.txt": Array.from({ length: count }, () => line).join("\n") });
      const wide = text(await exec(readFileTool, { path: "wide.txt", limit: count }));
      expect(wide.length).toBeLessThanOrEqual(READ_FILE_MAX_OUTPUT_CHARS + 100);
      // Past the first read's 256 KiB the total is not counted: the note says "more than".
      const shown = Number(/^\[showing lines 1-(\d+) of more than (\d+); read on with offset (\d+)\]$/.exec(wide.split("\n").at(-1)!)?.[1]);
      expect(wide.split("\n").at(-1)).toBe(`[showing lines 1-${shown} of more than ${shown}; read on with offset ${shown + 1}]`);
      expect(shown).toBeGreaterThan(100);
    });

    it("detects binary files, and refuses files over the size cap without reading them", async () => {
      fs.writeFileSync(ws("img.bin"), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0x02]));
      const bin = await exec(readFileTool, { path: "img.bin" });
      expect(bin.isError).toBe(true);
      expect(text(bin)).toBe("img.bin is a binary file (7 bytes; a NUL byte at offset 4); read_file shows UTF-8 text files only");
      fs.writeFileSync(ws("big.txt"), "");
      fs.truncateSync(ws("big.txt"), READ_FILE_MAX_BYTES + 1); // sparse: costs no disk
      await expect(exec(readFileTool, { path: "big.txt" })).rejects.toThrow(`big.txt is ${READ_FILE_MAX_BYTES + 1} bytes, over the ${READ_FILE_MAX_BYTES}-byte limit of read_file`);
      fs.mkdirSync(ws("dir"));
      await expect(exec(readFileTool, { path: "dir" })).rejects.toThrow(/dir is a directory/);
    });
  });

  describe("read_file: text or binary, judged on the first block", () => {
    const noteOf = (name: string, size: number) =>
      `${name} is a binary file (${size} bytes; bytes that are not UTF-8 in its first ${READ_FILE_TEXT_CHECK_BYTES}); read_file shows UTF-8 text files only`;

    it("answers a short note for bytes without a NUL that are not UTF-8 (random data, Latin-1 text)", async () => {
      // Deterministic "random" bytes, none of them 0: what a compressed or encrypted file holds.
      let seed = 7;
      const noise = Buffer.alloc(20_000, 0).map(() => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return 1 + (seed % 255);
      });
      expect(noise.includes(0)).toBe(false);
      fs.writeFileSync(ws("noise.bin"), noise);
      const result = await exec(readFileTool, { path: "noise.bin" });
      expect(result.isError).toBe(true);
      expect(text(result)).toBe(noteOf("noise.bin", 20_000));
      fs.writeFileSync(ws("latin1.txt"), Buffer.from("caf\xe9\n", "latin1"));
      expect(text(await exec(readFileTool, { path: "latin1.txt" }))).toBe(noteOf("latin1.txt", 5));
      // A multi-byte sequence cut by the file's own end is not UTF-8 either.
      fs.writeFileSync(ws("cut.txt"), Buffer.concat([Buffer.from("ok "), Buffer.from("é").subarray(0, 1)]));
      expect(text(await exec(readFileTool, { path: "cut.txt" }))).toBe(noteOf("cut.txt", 4));
    });

    it("reads UTF-8 text whose character straddles the block's end, and judges only the first block", async () => {
      // "é" is 2 bytes: 8191 ASCII bytes put its first byte last in the block, its second after it.
      const straddle = `${"a".repeat(READ_FILE_TEXT_CHECK_BYTES - 1)}é\nsecond line ✓\n`;
      expect(Buffer.byteLength(straddle.slice(0, READ_FILE_TEXT_CHECK_BYTES))).toBeGreaterThan(READ_FILE_TEXT_CHECK_BYTES);
      fs.writeFileSync(ws("straddle.txt"), straddle);
      const read = await exec(readFileTool, { path: "straddle.txt" });
      expect(read.isError).toBeFalsy();
      expect(text(read).split("\n")).toEqual([`1\t${"a".repeat(READ_FILE_MAX_LINE_CHARS)}… [line cut: ${READ_FILE_TEXT_CHECK_BYTES} characters]`, "2\tsecond line ✓"]);
      // An invalid byte past the first block: text, that byte shown as U+FFFD (no full-file scan).
      fs.writeFileSync(ws("late.txt"), Buffer.concat([Buffer.from(`${"line\n".repeat(2000)}`), Buffer.from([0xff, 0x0a])]));
      const late = await exec(readFileTool, { path: "late.txt", offset: 2001 });
      expect(late.isError).toBeFalsy();
      expect(text(late)).toBe("2001\t\ufffd");
    });
  });

  describe("read_file limits", () => {
    it("refuses non-regular files instead of blocking (FIFO) or reading forever (/dev/zero)", async () => {
      const { execFileSync } = await import("node:child_process");
      execFileSync("mkfifo", [ws("fifo")]);
      await expect(exec(readFileTool, { path: "fifo" })).rejects.toThrow(/not a regular file/);
      await expect(exec(readFileTool, { path: "/dev/zero" }, "full")).rejects.toThrow(/not a regular file/);
    });
  });

  describe("non-regular files: refused before any blocking open", () => {
    /** Opens each FIFO's read end without blocking, which releases a writer stuck in open(). */
    const release = (fifos: string[]) => {
      for (const f of fifos) {
        try {
          fs.closeSync(fs.openSync(f, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK));
        } catch {
          // gone already
        }
      }
    };
    const guard = <T>(p: Promise<T>, ms: number, what: string) =>
      Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms))]);

    it("four concurrent write_file calls on FIFOs answer with an error, and read_file keeps working meanwhile", async () => {
      const { execFileSync } = await import("node:child_process");
      const fifos = [1, 2, 3, 4].map((i) => ws(`fifo${i}`));
      execFileSync("mkfifo", fifos);
      writeTree(sb.ws, { "plain.txt": "still served\n" });
      try {
        // Four is libuv's whole thread pool: a blocking open in each would freeze every file tool.
        const writes = fifos.map((f) => exec(writeFileTool, { path: path.basename(f), content: "x" }).then(text, (err: Error) => `error: ${err.message}`));
        const read = await guard(exec(readFileTool, { path: "plain.txt" }), 10_000, "read_file beside four FIFO writes");
        expect(text(read)).toBe("1\tstill served");
        const answers = await guard(Promise.all(writes), 10_000, "write_file on FIFOs");
        for (const a of answers) expect(a).toMatch(/^error: fifo\d is not a regular file \(it is a FIFO\)$/);
      } finally {
        release(fifos);
      }
    });

    it("read_file, write_file and edit_file refuse a FIFO, a socket and a device, reached directly or through a link", async () => {
      const { execFileSync } = await import("node:child_process");
      const net = await import("node:net");
      execFileSync("mkfifo", [ws("fifo")]);
      const server = net.createServer();
      await new Promise<void>((resolve) => server.listen(ws("sock"), resolve));
      fs.symlinkSync("fifo", ws("link-to-fifo"));
      try {
        const cases: [string, "workspace-write" | "full", RegExp][] = [
          ["fifo", "workspace-write", /not a regular file \(it is a FIFO\)/],
          ["link-to-fifo", "workspace-write", /not a regular file \(it is a FIFO\)/],
          ["sock", "workspace-write", /not a regular file \(it is a socket\)/],
          ["/dev/null", "full", /not a regular file \(it is a device\)/],
        ];
        for (const [p, mode, expected] of cases) {
          for (const [tool, args] of [
            [readFileTool, { path: p }],
            [writeFileTool, { path: p, content: "x" }],
            [editFileTool, { path: p, oldText: "a", newText: "b" }],
          ] as const) {
            await expect(guard(exec(tool, args, mode), 10_000, `${tool.name} ${p}`), `${tool.name} ${p}`).rejects.toThrow(expected);
          }
        }
        expect(fs.lstatSync(ws("fifo")).isFIFO()).toBe(true);
      } finally {
        release([ws("fifo")]);
        server.close();
      }
    });
  });

  describe("symbolic links resolved as the kernel does", () => {
    it("write_file does not create a file outside through a relative chain (a/b/c -> ../.., then a/b/c/l1 -> ../x)", async () => {
      fs.mkdirSync(ws("a/b"), { recursive: true });
      fs.symlinkSync("../..", ws("a/b/c")); // a/b/c is the workspace itself
      fs.symlinkSync("../outside/planted.txt", ws("l1")); // reached as a/b/c/l1: from the workspace, ../outside
      fs.symlinkSync("../x", ws("l2"));
      for (const p of ["a/b/c/l1", "a/b/c/l2", "l1"]) {
        await expect(exec(writeFileTool, { path: p, content: "pwned" }), p).rejects.toThrow(/outside the workspace/);
      }
      expect(fs.readdirSync(sb.outside)).toEqual(["secret.txt"]);
      expect(fs.existsSync(path.join(sb.root, "x"))).toBe(false);
      // A chain that stays inside still works, and lands where the kernel puts it.
      fs.symlinkSync("inside-target.txt", ws("l3"));
      await exec(writeFileTool, { path: "a/b/c/l3", content: "ok" });
      expect(fs.readFileSync(ws("inside-target.txt"), "utf8")).toBe("ok");
    });
  });
});
}

describe("edit_file output cap", () => {
  const EIGHT_MIB = 8 * 1024 * 1024;

  it("refuses an edit whose result would pass the cap, naming the size, and changes nothing", async () => {
    fs.writeFileSync(ws("big.txt"), Buffer.alloc(EIGHT_MIB, "a"));
    const newText = "x".repeat(60);
    await expect(exec(editFileTool, { path: "big.txt", oldText: "a", newText, replaceAll: true })).rejects.toThrow(
      `replacing ${EIGHT_MIB} occurrences would make big.txt ${EIGHT_MIB * 60} bytes, over the ${EDIT_FILE_MAX_BYTES}-byte limit of edit_file; nothing was changed`,
    );
    expect(fs.statSync(ws("big.txt")).size).toBe(EIGHT_MIB);
    // Up to the cap exactly is fine, multi-byte text counted in bytes.
    // 1024 × (3413 × 3-byte € + "a") = 10 MiB exactly.
    fs.writeFileSync(ws("small.txt"), "é".repeat(1024));
    const out = await exec(editFileTool, { path: "small.txt", oldText: "é", newText: "€".repeat((10 * 1024 - 1) / 3) + "a", replaceAll: true });
    expect(text(out)).toBe("Edited small.txt: replaced 1024 occurrences");
    expect(fs.statSync(ws("small.txt")).size).toBe(EDIT_FILE_MAX_BYTES);
    fs.writeFileSync(ws("small.txt"), "é".repeat(1024) + "!");
    await expect(exec(editFileTool, { path: "small.txt", oldText: "é", newText: "€".repeat((10 * 1024 - 1) / 3) + "a", replaceAll: true })).rejects.toThrow(
      `would make small.txt ${EDIT_FILE_MAX_BYTES + 1} bytes`,
    );
  });

  it("refuses before the result exists: the same edit passes in a process with a 64 MiB heap", async () => {
    // The old edit built the 480 MiB result (and a match array) before writing it; in a heap far
    // smaller than that result only a refusal computed up front can answer at all.
    const { buildSync } = await import("esbuild");
    const { execFileSync } = await import("node:child_process");
    const bundle = path.join(sb.root, "edit-file.mjs");
    buildSync({ entryPoints: [path.join(import.meta.dirname, "../../src/tools/edit-file.ts")], bundle: true, platform: "node", format: "esm", outfile: bundle, logLevel: "silent" });
    fs.writeFileSync(ws("big.txt"), Buffer.alloc(EIGHT_MIB, "a"));
    const script = `
      const { editFileTool } = await import(${JSON.stringify(bundle)});
      const ctx = { workspace: ${JSON.stringify(sb.ws)}, permissionMode: "workspace-write", signal: new AbortController().signal, sessionId: "t", callId: "c" };
      try {
        await editFileTool.execute({ path: "big.txt", oldText: "a", newText: "x".repeat(60), replaceAll: true }, ctx);
        console.log("edited");
      } catch (err) {
        console.log(err.name + ": " + err.message);
      }`;
    const out = execFileSync(process.execPath, ["--max-old-space-size=64", "--input-type=module", "-e", script], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 60_000 });
    expect(out).toMatch(/^ToolError: replacing 8388608 occurrences would make big\.txt 503316480 bytes, over the/);
    expect(fs.statSync(ws("big.txt")).size).toBe(EIGHT_MIB);
  });
});
