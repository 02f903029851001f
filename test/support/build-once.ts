/**
 * vitest globalSetup: builds bin/harness-bridge (`npm run build`) when it is missing or older
 * than any file under src/ (or package.json / scripts/build.mjs), so the end-to-end tests
 * always run the code they are checked against. A lock directory keeps two concurrent test
 * runs from building at once.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
export const BINARY = path.join(root, "bin", "harness-bridge");

function newestMtime(entry: string): number {
  const stat = fs.statSync(entry, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = 0;
  for (const name of fs.readdirSync(entry)) newest = Math.max(newest, newestMtime(path.join(entry, name)));
  return newest;
}

function isStale(): boolean {
  const bin = fs.statSync(BINARY, { throwIfNoEntry: false });
  if (!bin) return true;
  const inputs = Math.max(newestMtime(path.join(root, "src")), newestMtime(path.join(root, "scripts", "build.mjs")), newestMtime(path.join(root, "scripts", "chunk-cache.cjs")), newestMtime(path.join(root, "scripts", "start-up-cache.cjs")), newestMtime(path.join(root, "package.json")));
  return bin.mtimeMs < inputs;
}

async function withLock<T>(fn: () => T): Promise<T> {
  const lock = path.join(root, "build", ".test-build.lock");
  fs.mkdirSync(path.dirname(lock), { recursive: true });
  const deadline = Date.now() + 180_000;
  for (;;) {
    try {
      fs.mkdirSync(lock);
      break;
    } catch (error) {
      // Only a held lock is waited for; a folder this user cannot write is an error at once.
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const age = Date.now() - (fs.statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > 180_000) fs.rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`build lock ${lock} is held for too long`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  try {
    return fn();
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * The in-process tests must run on the Node the binary embeds (package.json
 * `config.embeddedNode`), not on whatever `node` ran `npx vitest`: else they would pass or fail
 * for a runtime that never ships. HARNESS_TEST_ANY_NODE=1 lets a run go on anyway.
 */
function checkPinnedNode(): void {
  const pinned = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")).config?.embeddedNode;
  if (process.versions.node === pinned || process.env.HARNESS_TEST_ANY_NODE === "1") return;
  throw new Error(
    `vitest runs on node ${process.versions.node}, but the binary embeds node ${pinned} (package.json config.embeddedNode): ` +
      "run the tests with scripts/vitest (e.g. `scripts/vitest run test/x.test.ts`) or `npm run test:ts`, which use the pinned node; HARNESS_TEST_ANY_NODE=1 overrides",
  );
}

export default async function setup(): Promise<void> {
  checkPinnedNode();
  if (!isStale()) return;
  await withLock(() => {
    if (!isStale()) return;
    process.stderr.write("build-once: bin/harness-bridge is missing or older than src/; running npm run build\n");
    execFileSync("npm", ["run", "build"], { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
  });
}
