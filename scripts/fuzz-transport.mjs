#!/usr/bin/env node
// The long transport fuzz run: `node scripts/fuzz-transport.mjs [runs] [seed]` (default 100000
// runs) runs test/reliability/transport-fuzz.test.ts with HB_FUZZ_RUNS (and HB_FUZZ_SEED, to
// replay a failure fast-check reported): that many random streams in process, and as many
// through one built binary. Exit status: vitest's.
import { spawnSync } from "node:child_process";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const [runs = "100000", seed] = process.argv.slice(2);
if (!/^[1-9]\d*$/.test(runs) || (seed !== undefined && !/^-?\d+$/.test(seed))) {
  process.stderr.write("usage: node scripts/fuzz-transport.mjs [runs] [seed]\n");
  process.exit(2);
}
const env = { ...process.env, HB_FUZZ_RUNS: runs, ...(seed !== undefined ? { HB_FUZZ_SEED: seed } : {}) };
// vitest colours its output even into a pipe (it checks TERM, not the tty): not in a log.
if (!process.stdout.isTTY) env.NO_COLOR = "1";
const result = spawnSync(path.join(root, "scripts", "vitest"), ["run", "test/reliability/transport-fuzz.test.ts"], { cwd: root, env, stdio: "inherit" });
process.exit(result.status ?? 1);
