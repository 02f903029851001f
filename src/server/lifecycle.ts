/**
 * The server's phases and the moves between them (the diagram in server.ts). `HarnessServer`
 * changes its phase only through `moveTo`, which asks `canMove`: any other move is a bug.
 *
 * @module
 */

/** Where the server is in its life (the diagram in server.ts). */
export type ServerPhase = "starting" | "initializing" | "ready" | "shutting-down" | "exiting";

/** The moves `moveTo` allows; anything else is a bug, thrown as such. */
const MOVES: Record<ServerPhase, readonly ServerPhase[]> = {
  starting: ["initializing", "shutting-down", "exiting"],
  initializing: ["ready", "starting", "shutting-down", "exiting"],
  ready: ["shutting-down", "exiting"],
  "shutting-down": ["exiting"],
  exiting: [],
};

/** Whether the lifecycle allows the move from `from` to `to`. */
export function canMove(from: ServerPhase, to: ServerPhase): boolean {
  return MOVES[from].includes(to);
}
