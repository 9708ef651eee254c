/** SQL for affiliates: the platform's opaque affiliate ids mapped to compact internal keys. */
import type { Pool, PoolConnection, ResultSetHeader, RowDataPacket } from "mysql2/promise";
import { byCodePoint } from "../../platform/database/lock-order.js";
import { DEFAULT_RETRY_POLICY, inTransaction, type RetryPolicy } from "../../platform/database/transactions.js";

/** Internal keys of the given affiliates, creating the missing ones. */
export async function ensureAffiliates(
  connection: Pool | PoolConnection,
  externalIds: readonly string[],
): Promise<Map<string, number>> {
  const select = async (ids: readonly string[]) => {
    const [rows] = await connection.query<RowDataPacket[]>(
      "SELECT id, external_id FROM affiliates WHERE external_id IN (?)",
      [ids],
    );
    return rows.map((r) => [String(r.external_id), Number(r.id)] as const);
  };
  const found = new Map(await select(externalIds));
  const missing = externalIds.filter((id) => !found.has(id)).sort(byCodePoint);
  if (missing.length > 0) {
    await connection.query("INSERT IGNORE INTO affiliates (external_id, created_at) VALUES ?", [
      missing.map((id) => [id, Math.floor(Date.now() / 1000)]),
    ]);
    // A locking read sees rows another transaction committed after our read view was taken.
    const [rows] = await connection.query<RowDataPacket[]>(
      "SELECT id, external_id FROM affiliates WHERE external_id IN (?) LOCK IN SHARE MODE",
      [missing],
    );
    for (const r of rows) found.set(String(r.external_id), Number(r.id));
  }
  return found;
}

/**
 * Retries of a capped create: many creates of one affiliate at once all write its row, and on Galera every commit
 * makes the others' conflict at certification, so they are retried more often than other writes.
 */
const CAPPED_CREATE_RETRY: RetryPolicy = { ...DEFAULT_RETRY_POLICY, maxAttempts: 30, maxDelayMs: 400 };

/**
 * Runs `insert` in a transaction unless the affiliate already holds `cap` of what `held` counts (then
 * "cap-reached"; an undefined cap is no cap). Counted once before any write (a refusal needs no lock: what it
 * counts was committed), then again once the affiliate's row is held by a write (migration 20's counter): that
 * write waits for any other capped create of the affiliate to commit on one server, and makes two on different
 * Galera nodes conflict at certification (the loser is run again and then counts the winner's row; a locking read
 * alone would not do, Galera certifies writes only). Lock order: the affiliate's row, then what it owns.
 */
export async function insertUnderCap<T>(
  pool: Pool,
  affiliateId: number,
  cap: number | undefined,
  held: (connection: PoolConnection) => Promise<number>,
  insert: (connection: PoolConnection) => Promise<T>,
): Promise<T | "cap-reached"> {
  return inTransaction(
    pool,
    async (connection) => {
      if (cap !== undefined && (await held(connection)) >= cap) return "cap-reached";
      const [result] = await connection.query<ResultSetHeader>(
        "UPDATE affiliates SET capped_creates = capped_creates + 1 WHERE id = ?",
        [affiliateId],
      );
      if (result.affectedRows !== 1) throw new Error(`no affiliate has the internal key ${affiliateId}`);
      if (cap !== undefined && (await held(connection)) >= cap) return "cap-reached";
      return insert(connection);
    },
    CAPPED_CREATE_RETRY,
  );
}

/** Returns the internal key of an affiliate, creating the row on first sight. */
export async function ensureAffiliate(db: Pool | PoolConnection, externalId: string): Promise<number> {
  const id = (await ensureAffiliates(db, [externalId])).get(externalId);
  if (id === undefined) throw new Error(`affiliate ${externalId} could not be created`);
  return id;
}

/** How many users the affiliate has (0 when it is unknown). */
export async function usersOfAffiliate(db: Pool | PoolConnection, externalId: string): Promise<number> {
  const [rows] = await db.query<RowDataPacket[]>(
    "SELECT COUNT(*) AS n FROM users u JOIN affiliates a ON a.id = u.affiliate_id WHERE a.external_id = ?",
    [externalId],
  );
  return Number(rows[0]?.n ?? 0);
}

/** The platform's id of the affiliate with this internal key (signed boards name it); throws for an unknown key. */
export async function affiliateExternalIdOf(db: Pool | PoolConnection, id: number): Promise<string> {
  const [rows] = await db.query<RowDataPacket[]>("SELECT external_id FROM affiliates WHERE id = ?", [id]);
  const row = rows[0];
  if (row === undefined) throw new Error(`no affiliate has the internal key ${id}`);
  return Buffer.isBuffer(row.external_id) ? row.external_id.toString("utf8") : String(row.external_id);
}
