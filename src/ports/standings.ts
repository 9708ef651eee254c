/** What the leaderboard reads: the ranked totals of one affiliate over a period. */
import type { RankBy } from "../values/weights.js";

export interface RankedRow {
  readonly userExternalId: string;
  readonly username: string;
  readonly avatarUrl: string | null;
  /** Exact decimal sum, e.g. "15000.50000000" (any number of trailing zeros). */
  readonly total: string;
  /** Exact weighted sum (amount × weight_bps / 10000 per wager), e.g. "7500.250000000000". */
  readonly weightedTotal: string;
}

export interface StandingsStore {
  /**
   * The top `limit` users of the affiliate (internal key) with wagers in the inclusive period
   * [start, end] (Unix seconds), counting the wagers recorded for that affiliate: ordered by the
   * plain or weighted total descending, then username and user id in code point order. A user whose
   * wagers in the period sum to 0 is left out.
   */
  topUsers(affiliateId: number, start: number, end: number, limit: number, rankBy: RankBy): Promise<RankedRow[]>;
}
