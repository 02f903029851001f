import * as fs from "node:fs";

/**
 * Resolves once `lockFile` is gone: a bridge keeps a session's lock a moment after a turn ends
 * (store/lock.ts `LOCK_LINGER_MS`), so a loop of turns takes no lock each turn. Rejects after
 * `ms`, a bound far past that moment.
 */
export async function lockLetGo(lockFile: string, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (fs.existsSync(lockFile)) {
    if (Date.now() > deadline) throw new Error(`${lockFile} was still there ${ms} ms after the turn`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}
