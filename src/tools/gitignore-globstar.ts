/**
 * `.gitignore` text with each run of `**` segments (`a/**\/**\/b`, `**\/**\/x`, `a/**\/**`)
 * written as one `**`: the same rule for git (each `**` segment matches zero or more folders,
 * so two in a row match what one does), but not for the `ignore` package's regular expression,
 * where every `**` is a `(?:\/[^\/]+)*` of its own and a path of d folders can be split between
 * k of them in about d^(k-1) ways, each tried by V8's backtracking before a non-match: a
 * `.gitignore` line of a dozen `**` in a repository with folders 25 deep holds the main thread,
 * and so every session of the bridge, for hours (git itself takes minutes on it).
 *
 * @module
 */

/** A run of two or more `**` segments, each bounded by `/` or the line's start (after a `!`) or end. */
const GLOBSTAR_RUN = /(^!?|\/)\*\*(?:\/\*\*)+(?=\/|$)/gm;

export function collapseGlobstars(text: string): string {
  return text.includes("**/**") ? text.replace(GLOBSTAR_RUN, "$1**") : text;
}
