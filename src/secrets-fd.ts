/**
 * `--secrets-fd <n>`: provider keys handed over on an inherited file descriptor instead of the
 * environment. Deleting a key from `process.env` does not hide it: `/proc/<pid>/environ` keeps
 * the environment the process was started with, readable by anything running as the same user
 * (a tool in `full` mode, a process outside the sandbox). A key read from a pipe lives only in
 * the bridge's memory.
 *
 * The descriptor holds one JSON object `{ "DEEPSEEK_API_KEY": "…" }` and must reach end of file
 * (the writer closes its end); names outside `PROVIDER_KEY_VARIABLES` are refused so a typo
 * cannot silently leave a key unset. The descriptor is closed after reading. No message here
 * ever quotes a value.
 */
import { closeSync, constants, fstatSync, readFileSync, readSync, type Stats } from "node:fs";
import { PROVIDER_KEY_VARIABLES } from "./providers/types.js";
import { pipeReopened } from "./transport/stdio.js";

/** Far more than any set of keys; a descriptor that keeps giving is refused, not buffered. */
export const MAX_SECRETS_BYTES = 64 * 1024;
/** A writer that never closes its end must not hold start-up forever. */
export const SECRETS_EOF_TIMEOUT_MS = 5_000;

export class SecretsFdError extends Error {}

/** Whether `fd` is open write-only: its access mode in `/proc/self/fdinfo` (Linux); elsewhere the read's error says so. */
function writeOnly(fd: number): boolean {
  try {
    const flags = /^flags:\s+([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, "latin1"))?.[1];
    return flags !== undefined && (parseInt(flags, 8) & 3) === 1; // O_ACCMODE, O_WRONLY
  } catch {
    return false;
  }
}

/** The words for a read that failed: a write-only descriptor's errors say "not readable". */
function readFailure(fd: number, code: string | undefined): SecretsFdError {
  if (code === "EBADF" || code === "ENOTCONN") return new SecretsFdError(`--secrets-fd ${fd}: not readable (${code}; pass the read end of a pipe or a file opened for reading)`);
  return new SecretsFdError(`--secrets-fd ${fd}: cannot read it (${code})`);
}

/** What a pipe held when it was read without waiting (`readWaiting`). */
interface Waiting {
  chunks: Buffer[];
  size: number;
  /** Its writers had closed it: this is all of it. */
  ended: boolean;
}

/**
 * What the pipe `fd` holds now, read through a non-blocking descriptor of its own
 * (transport/stdio.ts `pipeReopened`). The SDK writes the keys and closes its end before the
 * spawn, so this is usually all of it, and the start needs no socket for it: a socket loads
 * `node:stream` and `node:net`, and answers a turn of the event loop later (transport/stdio.ts:
 * what that costs). Undefined where no such descriptor opens (no /proc); reading stops at the
 * first error, which the socket then meets and reports, and after more than the limit, which the
 * caller refuses.
 */
function readWaiting(fd: number): Waiting | undefined {
  const early = pipeReopened(fd, constants.O_RDONLY);
  if (early === undefined) return undefined;
  const waiting: Waiting = { chunks: [], size: 0, ended: false };
  try {
    while (waiting.size <= MAX_SECRETS_BYTES) {
      const buffer = Buffer.allocUnsafe(16 * 1024);
      const n = readSync(early, buffer, 0, buffer.length, null);
      if (n === 0) {
        waiting.ended = true;
        break;
      }
      waiting.chunks.push(buffer.subarray(0, n));
      waiting.size += n;
    }
  } catch {
    // EAGAIN: the writer has not closed its end yet; the socket reads the rest.
  } finally {
    closeSync(early);
  }
  return waiting;
}

/**
 * Reads, checks and closes descriptor `fd`; resolves with the variables it carries. A pipe is
 * read at once as far as it holds bytes (`readWaiting`), and then, if its writer has not closed
 * it yet, through a non-blocking socket handle, so a writer that never closes costs a timeout
 * and no blocked thread; a regular file is read at once; anything else (a terminal, one of
 * Node's own descriptors) is refused unread.
 */
