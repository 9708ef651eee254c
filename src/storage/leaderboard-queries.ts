/** SQL for the leaderboard: plain and weighted totals per user of one affiliate over an inclusive period. */
import type { Pool, RowDataPacket } from "mysql2/promise";
import type { RankedRow } from "../ports/standings.js";
import type { BucketRange, Source } from "../values/bucket-range.js";
import type { RankBy } from "../values/weights.js";
import { ROLLUPS, WEIGHTED_AMOUNT_OF_WAGER } from "./rollups.js";

export type { RankedRow };

/** The column a board is ordered by; a constant, never input. */
const RANK_COLUMN: Readonly<Record<RankBy, "total" | "weighted">> = { wagered: "total", weighted: "weighted" };

const order = (rankBy: RankBy) => `ORDER BY t.${RANK_COLUMN[rankBy]} DESC, u.username, u.external_id`;

interface Piece {
  readonly add: string;
  readonly subtract: string;
}

/** One SELECT per piece of the period; table and column names come only from constants (./rollups.ts). */
const PIECE = Object.fromEntries([
  ["raw", pieces("wagers", "amount", WEIGHTED_AMOUNT_OF_WAGER, "placed_at")],
  ...ROLLUPS.map((rollup) => [rollup.level, pieces(rollup.table, "total", "weighted_total", "bucket")]),
]) as Readonly<Record<Source, Piece>>;

function pieces(table: string, plain: string, weighted: string, time: string): Piece {
  const select = (sign: string) =>
    `SELECT user_id, ${sign}${plain} AS v, ${sign}(${weighted}) AS w FROM ${table} WHERE affiliate_id = ? AND ${time} >= ? AND ${time} < ?`;
  return { add: select(""), subtract: select("-") };
}

function toRows(rows: RowDataPacket[]): RankedRow[] {
  return rows.map((row) => ({
    userExternalId: String(row.external_id),
    username: String(row.username),
    avatarUrl: row.avatar_url === null ? null : String(row.avatar_url),
    total: String(row.total),
    weightedTotal: String(row.weighted),
  }));
}

/**
 * The top `limit` users from the rollups plus raw edges, ordered by the plain or the weighted
 * total descending, then username and user id in binary (code point) order. Both totals are
 * summed in the same pass over the same rows, whichever orders the board.
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
  rankBy: RankBy = "wagered",
): Promise<RankedRow[]> {
  if (ranges.length === 0) return [];
  const rank = RANK_COLUMN[rankBy];
  const union = ranges.map((r) => (r.sign === 1 ? PIECE[r.source].add : PIECE[r.source].subtract)).join(" UNION ALL ");
  const params = ranges.flatMap((r) => [affiliateId, r.from, r.to]);
  // A user whose pieces cancel out (a subtracted edge held all their wagers) wagered nothing in the
  // period. A user whose wagers all had weight 0 did wager: listed, with a weighted total of 0.
  const aggregate = `SELECT user_id, SUM(v) AS total, SUM(w) AS weighted FROM (${union}) x GROUP BY user_id HAVING total > 0`;
  const [rows] = await pool.execute<RowDataPacket[]>(
    `SELECT u.external_id, u.username, u.avatar_url, t.total, t.weighted
       FROM (${aggregate} ORDER BY ${rank} DESC LIMIT ?) t
       JOIN users u ON u.id = t.user_id
      ${order(rankBy)}`,
    [...params, String(limit + 1)],
  );
  const leading = toRows(rows);
  if (leading.length <= limit) return leading;
  const value = (row: RankedRow | undefined) => (rankBy === "weighted" ? row?.weightedTotal : row?.total);
  const cut = value(leading[limit]) ?? "0";
  if (value(leading[limit - 1]) !== cut) return leading.slice(0, limit);
  const [tied] = await pool.execute<RowDataPacket[]>(
    `SELECT u.external_id, u.username, u.avatar_url, t.total, t.weighted
       FROM (${aggregate} AND ${rank} >= CAST(? AS DECIMAL(65,12))) t
       JOIN users u ON u.id = t.user_id
      ${order(rankBy)}
      LIMIT ?`,
    [...params, cut, String(limit)],
  );
  return toRows(tied);
}
