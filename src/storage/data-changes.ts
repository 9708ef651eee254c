/**
 * The change feed's SQL: the `data_changes` table (migration 4). Every write
 * that can alter a leaderboard adds rows here in its own transaction, so a row
 * is visible exactly when the change is; instances read the rows a few times
 * a second (src/leaderboard/change-feed.ts) and drop only the cached answers a
 * change touches.
 *
 * A row says either "wagers of affiliate A placed between first_at and
 * last_at changed" or "the profile of user U changed" (a new username or
 * avatar, a move), which alters every answer that lists U.
 */
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";

export interface DataChange {
  readonly id: number;
  /** Internal affiliate key of a wager change, or undefined for a profile change. */
  readonly affiliateId: number | undefined;
  readonly firstAt: number;
  readonly lastAt: number;
  /** The platform's user id of a profile change. */
  readonly userExternalId: string | undefined;
}

/**
 * One change row per affiliate of the wagers in `table` (a staging table with affiliate_id and
 * placed_at, or hourly groups with `bucket`). Table and column names are constants of the callers.
 */
export async function noteWagerChanges(
  connection: PoolConnection,
  table: string,
  time: { first: string; last: string } = { first: "placed_at", last: "placed_at" },
) {
  await connection.query(
    `INSERT INTO data_changes (affiliate_id, first_at, last_at, created_at)
     SELECT affiliate_id, MIN(${time.first}), MAX(${time.last}), UNIX_TIMESTAMP() FROM ${table} GROUP BY affiliate_id`,
  );
}

/**
 * One change row per affiliate of the given wagers (internal affiliate key and time), as a
 * multi-row VALUES insert: its row count is known up front, so InnoDB allocates the ids without
 * holding the table's AUTO-INC lock for the statement (an INSERT … SELECT would, and measurably
 * serialises concurrent ingest).
 */
export async function noteWagerTimes(
  connection: PoolConnection,
  wagers: Iterable<{ readonly affiliateId: number; readonly placedAt: number }>,
) {
  const spans = new Map<number, [number, number]>();
  for (const { affiliateId, placedAt } of wagers) {
    const span = spans.get(affiliateId);
    if (span === undefined) spans.set(affiliateId, [placedAt, placedAt]);
    else {
      if (placedAt < span[0]) span[0] = placedAt;
      if (placedAt > span[1]) span[1] = placedAt;
    }
  }
  if (spans.size === 0) return;
  const now = Math.floor(Date.now() / 1000);
  await connection.query("INSERT INTO data_changes (affiliate_id, first_at, last_at, created_at) VALUES ?", [
    [...spans].map(([affiliateId, [first, last]]) => [affiliateId, first, last, now]),
  ]);
}

/** One change row per user whose profile changed. */
export async function noteUserChanges(connection: PoolConnection, userExternalIds: readonly string[]) {
  if (userExternalIds.length === 0) return;
  await connection.query("INSERT INTO data_changes (user_external_id, created_at) VALUES ?", [
    userExternalIds.map((id) => [id, Math.floor(Date.now() / 1000)]),
  ]);
}

/** The highest change id so far (0 when none). */
export async function latestChangeId(pool: Pool): Promise<number> {
  const [rows] = await pool.query<RowDataPacket[]>("SELECT COALESCE(MAX(id), 0) AS id FROM data_changes");
  return Number(rows[0]?.id ?? 0);
}

/** Ids in (from, to] that exist now (used once at start to find ids still uncommitted). */
export async function changeIdsBetween(pool: Pool, from: number, to: number): Promise<number[]> {
  const [rows] = await pool.query<RowDataPacket[]>("SELECT id FROM data_changes WHERE id > ? AND id <= ?", [from, to]);
  return rows.map((r) => Number(r.id));
}

/** Changes after `afterId` and those with the given (missing) ids, in id order, at most `limit` rows. */
export async function readChanges(
  pool: Pool,
  afterId: number,
  missingIds: readonly number[],
  limit: number,
): Promise<DataChange[]> {
  const sql =
    "SELECT id, affiliate_id, first_at, last_at, user_external_id FROM data_changes WHERE id > ?" +
    (missingIds.length > 0 ? " OR id IN (?)" : "") +
    " ORDER BY id LIMIT ?";
  const params: unknown[] = missingIds.length > 0 ? [afterId, missingIds, limit] : [afterId, limit];
  const [rows] = await pool.query<RowDataPacket[]>(sql, params);
  return rows.map((r) => ({
    id: Number(r.id),
    affiliateId: r.affiliate_id === null ? undefined : Number(r.affiliate_id),
    firstAt: r.first_at === null ? 0 : Number(r.first_at),
    lastAt: r.last_at === null ? 0 : Number(r.last_at),
    userExternalId: r.user_external_id === null ? undefined : String(r.user_external_id),
  }));
}

/** Deletes change rows older than `olderThanSeconds` (a bounded batch); returns how many. */
export async function pruneChanges(pool: Pool, olderThanSeconds: number): Promise<number> {
  const [result] = await pool.query("DELETE FROM data_changes WHERE created_at < UNIX_TIMESTAMP() - ? LIMIT 10000", [
    olderThanSeconds,
  ]);
  return Number((result as { affectedRows?: number }).affectedRows ?? 0);
}
