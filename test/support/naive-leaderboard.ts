/**
 * The leaderboard straight from raw wagers with one GROUP BY (the weight applied to each wager):
 * the naive baseline for benchmarks and the reference the property test compares with. It lives
 * with the tests because the service never runs it.
 */
import type { Pool, RowDataPacket } from "mysql2/promise";
import type { RankedRow } from "../../src/boards/sql/leaderboard-queries.js";
import { WEIGHTED_AMOUNT_OF_WAGER } from "../../src/ingest/sql/rollups.js";
import type { RankBy } from "../../src/values/weights.js";

/** Ordered by the ranked total descending, then username and user id in binary (code point) order. */
const ORDER: Readonly<Record<RankBy, string>> = {
  wagered: "ORDER BY t.total DESC, u.username, u.external_id",
  weighted: "ORDER BY t.weighted DESC, u.username, u.external_id",
};

export async function topUsersFromRawWagers(
  pool: Pool,
  affiliateId: number,
  start: number,
  end: number,
  limit: number,
  rankBy: RankBy = "wagered",
): Promise<RankedRow[]> {
  const [rows] = await pool.execute<RowDataPacket[]>(
    `SELECT u.external_id, u.username, u.avatar_url, t.total, t.weighted
       FROM (SELECT user_id, SUM(amount) AS total, SUM(${WEIGHTED_AMOUNT_OF_WAGER}) AS weighted
               FROM wagers
              WHERE affiliate_id = ? AND placed_at BETWEEN ? AND ?
              GROUP BY user_id) t
       JOIN users u ON u.id = t.user_id
      ${ORDER[rankBy]}
      LIMIT ?`,
    [affiliateId, start, end, String(limit)],
  );
  return rows.map((row) => ({
    userExternalId: String(row.external_id),
    username: String(row.username),
    avatarUrl: row.avatar_url === null ? null : String(row.avatar_url),
    total: String(row.total),
    weightedTotal: String(row.weighted),
  }));
}
