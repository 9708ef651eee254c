/**
 * The change feed's SQL: the `data_changes` table (migration 4). Every write
 * that can alter a leaderboard adds rows here in its own transaction, so a row
 * is visible exactly when the change is; instances read the rows a few times
 * a second (src/boards/core/change-feed.ts) and drop only the cached answers a
 * change touches.
 *
 * A row says either "wagers of affiliates A, B, … placed in these spans of
 * time changed" (with the users whose wagers changed), "the profile of user U changed" (a new username or avatar,
 * a move), which alters every answer that lists U, or "API key K changed"
 * (created, revoked, rotated, a new limit), which the in-memory key sets reload.
 */
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";
import type { DataChange } from "../../ports/changes.js";

export type { DataChange };

/**
 * One change row for the given wagers (internal affiliate key, time and user key): every affiliate
 * with the span of times it changed and the users whose wagers changed, as text in one row. One
 * small row per transaction keeps the feed cheap for ingest (a batch of 1000 wagers may touch a
 * hundred affiliates), and a VALUES insert lets InnoDB allocate the id without holding the table's
 * AUTO-INC lock for a whole statement.
 *
 * A piece is "affiliate,first,last" followed by ",user" for each changed user (internal keys, in
 * ascending order), so a reader that knows only the first three fields (the version before users
 * were listed, during a rolling deploy) reads the span as before; a piece without users (written by
 * that version, by the bulk loader, or an affiliate with more than MAX_LISTED_USERS users in the
 * batch) tells readers the users are not known, and boards that hold it are computed in full.
 */
export async function noteWagerTimes(
  connection: PoolConnection,
  wagers: Iterable<{ readonly affiliateId: number; readonly placedAt: number; readonly userId?: number }>,
) {
  const text = wagerSpansText(wagers);
  if (text === "") return;
  await connection.query("INSERT INTO data_changes (wager_spans, created_at) VALUES (?, UNIX_TIMESTAMP())", [text]);
}

/** More changed users of one affiliate in one row than this are not listed (the affiliate's boards recompute). */
export const MAX_LISTED_USERS = 5000;

/** The `wager_spans` text of a batch of changed wagers ("" when there are none). */
export function wagerSpansText(
  wagers: Iterable<{ readonly affiliateId: number; readonly placedAt: number; readonly userId?: number }>,
): string {
  const spans = new Map<number, { first: number; last: number; users: Set<number> | undefined }>();
  for (const { affiliateId, placedAt, userId } of wagers) {
    let span = spans.get(affiliateId);
    if (span === undefined) {
      span = { first: placedAt, last: placedAt, users: new Set() };
      spans.set(affiliateId, span);
    }
    if (placedAt < span.first) span.first = placedAt;
    if (placedAt > span.last) span.last = placedAt;
    if (userId === undefined) span.users = undefined;
    else span.users?.add(userId);
  }
  return [...spans]
    .map(([affiliateId, { first, last, users }]) => {
      const listed = users === undefined || users.size > MAX_LISTED_USERS ? [] : [...users].sort((a, b) => a - b);
      return [affiliateId, first, last, ...listed].join(",");
    })
    .join(";");
}

/** The spans of a `wager_spans` text, with their users when listed; malformed pieces are skipped. */
export function parseWagerSpans(
  text: string,
): { affiliateId: number; firstAt: number; lastAt: number; userIds?: number[] }[] {
  const spans: { affiliateId: number; firstAt: number; lastAt: number; userIds?: number[] }[] = [];
  for (const piece of text.split(";")) {
    const [affiliate, first, last, ...users] = piece.split(",").map(Number);
    if (!Number.isInteger(affiliate) || !Number.isInteger(first) || !Number.isInteger(last)) continue;
    const span = { affiliateId: affiliate as number, firstAt: first as number, lastAt: last as number };
    // Users are listed only whole: one malformed key and the piece counts as not listing them.
    spans.push(users.length > 0 && users.every(Number.isInteger) ? { ...span, userIds: users } : span);
  }
  return spans;
}

/** One change row per user whose profile changed. */
export async function noteUserChanges(connection: PoolConnection, userExternalIds: readonly string[]) {
  if (userExternalIds.length === 0) return;
  await connection.query("INSERT INTO data_changes (user_external_id, created_at) VALUES ?", [
    userExternalIds.map((id) => [id, Math.floor(Date.now() / 1000)]),
  ]);
}

/** One change row per API key that changed, in the transaction that changed it. */
export async function noteKeyChanges(connection: PoolConnection, keyIds: readonly string[]) {
  if (keyIds.length === 0) return;
  await connection.query("INSERT INTO data_changes (api_key_id, created_at) VALUES ?", [
    keyIds.map((id) => [id, Math.floor(Date.now() / 1000)]),
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

/**
 * Changes after `afterId` and those with the given (missing) ids, in id order, from at most
 * `limit` rows; a row with several affiliates gives one change per affiliate, all with its id.
 */
export async function readChanges(
  pool: Pool,
  afterId: number,
  missingIds: readonly number[],
  limit: number,
): Promise<{ rows: number; changes: DataChange[] }> {
  const sql =
    "SELECT id, wager_spans, user_external_id, api_key_id FROM data_changes WHERE id > ?" +
    (missingIds.length > 0 ? " OR id IN (?)" : "") +
    " ORDER BY id LIMIT ?";
  const params: unknown[] = missingIds.length > 0 ? [afterId, missingIds, limit] : [afterId, limit];
  const [rows] = await pool.query<RowDataPacket[]>(sql, params);
  const changes: DataChange[] = [];
  for (const r of rows) {
    const id = Number(r.id);
    if (r.user_external_id !== null) {
      changes.push({ id, affiliateId: undefined, firstAt: 0, lastAt: 0, userExternalId: String(r.user_external_id) });
    }
    if (r.api_key_id !== null && r.api_key_id !== undefined) {
      changes.push({
        id,
        affiliateId: undefined,
        firstAt: 0,
        lastAt: 0,
        userExternalId: undefined,
        apiKeyId: String(r.api_key_id),
      });
    }
    if (r.wager_spans !== null) {
      for (const span of parseWagerSpans(String(r.wager_spans))) {
        changes.push({ id, ...span, userExternalId: undefined });
      }
    }
  }
  return { rows: rows.length, changes };
}

/** Deletes change rows older than `olderThanSeconds` (a bounded batch); returns how many. */
export async function pruneChanges(pool: Pool, olderThanSeconds: number): Promise<number> {
  const [result] = await pool.query("DELETE FROM data_changes WHERE created_at < UNIX_TIMESTAMP() - ? LIMIT 10000", [
    olderThanSeconds,
  ]);
  return Number((result as { affectedRows?: number }).affectedRows ?? 0);
}
