/**
 * Wager weights (race rules): a casino sends each wager's weight in basis
 * points, 0 to 10000, and a board may rank by the weighted total instead of
 * the plain one. A wager's weighted amount is amount × weight_bps / 10000,
 * exact: amounts have at most 8 fraction digits, so weighted amounts and their
 * sums have at most 12 (the database computes them as DECIMAL; nothing here
 * does arithmetic on money).
 */

/** A wager without a weight counts fully. */
export const FULL_WEIGHT_BPS = 10_000;

/** What a board is ranked by: the plain total wagered, or the weighted total. */
export type RankBy = "wagered" | "weighted";

export const RANK_BY_VALUES: readonly RankBy[] = ["wagered", "weighted"];

export function isRankBy(value: unknown): value is RankBy {
  return value === "wagered" || value === "weighted";
}
