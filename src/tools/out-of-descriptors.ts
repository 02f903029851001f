/**
 * Running out of file descriptors (`EMFILE`, `ENFILE`) is never "this file is unreadable":
 * a search that skipped what it could not open would answer with files missing, or apply no
 * `.gitignore` and show what it hides, without a word. Every place that treats an open or a
 * read failure as "skip it" lets this one through, as the tool call's error.
 */
import { ToolError } from "./types.js";

export function isOutOfDescriptors(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === "EMFILE" || code === "ENFILE";
}

export class OutOfDescriptorsError extends ToolError {
  constructor() {
    super("the search ran out of file descriptors (too many open files): it was stopped rather than answer with files missing; try again, or search a smaller folder");
  }
}

/** Throws `OutOfDescriptorsError` when `err` is, or reports, running out of descriptors. */
export function rethrowIfOutOfDescriptors(err: unknown): void {
  if (err instanceof OutOfDescriptorsError) throw err;
  if (isOutOfDescriptors(err)) throw new OutOfDescriptorsError();
}
