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

/** A row with the user's internal key, which the change feed names changed users by. */
export interface KeyedRow extends RankedRow {
  readonly userKey: number;
}

/**
 * What a board held in memory and kept current from the change feed reads
 * (src/boards/core/held-boards.ts): the board with internal keys, and the totals of named users.
 */
export interface KeyedStandings {
  /**
   * `topUsers` with each user's internal key, read from one snapshot of the data (every row as of
   * one moment), so that the users it leaves out all rank after its last row.
   */
  boardWithKeys(affiliateId: number, start: number, end: number, limit: number, rankBy: RankBy): Promise<KeyedRow[]>;
  /**
   * Both totals and the profile of the given users (internal keys) over the inclusive period, counting
   * the wagers recorded for the affiliate; a user with no such wagers may be absent or have total 0.
   */
  totalsOf(affiliateId: number, start: number, end: number, userKeys: readonly number[]): Promise<KeyedRow[]>;
  /** Internal keys of these users by platform id (an unknown id is absent). */
  userKeys(externalIds: readonly string[]): Promise<ReadonlyMap<string, number>>;
}

export interface StandingsStore {
  /**
   * The top `limit` users of the affiliate (internal key) with wagers in the inclusive period
   * [start, end] (Unix seconds), counting the wagers recorded for that affiliate: ordered by the
   * plain or weighted total descending, then username and user id in code point order. A user whose
   * wagers in the period sum to 0 is left out.
   */
  topUsers(affiliateId: number, start: number, end: number, limit: number, rankBy: RankBy): Promise<RankedRow[]>;
  /** Present when boards can be kept current from the change feed by reading only changed users. */
  readonly keyed?: KeyedStandings;
}
