/**
 * `session/rewind` on a loaded, idle session: checks the turn, puts the files back
 * (rewind.ts), journals the rewind, and cuts the history (`session/rewound`). The runtime holds
 * the session busy and under its log's lock meanwhile.
 *
 * Order: everything that can refuse the request is checked before anything changes; the files
 * are written before the history is cut, and the rewind is journaled before `session/rewound`
 * is logged, so a bridge killed in between leaves a journal that knows which files it put back.
 *
 * @module
 */
import type { SessionRewindParams, SessionRewindResult } from "../../protocol/index.js";
import type { Session } from "../session.js";
import { canRestore } from "./restore-fs.js";
import { readJournal, rewindFiles } from "./rewind.js";
import type { SessionCheckpoints } from "./session-checkpoints.js";

/** Why a rewind was refused before it changed anything (a -32602 with this `kind`). */
export class RewindRefusal extends Error {
  constructor(
    readonly kind: "unknown-turn" | "turn-compacted" | "rewind-unsupported",
    message: string,
    readonly turns?: number,
  ) {
    super(message);
    this.name = "RewindRefusal";
  }
}

export async function rewindSession(session: Session, checkpoints: SessionCheckpoints, params: SessionRewindParams): Promise<SessionRewindResult> {
  const { turn } = params;
  const files = params.files ?? true;
  const conversation = params.conversation ?? true;
  const lastTurn = session.nextTurnNumber() - 1;
  const view = readJournal(checkpoints.store.journal());
  if (turn < 1 || turn > lastTurn || view.cut.has(turn)) {
    const why = turn > lastTurn ? `the session has ${lastTurn} turn(s)` : `turn ${turn} was cut from the history by an earlier rewind`;
    throw new RewindRefusal("unknown-turn", `invalid params: params.turn: ${why}; turn ${turn} cannot be rewound`, lastTurn);
  }
  if (conversation && !session.canCutTo(turn)) {
    throw new RewindRefusal(
      "turn-compacted",
      `invalid params: params.turn: turn ${turn} is folded into a compaction summary made after it; the history cannot be cut back to it (rewind with conversation: false to restore its files only)`,
    );
  }
  if (files && !canRestore()) throw new RewindRefusal("rewind-unsupported", "invalid params: params.files: restoring files needs /proc descriptor paths (Linux)");
  const result: SessionRewindResult = { restored: [], removed: [], conflicts: [], unrestored: [] };
  if (files) {
    const done = rewindFiles(checkpoints, view, turn, params.force ?? false);
    Object.assign(result, { restored: done.restored, removed: done.removed, conflicts: done.conflicts, unrestored: done.unrestored });
    checkpoints.store.append([{ type: "rewind", turn, lastTurn, files, conversation, states: done.states, conflicts: done.conflicts }], true);
  } else {
    checkpoints.store.append([{ type: "rewind", turn, lastTurn, files, conversation, states: [] }], true);
  }
  if (conversation) {
    await session.emit("session/rewound", { turn });
    session.sync();
  }
  return result;
}
