/**
 * A turn's checkpoint as the loop holds it (loop.ts `TurnCheckpoint`): the recorder of
 * checkpoints/turn-recorder.ts is made when the first tool call that may change the workspace
 * is about to run, so a turn that runs none (most turns: an answer, read-only tools) makes no
 * recorder, no checkpoint store and no folder for one, and awaits nothing at its end.
 *
 * Invariant: what is recorded is what an eagerly made recorder records. Its `beforeTool`
 * records nothing for a read-only tool and its `finish` emits nothing when nothing was about to
 * change, so a recorder first asked at the first changing call sees every call that matters.
 * `undefined` from `forTurn` (no store can be made: checkpoints/by-session.ts logs why) leaves
 * the turn without a checkpoint, asked once.
 */
import type { JsonObject } from "../protocol/index.js";
import type { Session } from "./session.js";

/** What the loop asks of a turn's checkpoint: told before each tool call, finished before `turn/end`. */
export interface TurnCheckpoint {
  beforeTool(name: string, readOnly: boolean, args: JsonObject): Promise<void> | undefined;
  /** `undefined`: nothing to record, nothing to wait for. */
  finish(session: Session): Promise<void> | undefined;
}

/** Where a turn's recorder comes from (the runtime's `CheckpointsBySession`); `undefined`: this turn cannot be checkpointed. */
export interface TurnCheckpointSource {
  forTurn(turn: number): TurnCheckpoint | undefined;
}

export class LazyTurnCheckpoint implements TurnCheckpoint {
  private recorder: TurnCheckpoint | undefined;
  private asked = false;

  constructor(
    private readonly source: TurnCheckpointSource,
    private readonly turn: number,
  ) {}

  beforeTool(name: string, readOnly: boolean, args: JsonObject): Promise<void> | undefined {
    if (readOnly) return undefined;
    if (!this.asked) {
      this.asked = true;
      this.recorder = this.source.forTurn(this.turn);
    }
    return this.recorder?.beforeTool(name, readOnly, args);
  }

  finish(session: Session): Promise<void> | undefined {
    return this.recorder?.finish(session);
  }
}
