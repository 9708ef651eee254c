/**
 * The answer to the one question: who are the top wagering users of this
 * affiliate in this period.
 */
import type { Pool } from "mysql2/promise";
import { unavailable } from "../errors.js";
import { topUsersFromRawWagers } from "../storage/leaderboard-queries.js";
import { canonicalDecimal } from "./decimal.js";
import type { PeriodQuery } from "./period-request.js";

export interface RankedUser {
  readonly rank: number;
  readonly userId: string;
  readonly username: string;
  /** Absolute URL; the configured default when the user has none. */
  readonly avatar: string;
  /** Exact canonical decimal string, e.g. "15000.5". */
  readonly totalWagered: string;
}

export interface LeaderboardOptions {
  readonly pool: Pool;
  readonly defaultAvatarUrl: string;
  readonly now?: () => number;
}

export class Leaderboard {
  private readonly now: () => number;

  constructor(private readonly options: LeaderboardOptions) {
    this.now = options.now ?? (() => Math.floor(Date.now() / 1000));
  }

  async topWagersForPeriod(affiliateId: number, query: PeriodQuery): Promise<RankedUser[]> {
    // A period that has not started yet has no wagers by definition (ingest
    // accepts wagers a few minutes ahead of the clock; they must not show early).
    if (query.start > this.now()) return [];
    let rows: Awaited<ReturnType<typeof topUsersFromRawWagers>>;
    try {
      rows = await topUsersFromRawWagers(this.options.pool, affiliateId, query.start, query.end, query.numUsers);
    } catch (error) {
      throw unavailable(error);
    }
    return rows.map((row, index) => ({
      rank: index + 1,
      userId: row.userExternalId,
      username: row.username,
      avatar: row.avatarUrl === null || row.avatarUrl === "" ? this.options.defaultAvatarUrl : row.avatarUrl,
      totalWagered: canonicalDecimal(row.total),
    }));
  }
}
