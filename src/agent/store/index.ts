/**
 * The session store: one JSONL log per session (file-store.ts), or memory only under
 * `--no-session-log` (memory-store.ts), both behind interface.ts. This is what the rest of the
 * bridge imports; the server loads it with the agent modules (server/agent-modules.ts), so
 * nothing here is on the start-up path. The default root alone is imported at `initialize`,
 * straight from root.ts.
 *
 * Inside the folder imports run one way: log-format.ts, log-lines.ts, log-tail.ts and process-owner.ts import
 * no other file here; summary.ts, lock.ts, resume.ts and interface.ts only those; the catalog and
 * the stores build on them.
 *
 * @module
 */
export { ForkNotUndoneError, type ForkRefusal, type NewSessionHeader, type SessionCatalog, type SessionLog } from "./interface.js";
export { noSeqLeft, SessionLogError, workspaceFolderName, type SessionHeader } from "./log-format.js";
export { SessionLockedError } from "./lock.js";
export { SessionStore } from "./file-store.js";
export { MemorySessionStore } from "./memory-store.js";
export { defaultSessionRoot } from "./root.js";
