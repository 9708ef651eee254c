/** SQL for the leaderboard: totals per user of one affiliate over an inclusive period. */
import type { Pool, RowDataPacket } from "mysql2/promise";
import type { BucketRange, Source } from "../leaderboard/period-buckets.js";
import { ROLLUPS } from "./rollups.js";

export interface RankedRow {
  readonly userExternalId: string;
  readonly username: string;
  readonly avatarUrl: string | null;
  /** Exact DECIMAL sum as returned by the database, e.g. "15000.50000000". */
  readonly total: string;
}

const ORDER = "ORDER BY t.total DESC, u.username, u.external_id";

interface Piece {
  readonly add: string;
  readonly subtract: string;
}

/** One SELECT per piece of the period; table and column names come only from constants (./rollups.ts). */
const PIECE = Object.fromEntries([
  ["raw", pieces("wagers", "amount", "placed_at")],
  ...ROLLUPS.map((rollup) => [rollup.level, pieces(rollup.table, "total", "bucket")]),
]) as Readonly<Record<Source, Piece>>;

function pieces(table: string, value: string, time: string): Piece {
  const select = (expression: string) =>
    `SELECT user_id, ${expression} AS v FROM ${table} WHERE affiliate_id = ? AND ${time} >= ? AND ${time} < ?`;
  return { add: select(value), subtract: select(`-${value}`) };
}

function toRows(rows: RowDataPacket[]): RankedRow[] {
  return rows.map((row) => ({
    userExternalId: String(row.external_id),
    username: String(row.username),
    avatarUrl: row.avatar_url === null ? null : String(row.avatar_url),
    total: String(row.total),
  }));
}

/**
 * The top `limit` users from the rollups plus raw edges, ordered by total
 * descending, then username and user id in binary (code point) order.
 *
 * Only the leading `limit + 1` totals are joined with users; the extra row
 * shows whether a tie crosses the cut. When it does (rare), a second query
 * fetches every user at or above the cut's total so the username tie-break
 * decides who is in, exactly as a full sort would.
 */
export async function topUsersFromBuckets(
  pool: Pool,
  affiliateId: number,
  ranges: readonly BucketRange[],
  limit: number,
): Promise<RankedRow[]> {
  if (ranges.length === 0) return [];
  const union = ranges.map((r) => (r.sign === 1 ? PIECE[r.source].add : PIECE[r.source].subtract)).join(" UNION ALL ");
  const params = ranges.flatMap((r) => [affiliateId, r.from, r.to]);
  // A user whose pieces cancel out (a subtracted edge held all their wagers) wagered nothing in the period.
  const aggregate = `SELECT user_id, SUM(v) AS total FROM (${union}) x GROUP BY user_id HAVING total > 0`;
  const [rows] = await pool.execute<RowDataPacket[]>(
    `SELECT u.external_id, u.username, u.avatar_url, t.total
       FROM (${aggregate} ORDER BY total DESC LIMIT ?) t
       JOIN users u ON u.id = t.user_id
      ${ORDER}`,
    [...params, String(limit + 1)],
  );
  const leading = toRows(rows);
  if (leading.length <= limit) return leading;
  const cut = leading[limit]?.total ?? "0";
  if (leading[limit - 1]?.total !== cut) return leading.slice(0, limit);
  const [tied] = await pool.execute<RowDataPacket[]>(
    `SELECT u.external_id, u.username, u.avatar_url, t.total
       FROM (${aggregate} AND total >= CAST(? AS DECIMAL(65,8))) t
       JOIN users u ON u.id = t.user_id
      ${ORDER}
      LIMIT ?`,
    [...params, cut, String(limit)],
  );
  return toRows(tied);
}

/**
 * The same answer straight from raw wagers with one GROUP BY: the naive
 * baseline for benchmarks and the reference the property test compares with.
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
      ${ORDER}
      LIMIT ?`,
    [affiliateId, start, end, String(limit)],
  );
  return toRows(rows);
}
