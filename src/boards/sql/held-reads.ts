/**
 * The reads of a board held in memory and kept current from the change feed
 * (src/boards/core/held-boards.ts): the whole board with internal user keys, read from one
 * snapshot, and the totals of just the users a change named, read by primary key per bucket.
 */
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";
import type { WeightedColumn } from "../../ingest/sql/weighted-backfill.js";
import { classifyDatabaseError } from "../../platform/database/database-errors.js";
import type { KeyedRow } from "../../ports/standings.js";
import type { BucketRange } from "../../values/bucket-range.js";
import { type BoardRead, keyedTopUsersFromBuckets, totalsOfListedUsers } from "./leaderboard-queries.js";

/** Users read per statement (the statement's text grows with them). */
const USERS_PER_READ = 1000;

/** Both totals and the profile of the given users over the period (see totalsOfListedUsers), in batches. */
export async function totalsOfUsers(
  pool: Pool | PoolConnection,
  affiliateId: number,
  ranges: readonly BucketRange[],
  userKeys: readonly number[],
  weighted: WeightedColumn,
): Promise<KeyedRow[]> {
  const rows: KeyedRow[] = [];
  for (let at = 0; at < userKeys.length; at += USERS_PER_READ) {
    const users = userKeys.slice(at, at + USERS_PER_READ);
    rows.push(...(await totalsOfListedUsers(pool, affiliateId, ranges, users, weighted)));
  }
  return rows;
}

/**
 * The board with internal keys, its statements inside one read-only transaction with a consistent
 * snapshot (REPEATABLE READ): the board query ranks in one statement (the threshold plan: in up to
 * three) and reads the chosen users' totals in another, and a write between them would otherwise leave
 * out a user that now ranks above a listed one. The connection comes from the pool's own side (on a replica set, the primary; with the
 * primary unreachable, the statements go to the replicas without a transaction).
 */
export async function boardInOneSnapshot(pool: Pool, board: BoardRead): Promise<KeyedRow[]> {
  let connection: PoolConnection;
  try {
    connection = await pool.getConnection();
  } catch (error) {
    if (classifyDatabaseError(error) !== "node_down") throw error;
    // No primary to take a connection from (replicas answer the pool's statements): nothing can commit, so the
    // two statements read the same data without a transaction.
    return keyedTopUsersFromBuckets(pool, board);
  }
  try {
    await connection.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
    await connection.query("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY");
    const rows = await keyedTopUsersFromBuckets(connection, board);
    await connection.query("COMMIT");
    connection.release();
    return rows;
  } catch (error) {
    // A connection left inside a transaction (or broken) never goes back to the pool.
    connection.destroy();
    throw error;
  }
}

/** Internal keys of users by platform id (the unique index on external_id), in batches. */
export async function userKeysOf(
  pool: Pool | PoolConnection,
  externalIds: readonly string[],
): Promise<Map<string, number>> {
  const keys = new Map<string, number>();
  for (let at = 0; at < externalIds.length; at += USERS_PER_READ) {
    const [rows] = await pool.query<RowDataPacket[]>("SELECT id, external_id FROM users WHERE external_id IN (?)", [
      externalIds.slice(at, at + USERS_PER_READ),
    ]);
    for (const row of rows) keys.set(String(row.external_id), Number(row.id));
  }
  return keys;
}
