/**
 * SQL that writes users and wagers. Amounts are passed to MySQL as decimal
 * strings and stored in DECIMAL columns; no JavaScript number ever holds one.
 */
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";
import { ensureAffiliate } from "./affiliates.js";

export interface UserProfile {
  readonly id: string;
  readonly affiliateId: string;
  readonly username: string;
  /** Absolute http(s) URL, or "" for none. */
  readonly avatar: string;
}

export interface WagerRecord {
  readonly id: string;
  readonly userId: string;
  /** Decimal string, e.g. "12.5", at most 8 fraction digits. */
  readonly amount: string;
  /** Unix seconds. */
  readonly placedAt: number;
}

/** Creates or updates users; the latest profile wins, including a move to another affiliate. */
export async function upsertUsers(db: Pool | PoolConnection, users: readonly UserProfile[]): Promise<void> {
  const affiliateIds = new Map<string, number>();
  for (const user of users) {
    if (!affiliateIds.has(user.affiliateId))
      affiliateIds.set(user.affiliateId, await ensureAffiliate(db, user.affiliateId));
  }
  if (users.length === 0) return;
  await db.query(
    `INSERT INTO users (external_id, affiliate_id, username, avatar_url, updated_at) VALUES ?
     ON DUPLICATE KEY UPDATE affiliate_id = VALUES(affiliate_id), username = VALUES(username),
       avatar_url = VALUES(avatar_url), updated_at = VALUES(updated_at)`,
    [
      users.map((u) => [
        u.id,
        affiliateIds.get(u.affiliateId),
        u.username,
        u.avatar === "" ? null : u.avatar,
        Math.floor(Date.now() / 1000),
      ]),
    ],
  );
}

/** Rollup tables and the SQL expression of each one's bucket; names come only from here. */
const ROLLUPS = [
  ["wager_hourly", "placed_at - placed_at % 3600"],
  ["wager_daily", "placed_at - placed_at % 86400"],
  ["wager_monthly", "UNIX_TIMESTAMP(DATE_FORMAT(FROM_UNIXTIME(placed_at), '%Y-%m-01'))"],
] as const;

/**
 * Inserts wagers, each attributed to its user's affiliate at this moment, and
 * adds them to the hourly, daily and monthly totals in the same transaction.
 * Returns the external ids of users that do not exist (nothing is written then).
 */
export async function insertWagers(pool: Pool, wagers: readonly WagerRecord[]): Promise<string[]> {
  if (wagers.length === 0) return [];
  const connection = await pool.getConnection();
  try {
    await connection.beginTransaction();
    const unknown = await insertRawWagers(connection, wagers);
    if (unknown.length > 0) {
      await connection.rollback();
      return unknown;
    }
    for (const [table, bucket] of ROLLUPS) {
      await connection.query(
        `INSERT INTO ${table} (affiliate_id, bucket, user_id, total, wagers)
         SELECT affiliate_id, ${bucket} AS b, user_id, SUM(amount), COUNT(*)
           FROM wagers WHERE external_id IN (?)
          GROUP BY affiliate_id, b, user_id
          ORDER BY affiliate_id, b, user_id
         ON DUPLICATE KEY UPDATE total = total + VALUES(total), wagers = wagers + VALUES(wagers)`,
        [wagers.map((w) => w.id)],
      );
    }
    await connection.commit();
    return [];
  } catch (error) {
    await connection.rollback().catch(() => undefined);
    throw error;
  } finally {
    connection.release();
  }
}

async function insertRawWagers(db: PoolConnection, wagers: readonly WagerRecord[]): Promise<string[]> {
  const userIds = [...new Set(wagers.map((w) => w.userId))];
  const [rows] = await db.query<RowDataPacket[]>(
    "SELECT id, external_id, affiliate_id FROM users WHERE external_id IN (?)",
    [userIds],
  );
  const users = new Map(
    rows.map((r) => [String(r.external_id), { id: Number(r.id), affiliateId: Number(r.affiliate_id) }]),
  );
  const unknown = userIds.filter((id) => !users.has(id));
  if (unknown.length > 0) return unknown;
  await db.query("INSERT INTO wagers (external_id, user_id, affiliate_id, amount, placed_at) VALUES ?", [
    wagers.map((w) => {
      const user = users.get(w.userId);
      return [w.id, user?.id, user?.affiliateId, w.amount, w.placedAt];
    }),
  ]);
  return [];
}
