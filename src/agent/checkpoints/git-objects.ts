/**
 * Checkpoint contents that are already in the user's repository: a tracked file whose bytes are
 * exactly the blob its index entry records is kept as a reference to that blob (its id), not
 * copied into the store; a rewind reads it back with `git cat-file --batch`.
 *
 * Invariant: no code of the repository runs, and nothing in `.git` is written. The blob id is
 * computed here from the file's bytes (`blob <size>\0` + bytes, SHA-1 or SHA-256 after the
 * repository's object format, which the length of the index's ids tells), never by git
 * (`hash-object` would run clean filters). `cat-file --batch` / `--batch-check` without
 * `--filters` or `--textconv` run none, and git runs with the neutral config and environment of
 * git-listing.ts (no fsmonitor, no hooks, no system or global config, no inherited `GIT_*`, no
 * transport allowed). A repository with a promisor remote (a partial clone: reading a missing
 * object would fetch it) is never referenced: its files are copied as in any other folder.
 * What git hands back is checked against the SHA-256 the checkpoint recorded before it is
 * written into the workspace: a blob that is gone (pruned by a gc) or different is reported as
 * not restored, never written.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { runGit } from "./git-listing.js";

/** A git object id: 40 hex digits (SHA-1) or 64 (SHA-256). */
export const GIT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** Git's blob id of `bytes` in a repository whose ids look like `like` (the length tells the hash). */
export function blobId(bytes: Uint8Array, like: string): string {
  const hash = createHash(like.length === 64 ? "sha256" : "sha1");
  hash.update(`blob ${bytes.length}\0`);
  hash.update(bytes);
  return hash.digest("hex");
}

/**
 * Whether the repository has a promisor remote (`extensions.partialClone`, or a remote with
 * `promisor` set): then a missing object is fetched on demand, and nothing is referenced.
 * `true` too when git cannot say.
 */
export async function hasPromisor(workspace: string): Promise<boolean> {
  const out = await runGit(workspace, ["config", "-z", "--get-regexp", "^(extensions\\.partialclone|remote\\..*\\.promisor)$"], undefined, [0, 1]);
  return out === undefined || out.code === 0;
}

/** The ids of `wanted` (id → size) that the repository holds as blobs of that size; `undefined` when git could not be asked. */
export async function presentBlobs(workspace: string, wanted: Map<string, number>): Promise<Set<string> | undefined> {
  const ids = [...wanted.keys()].filter((id) => GIT_ID.test(id));
  const present = new Set<string>();
  if (ids.length === 0) return present;
  const out = await runGit(workspace, ["cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)"], ids.map((id) => `${id}\n`).join(""));
  if (!out) return undefined;
  for (const line of out.stdout.toString("utf8").split("\n")) {
    const [id, type, size] = line.split(" ");
    if (type === "blob" && wanted.get(id) === Number(size)) present.add(id);
  }
  return present;
}

/**
 * The contents of the blobs `ids`, read raw (`cat-file --batch`: no filter, no textconv); an id
 * that is missing or not a blob is absent from the answer, and so is everything when git could
 * not be asked.
 */
export async function readBlobs(workspace: string, ids: string[]): Promise<Map<string, Buffer>> {
  const found = new Map<string, Buffer>();
  const asked = [...new Set(ids.filter((id) => GIT_ID.test(id)))];
  if (asked.length === 0 || (await hasPromisor(workspace))) return found;
  const out = await runGit(workspace, ["cat-file", "--batch"], asked.map((id) => `${id}\n`).join(""));
  if (!out) return found;
  const buf = out.stdout;
  let at = 0;
  while (at < buf.length) {
    const eol = buf.indexOf(10, at);
    if (eol < 0) break;
    const [id, type, sizeText] = buf.subarray(at, eol).toString("utf8").split(" ");
    at = eol + 1;
    if (sizeText === undefined) continue; // "<id> missing" (or ambiguous): no content follows
    const size = Number(sizeText);
    if (!Number.isSafeInteger(size) || size < 0 || at + size > buf.length) break;
    if (type === "blob") found.set(id, Buffer.from(buf.subarray(at, at + size)));
    at += size + 1;
  }
  return found;
}