export function readSecretsFd(fd: number, timeoutMs = SECRETS_EOF_TIMEOUT_MS): Promise<Record<string, string>> {
  let stat: Stats;
  try {
    stat = fstatSync(fd);
  } catch {
    return Promise.reject(new SecretsFdError(`--secrets-fd ${fd}: not an open descriptor`));
  }
  // Before its size or contents: a write-only descriptor (the pipe's write end, a file opened
  // for writing) is the caller's mistake to name as such, whatever else it would fail on.
  if (writeOnly(fd)) {
    closeSync(fd);
    return Promise.reject(new SecretsFdError(`--secrets-fd ${fd}: not readable (it is open for writing only; pass the read end)`));
  }
  if (stat.isFile()) {
    try {
      if (stat.size > MAX_SECRETS_BYTES) throw new SecretsFdError(`--secrets-fd ${fd}: more than ${MAX_SECRETS_BYTES} bytes`);
      return Promise.resolve(parseSecrets(readFileSync(fd, "utf8"), fd));
    } catch (error) {
      return Promise.reject(error instanceof SecretsFdError ? error : readFailure(fd, (error as NodeJS.ErrnoException).code));
    } finally {
      closeSync(fd);
    }
  }
  if (!stat.isFIFO() && !stat.isSocket()) return Promise.reject(new SecretsFdError(`--secrets-fd ${fd}: not a pipe or a file`));
  const early = stat.isFIFO() ? readWaiting(fd) : undefined;
  if (early && (early.ended || early.size > MAX_SECRETS_BYTES)) {
    closeSync(fd);
    if (early.size > MAX_SECRETS_BYTES) return Promise.reject(new SecretsFdError(`--secrets-fd ${fd}: more than ${MAX_SECRETS_BYTES} bytes`));
    try {
      return Promise.resolve(parseSecrets(Buffer.concat(early.chunks).toString("utf8"), fd));
    } catch (error) {
      return Promise.reject(error);
    }
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = early?.chunks ?? [];
    let size = early?.size ?? 0;
    let settled = false;
    // Loaded here, for a socket pair or a writer still writing: node:net is not on the start-up path otherwise (transport/stdio.ts: why).
    const { Socket } = process.getBuiltinModule("node:net");
    const pipe = new Socket({ fd, readable: true, writable: false });
    const finish = (error: Error | null, value?: Record<string, string>): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      pipe.destroy();
      if (error) reject(error);
      else resolve(value!);
    };
    const timer = setTimeout(() => finish(new SecretsFdError(`--secrets-fd ${fd}: no end of file within ${timeoutMs} ms (the writer must close its end)`)), timeoutMs);
    pipe.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_SECRETS_BYTES) return finish(new SecretsFdError(`--secrets-fd ${fd}: more than ${MAX_SECRETS_BYTES} bytes`));
      chunks.push(chunk);
    });
    pipe.on("error", (error: NodeJS.ErrnoException) => finish(error.code ? readFailure(fd, error.code) : new SecretsFdError(`--secrets-fd ${fd}: cannot read it (${error.message})`)));
    pipe.on("end", () => {
      try {
        finish(null, parseSecrets(Buffer.concat(chunks).toString("utf8"), fd));
      } catch (error) {
        finish(error as Error);
      }
    });
  });
}

function parseSecrets(text: string, fd: number): Record<string, string> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the text around the error: it could be part of a key.
    throw new SecretsFdError(`--secrets-fd ${fd}: not a JSON object`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new SecretsFdError(`--secrets-fd ${fd}: not a JSON object`);
  const secrets: Record<string, string> = {};
  for (const [name, secret] of Object.entries(value)) {
    if (!PROVIDER_KEY_VARIABLES.includes(name)) {
      // Quoted only when it looks like a variable name: a key pasted as a name stays unshown.
      const shown = /^[A-Z][A-Z0-9_]{0,63}$/.test(name) ? name : "a name that is not a variable name";
      throw new SecretsFdError(`--secrets-fd ${fd}: unknown name ${shown} (accepted: ${PROVIDER_KEY_VARIABLES.join(", ")})`);
    }
    if (typeof secret !== "string") throw new SecretsFdError(`--secrets-fd ${fd}: the value of ${name} is not a string`);
    secrets[name] = secret;
  }
  return secrets;
}
