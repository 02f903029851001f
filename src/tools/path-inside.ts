/** Lexical containment of absolute paths: a leaf module, so workspace.ts and sandbox/hidden.ts share it without importing each other. */
import * as path from "node:path";
import { isNormalAbsolute } from "../normal-path.js";

/** `isInside` for two paths already known to be in normal form (`isNormalAbsolute`): a string comparison. */
export function isInsideNormal(root: string, candidate: string): boolean {
  return root === "/" || candidate === root || (candidate.startsWith(root) && candidate.charCodeAt(root.length) === 47);
}

/**
 * Whether `candidate` is `root` or below it, lexically (both absolute). Called for every file a
 * search shows: two paths in normal form are compared as strings (`isInsideNormal`); any other
 * pair goes through `path.relative`, which normalizes them first — the same answer.
 */
export function isInside(root: string, candidate: string): boolean {
  if (isNormalAbsolute(root) && isNormalAbsolute(candidate)) return isInsideNormal(root, candidate);
  const rel = path.relative(root, candidate);
  // `..name` is a legal name inside; only a `..` segment leaves.
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}
