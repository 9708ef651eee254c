/** The one order in which every writer locks rows by platform id (deadlocks stay rare). */

/** Binary (code point) order, as the utf8mb4_bin index orders ids; every writer locks keys in this order. */
export function byCodePoint(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}
