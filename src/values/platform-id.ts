/**
 * A platform's opaque ids (user, affiliate, wager, key and endpoint ids as the casino platform sends them): any
 * text of 1 to 64 code points, compared exactly (stored as their UTF-8 bytes).
 */

export const MAX_ID_LENGTH = 64;

/** A lone UTF-16 surrogate: text that cannot be stored as UTF-8 without changing it. */
export const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** The text's length in code points (what a column's character limit counts). */
export function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) n += 1;
  return n;
}

/** Problems of an id, by its field name. */
export function idProblems(field: string, value: string): string[] {
  if (value === "") return [`${field} is required`];
  if (LONE_SURROGATE.test(value)) return [`${field} must be valid Unicode text`];
  if (codePoints(value) > MAX_ID_LENGTH) return [`${field} must be at most ${MAX_ID_LENGTH} characters`];
  return [];
}
