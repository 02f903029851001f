/**
 * File names that are not valid UTF-8 (a Latin-1 `caf\xe9.txt`): on Linux a name is bytes, and
 * decoding it the usual way puts U+FFFD in place of the bad bytes — a name that does not exist,
 * and two different names (`d\xe9`, `d\xe8`) that read the same.
 *
 * Inside the search walks such a name is carried as a string that keeps its bytes: the valid
 * UTF-8 runs decoded, each byte of an invalid sequence as the lone surrogate U+DC00 + byte (the
 * "surrogateescape" of Python). No valid UTF-8 name decodes to a lone surrogate, so the form is
 * one-to-one, never equals a valid name, and tells itself apart with `isWellFormed()`: the walk,
 * the `.gitignore` filter, the sort and the shown-path check treat it as any name, and every
 * `fs` call on it goes through `fsPath`, which gives the bytes back.
 *
 * Such names are never shown as paths (no file tool can be given one: the model's paths are
 * strings, JSON has no bytes); the searches name them in a note, each in the `$'…'` quoting of
 * bash (`undecodableNote`), which bash reads back to the same bytes.
 */
import { isUtf8 } from "node:buffer";
import * as fs from "node:fs";

declare global {
  interface String {
    /** ES2024: false when the string holds a lone surrogate. */
    isWellFormed(): boolean;
  }
}

/** The length of the valid UTF-8 sequence at `i` of `b`, or 0 when none starts there (RFC 3629's table). */
function sequenceAt(b: Uint8Array, i: number): number {
  const c = b[i];
  if (c < 0x80) return 1;
  const cont = (k: number, lo = 0x80, hi = 0xbf) => i + k < b.length && b[i + k] >= lo && b[i + k] <= hi;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    const lo = c === 0xe0 ? 0xa0 : 0x80;
    const hi = c === 0xed ? 0x9f : 0xbf;
    return cont(1, lo, hi) && cont(2) ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    const lo = c === 0xf0 ? 0x90 : 0x80;
    const hi = c === 0xf4 ? 0x8f : 0xbf;
    return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

/** A name's bytes as a string: its UTF-8 when valid, else with each bad byte as U+DC00 + byte (see the module's comment). */
export function nameOf(bytes: Uint8Array): string {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (isUtf8(buf)) return buf.toString("utf8");
  let out = "";
  let run = 0; // start of the valid run not yet decoded
  for (let i = 0; i < buf.length; ) {
    const n = sequenceAt(buf, i);
    if (n > 0) {
      i += n;
      continue;
    }
    out += buf.toString("utf8", run, i) + String.fromCharCode(0xdc00 + buf[i]);
    run = ++i;
  }
  return out + buf.toString("utf8", run);
}

/** `nameOf` of a record known to be a path: the common case (valid UTF-8, no U+FFFD) costs one decode and one search. */
export function pathOf(bytes: Buffer): string {
  const text = bytes.toString("utf8");
  return text.includes("\uFFFD") ? nameOf(bytes) : text;
}

/** The bytes a string of `nameOf` stands for: lone surrogates U+DC80–U+DCFF back to their byte, the rest as UTF-8. */
export function bytesOf(name: string): Buffer {
  if (name.isWellFormed()) return Buffer.from(name, "utf8");
  const parts: Buffer[] = [];
  let run = 0;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < name.length && (name.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      i++; // a pair: a valid character
      continue;
    }
    if (c >= 0xdc80 && c <= 0xdcff) {
      parts.push(Buffer.from(name.slice(run, i), "utf8"), Buffer.of(c - 0xdc00));
      run = i + 1;
    }
  }
  parts.push(Buffer.from(name.slice(run), "utf8"));
  return Buffer.concat(parts);
}

/** What to hand `fs` for a path: itself, or its bytes when it holds a name that is not valid UTF-8. */
export function fsPath(p: string): string | Buffer {
  return p.isWellFormed() ? p : bytesOf(p);
}

