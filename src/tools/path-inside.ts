/** Lexical containment of absolute paths: a leaf module, so workspace.ts and sandbox/hidden.ts share it without importing each other. */
import * as path from "node:path";

/** Whether `candidate` is `root` or below it, lexically (both absolute). */
export function isInside(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  // `..name` is a legal name inside; only a `..` segment leaves.
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}
