/** SQL for the leaderboard: totals per user of one affiliate over an inclusive period. */
import type { Pool, RowDataPacket } from "mysql2/promise";

export interface RankedRow {
  readonly userExternalId: string;
  readonly username: string;
  readonly avatarUrl: string | null;
  /** Exact DECIMAL sum as returned by the database, e.g. "15000.50000000". */
  readonly total: string;
}

/**
 * The top `limit` users by total wagered with placed_at in [start, end],
 * ordered by total descending, then username and user id in binary (code point)
 * order. The straightforward aggregation over raw wagers through the covering
 * index (affiliate_id, placed_at, user_id, amount).
 */
export async function topUsersFromRawWagers(
  pool: Pool,
  affiliateId: number,
  start: number,
  end: number,
  limit: number,
): Promise<RankedRow[]> {
  const [rows] = await pool.execute<RowDataPacket[]>(
    `SELECT u.external_id, u.username, u.avatar_url, t.total
       FROM (SELECT user_id, SUM(amount) AS total
               FROM wagers
              WHERE affiliate_id = ? AND placed_at BETWEEN ? AND ?
              GROUP BY user_id) t
       JOIN users u ON u.id = t.user_id
      ORDER BY t.total DESC, u.username, u.external_id
      LIMIT ?`,
    [affiliateId, start, end, String(limit)],
  );
  return rows.map((row) => ({
    userExternalId: String(row.external_id),
    username: String(row.username),
    avatarUrl: row.avatar_url === null ? null : String(row.avatar_url),
    total: String(row.total),
  }));
}
