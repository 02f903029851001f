/**
 * The decimal text of an event's `seq`, exactly as `String(n)` (and so `JSON.stringify`) writes
 * it, made without putting a new number into V8's number-to-string cache for each one.
 *
 * Why: V8 keeps the string of a number it converts in its number-string cache, a table in the
 * old generation, and a scavenge keeps every young string that table holds. A session's `seq`
 * is a new number every event, so `${seq}` added a string to the cache per event: a streamed
 * turn's scavenges copied and then promoted one string per chunk, garbage the old generation
 * collected later (bench/README.md, "Streaming, round 5: what the scavenges keep"). Written as
 * its hundreds and a two-digit remainder from a fixed table, the cache sees a new number once
 * per hundred events; the rest is a concatenation that dies young.
 *
 * Invariant: for every non-negative safe integer `n`, `decimalText(n) === String(n)`.
 *
 * @module
 */

/** "00" … "99". */
const TWO_DIGITS = Array.from({ length: 100 }, (_, i) => (i < 10 ? `0${i}` : `${i}`));

export function decimalText(n: number): string {
  if (n < 100) return `${n}`;
  const rest = n % 100;
  // `n - rest` is a multiple of 100, so the division is exact for every safe integer.
  return `${(n - rest) / 100}${TWO_DIGITS[rest]}`;
}
