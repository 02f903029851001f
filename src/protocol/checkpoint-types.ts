/**
 * Wire types of checkpoints and rewind (shared/PROTOCOL.md, Additions, "Checkpoints and
 * rewind"): the `checkpoint`, `checkpoint/skipped` and `session/rewound` events and
 * `session/rewind`. What the code chose beyond the contract: docs/PROTOCOL.md, "Checkpoints".
 *
 * @module
 */

/**
 * `checkpoint` (durable): what the turn recorded so that `session/rewind` can undo it, written
 * once per turn that ran a tool able to change the workspace, just before its `turn/end`
 * (the record itself is taken before each change). `files`: the workspace files the turn
 * changed (created, changed or removed) whose previous state is kept. `kind`: `git` when a
 * snapshot of the work tree covered the turn (what `bash` did is covered too), `files` when
 * only the file tools' writes were recorded.
 */
export interface CheckpointEventData {
  turn: number;
  files: number;
  kind: "files" | "git";
  /**
   * Present when tools ran whose changes this checkpoint does not cover (kind `files`: `bash`,
   * `task`, client and MCP tools that may write): their names, once each. A rewind reports
   * them in `unrestored`.
   */
  uncovered?: string[];
  /**
   * Present on a rewind's own checkpoint (an addition): a `session/rewind` that changed files
   * first kept their state, under a turn number of its own (`turn`, after the session's last
   * turn; the next turn takes the number after it), and logged this event after its
   * `session/rewound`. `rewind` is the turn that rewind went back to; `files` the files it
   * changed. `session/rewind { turn, conversation: false }` undoes the rewind.
   */
  rewind?: number;
}

/**
 * `checkpoint/skipped` (durable): the previous content of these workspace paths was not kept,
 * so a rewind cannot put them back; written when the per-session checkpoint size cap
 * (`HARNESS_CHECKPOINT_MAX_BYTES`) was reached, or a file could not be read.
 */
export interface CheckpointSkippedEventData {
  turn: number;
  paths: string[];
  reason: "size-cap" | "unreadable";
}

/** `session/rewound` (durable): the history was cut back to before `turn` (the log keeps what came after). */
export interface SessionRewoundEventData {
  turn: number;
}

/** Params of `session/rewind`. */
export interface SessionRewindParams {
  sessionId: string;
  /** Undo turns `turn` and later (1 … the session's last turn, not one a rewind already cut from the history). */
  turn: number;
  /** Put the workspace files back (default `true`). */
  files?: boolean;
  /** Cut the history back to before `turn` (default `true`). */
  conversation?: boolean;
  /** Overwrite files changed since by someone else (default `false`: they are `conflicts`). */
  force?: boolean;
}

/** What of turns `turn…` a rewind could not put back, by turn. */
export interface UnrestoredTurn {
  turn: number;
  /** Tools that ran in the turn whose changes no checkpoint covered (kind `files`: `bash`, …). */
  tools: string[];
  /** Paths whose previous content was not kept (`checkpoint/skipped`). */
  paths: string[];
}

/** Result of `session/rewind`: workspace-relative paths. */
export interface SessionRewindResult {
  /** Files written back with their content and mode from before `turn`. */
  restored: string[];
  /** Files turns `turn…` created, removed. */
  removed: string[];
  /** Files someone else changed since the session last wrote them: left as they are (without `force`). */
  conflicts: string[];
  /** What could not be restored (beyond the contract; empty when everything was covered). */
  unrestored: UnrestoredTurn[];
}
