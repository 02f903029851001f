/**
 * vitest setupFile (runs in every worker, before each test file): the bridges a test starts
 * without `--session-root` write their session logs under a temporary state folder, never the
 * user's `~/.local/state/harness-bridge`. Children inherit `process.env`, so this covers the
 * binary, the Python SDK and the scripts a test runs. A test about the default root sets its
 * own `HOME`/`XDG_STATE_HOME` in the child's environment. scripts/test.sh checks that a whole
 * run wrote nothing under the (temporary) HOME it gives the suites.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll } from "vitest";

const state = fs.mkdtempSync(path.join(os.tmpdir(), "hb-test-state-"));
process.env.XDG_STATE_HOME = state;
// It would win over XDG_STATE_HOME (src/cli.ts): a user's own root is not the tests' either.
delete process.env.HARNESS_SESSION_ROOT;

afterAll(() => {
  fs.rmSync(state, { recursive: true, force: true });
});
