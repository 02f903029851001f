/**
 * The checkpoint store's blobs (src/agent/checkpoints/store.ts) are written to a temporary of
 * the write's own and renamed into place. A name made of the pid alone is shared by bridges of
 * different PID namespaces on one volume: one truncated and renamed the other's file while it
 * was being written, and a blob came out torn (its content no longer matching its hash). The
 * temporaries a killed writer left are removed once stale, and never count as kept content.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { sha256 } from "../../src/agent/checkpoints/path-state.js";
import { CheckpointStore } from "../../src/agent/checkpoints/store.js";

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hb-cp-temp-"));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const blobOf = (hash: string) => path.join(root, "s.checkpoints", "blobs", hash.slice(0, 2), hash);

describe("checkpoint blobs", () => {
  it("stay whole while another writer of the same pid writes its temporary for the same blob", () => {
    const bytes = Buffer.from("the file as it was before the turn\n".repeat(100));
    const hash = sha256(bytes);
    const store = new CheckpointStore(root, "s");
    fs.mkdirSync(path.dirname(blobOf(hash)), { recursive: true });
    // Another bridge with this pid has its temporary for this blob open, half written.
    const theirs = `${blobOf(hash)}.${process.pid}.tmp`;
    const fd = fs.openSync(theirs, "w", 0o600);
    try {
      expect(store.put(hash, bytes)).toBe(true);
      fs.writeSync(fd, "the other writer's bytes", 0);
    } finally {
      fs.closeSync(fd);
    }
    expect(store.get(hash)).toEqual(bytes);
    expect(fs.readFileSync(theirs, "utf8")).toBe("the other writer's bytes");
  });

  it("leave no temporary behind; a stale one a killed writer left is removed, a young one kept, neither counted against the cap", () => {
    const first = Buffer.from("first");
    new CheckpointStore(root, "s").put(sha256(first), first);
    const dir = path.dirname(blobOf(sha256(first)));
    expect(fs.readdirSync(dir)).toEqual([sha256(first)]);
    const stale = `${blobOf(sha256(first))}.tmp-4242-0123456789ab`;
    const young = `${blobOf(sha256(first))}.tmp-4242-0123456789ac`;
    for (const file of [stale, young]) fs.writeFileSync(file, "x".repeat(1000));
    const twoHours = new Date(Date.now() - 2 * 60 * 60 * 1000);
    fs.utimesSync(stale, twoHours, twoHours);
    // A cap that the temporaries would fill: the next content still fits.
    const store = new CheckpointStore(root, "s", first.length + 10);
    const next = Buffer.from("0123456789");
    expect(store.put(sha256(next), next)).toBe(true);
    expect(fs.existsSync(stale)).toBe(false);
    expect(fs.existsSync(young)).toBe(true);
    expect(store.get(sha256(next))).toEqual(next);
  });
});