/**
 * The entries of folder `dir` (a path of the walk), with their names as `nameOf` gives them. A
 * folder whose names all decode without U+FFFD is read once, as before; one with a U+FFFD (a bad
 * byte, or a valid name that holds the character itself) is read again as bytes, which tell the
 * two apart.
 */
export async function readFolder(dir: string): Promise<fs.Dirent[]> {
  if (dir.isWellFormed()) {
    const entries = await fs.promises.readdir(dir, { withFileTypes: true });
    if (!entries.some((e) => e.name.includes("\uFFFD"))) return entries;
  }
  const raw = await fs.promises.readdir(fsPath(dir), { withFileTypes: true, encoding: "buffer" });
  // A Dirent's name is a plain field: the same entry, its name the string form.
  for (const e of raw) (e as unknown as { name: string }).name = nameOf(e.name);
  return raw as unknown as fs.Dirent[];
}

/** Whether a path (of a walk) holds a name that is not valid UTF-8. */
export function isUndecodable(p: string): boolean {
  return !p.isWellFormed();
}

/**
 * The entry a path is left out by: the path up to its first name that is not valid UTF-8, with a
 * final `/` when that name is a folder (a folder with such a name hides its whole subtree, one
 * entry). `undefined` for a path without one.
 */
export function undecodableEntry(rel: string): string | undefined {
  if (rel.isWellFormed()) return undefined;
  const parts = rel.split("/");
  const at = parts.findIndex((p) => !p.isWellFormed());
  return parts.slice(0, at + 1).join("/") + (at < parts.length - 1 ? "/" : "");
}

/**
 * A path of the walk in bash's `$'…'` quoting: printable characters as they are, `\\` and `\'`
 * for a backslash and a quote, `\xHH` (two hex digits) for a byte that is not valid UTF-8 or a
 * control character. bash reads it back to the name's very bytes.
 */
export function quotedName(p: string): string {
  let out = "";
  for (let i = 0; i < p.length; i++) {
    const c = p.charCodeAt(i);
    if (c === 0x5c || c === 0x27) out += `\\${p[i]}`;
    else if (c < 0x20 || c === 0x7f || (c >= 0xdc80 && c <= 0xdcff && !(i > 0 && (p.charCodeAt(i - 1) & 0xfc00) === 0xd800))) {
      out += `\\x${(c < 0x80 ? c : c - 0xdc00).toString(16).padStart(2, "0")}`;
    } else out += p[i];
  }
  return `$'${out}'`;
}

/** Entries a search left out for their names, in walk order, each once (`undecodableEntry`). */
export class UndecodableEntries {
  readonly entries: string[] = [];
  private readonly seen = new Set<string>();

  /** Counts `rel` (a path of the walk, relative to the workspace) when it holds such a name; whether it did. */
  add(rel: string): boolean {
    const entry = undecodableEntry(rel);
    if (entry === undefined) return false;
    if (!this.seen.has(entry)) {
      this.seen.add(entry);
      this.entries.push(entry);
    }
    return true;
  }

  /**
   * The note a search's result ends with, or `undefined` when nothing was left out. `what` says
   * what was left out ("matching the pattern", "holding matches").
   */
  note(what: string): string | undefined {
    const n = this.entries.length;
    if (n === 0) return undefined;
    const shown = this.entries.slice(0, UNDECODABLE_SHOWN).map(quotedName).join(", ") + (n > UNDECODABLE_SHOWN ? ` and ${n - UNDECODABLE_SHOWN} more` : "");
    return (
      `[left out ${n} ${n === 1 ? "entry" : "entries"} ${what} whose names are not valid UTF-8 (a folder counts once); ` +
      `no file tool can name them, bash can, as quoted here: ${shown}]`
    );
  }
}

/** Entries a note names at most; the rest is counted. */
export const UNDECODABLE_SHOWN = 5;
