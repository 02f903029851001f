/**
 * The heap the `.gitignore` rules of a walk, and of all walks under way, may hold, reckoned by
 * `RulesIndex.heapBytes` (gitignore-rules.ts) when a file is parsed, before any rule is compiled.
 *
 * @module
 */

export const MiB = 1024 * 1024;

/**
 * The most heap one walk's `.gitignore` rules may hold, reckoned by `RulesIndex.heapBytes` (every
 * rule's expression compiled). Rules live as long as the walk (its `GitignoreFilter`), and the
 * files of an untrusted repository, each under `GITIGNORE_MAX_BYTES`, could otherwise add up past
 * V8's heap limit, whose out-of-memory abort ends the bridge and every session in it. Each file's
 * rules are reckoned in whole; a file that would take the walk past the budget is not applied,
 * and the call's result says so (`unappliedNote`), as for a file over the size cap. It is set so
 * that a generated list of plain names up to the size cap fits, and so do the wildcard rules a
 * real repository writes by hand many times over.
 */
export const GITIGNORE_WALK_HEAP_BYTES = 128 * MiB;

/**
 * The most heap the rules of all walks under way may hold together, so that concurrent searches
 * (several sessions, or several calls of one turn) on hostile repositories cannot add up past the
 * heap limit either, while a few walks at their full budget still fit together. A walk's rules
 * count from when they are read until its `close()` (glob and grep close their filter when the
 * call ends, however it ends).
 */
export const GITIGNORE_ALL_WALKS_HEAP_BYTES = 4 * GITIGNORE_WALK_HEAP_BYTES;

/** What the rules of the walks not yet closed may hold of the heap (`RulesIndex.heapBytes`, summed). */
let allWalksHeldBytes = 0;

/** One walk's share of the budgets: what its applied files' rules may hold. */
export class WalkRulesBudget {
  private held = 0;
  private closed = false;

  /** Whether `bytes` more would stay within the walk's and all walks' budgets, the walk not closed. */
  fits(bytes: number): boolean {
    return !this.closed && this.held + bytes <= GITIGNORE_WALK_HEAP_BYTES && allWalksHeldBytes + bytes <= GITIGNORE_ALL_WALKS_HEAP_BYTES;
  }

  /** Takes `bytes` for one file's rules, or nothing and false when they do not fit (`fits`). */
  take(bytes: number): boolean {
    if (!this.fits(bytes)) return false;
    this.held += bytes;
    allWalksHeldBytes += bytes;
    return true;
  }

  /** Gives what the walk took back, once; it takes nothing more. */
  close(): void {
    allWalksHeldBytes -= this.held;
    this.held = 0;
    this.closed = true;
  }
}
