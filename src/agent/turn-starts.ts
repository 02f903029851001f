/**
 * Where each turn of a session starts: turn number → the `seq` of its user message, the point a
 * rewind cuts the history back to (agent/session.ts).
 *
 * Two arrays in ascending turn order rather than a `Map`: a session keeps one entry a turn for its
 * whole life and turns only grow, so a turn appends to the ends of two arrays of small integers,
 * where the last turn wrote, instead of hashing into a table that outgrows the young generation,
 * is read and written at a random bucket every turn and copied whole at every doubling. A log
 * edited by hand may hold turns out of order or twice: each is placed by its number, and a number
 * seen again replaces its entry, as a `Map` would.
 */
export class TurnStarts {
  private readonly turns: number[] = [];
  private readonly seqs: number[] = [];

  /** The `seq` where `turn` starts, if it is known. */
  get(turn: number): number | undefined {
    const at = this.lowerBound(turn);
    return this.turns[at] === turn ? this.seqs[at] : undefined;
  }

  set(turn: number, seq: number): void {
    const { turns, seqs } = this;
    const last = turns.length - 1;
    if (last < 0 || turns[last] < turn) {
      turns.push(turn);
      seqs.push(seq);
      return;
    }
    const at = this.lowerBound(turn);
    if (turns[at] === turn) seqs[at] = seq;
    else {
      turns.splice(at, 0, turn);
      seqs.splice(at, 0, seq);
    }
  }

  /** Forgets `turn` and every later one. */
  dropFrom(turn: number): void {
    const at = this.lowerBound(turn);
    this.turns.length = at;
    this.seqs.length = at;
  }

  /** The index of the first turn not below `turn`. */
  private lowerBound(turn: number): number {
    const { turns } = this;
    let low = 0;
    let high = turns.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (turns[mid] < turn) low = mid + 1;
      else high = mid;
    }
    return low;
  }
}
