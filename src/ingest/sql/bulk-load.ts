/**
 * Bulk loading of wagers for large synthetic data sets (`seed`), with the same
 * result as recording them through the ingest path: the same raw rows and the
 * same hourly, daily, half-month and monthly totals, summed by the database.
 *
 * Each chunk is one transaction: `LOAD DATA LOCAL INFILE … IGNORE` streams the
 * rows from memory (mysql2's infileStreamFactory; no temporary file), then the
 * chunk's new rows are grouped by hour into a temporary in-memory table, and the three
 * rollups are upserted from it (`total = total + VALUES(total)`). A crash loses
 * at most the open chunk, which rolls back whole; re-running skips the rows
 * already there (IGNORE) and adds only what it inserted to the totals.
 *
 * New rows are found as `id > (MAX(id) before the load)` and within the
 * chunk's external id range, so rows written concurrently by ingest are never
 * counted twice. When the server refuses LOAD DATA LOCAL (local_infile=0), the
 * same chunks go in as multi-row INSERT IGNORE statements.
 */
import { Readable } from "node:stream";
import type { Pool, PoolConnection, ResultSetHeader, RowDataPacket } from "mysql2/promise";
import { inTransaction } from "../../platform/database/transactions.js";
import { noteWagerTimes } from "./data-changes.js";
import {
  addIntoRollup,
  ROLLUP_SUMS_OF_ROLLUP,
  ROLLUP_SUMS_OF_WAGERS,
  ROLLUP_VALUE_COLUMNS,
  ROLLUPS,
  upsertAdding,
} from "./rollups.js";

/** One wager row with internal keys: external id, user id, affiliate id, amount text, placed_at, weight_bps. */
export type WagerRow = readonly [string, number, number, string, number, number];

export interface WagerChunk {
  /** The chunk's rows, in external id order; replayable (a retried transaction sends them again). */
  readonly rows: readonly WagerRow[];
  readonly firstExternalId: string;
  readonly lastExternalId: string;
}

export type LoadMethod = "load-data" | "insert";

/** MariaDB ER_LOAD_INFILE_CAPABILITY_DISABLED, MySQL ER_NOT_ALLOWED_COMMAND / ER_CLIENT_LOCAL_FILES_DISABLED. */
const LOCAL_INFILE_REFUSED = new Set([4166, 1148, 3948]);

export const LOCAL_INFILE_FIX =
  "LOAD DATA LOCAL INFILE is disabled on the database server (local_infile=0), so wagers are loaded with " +
  "multi-row INSERTs instead (slower). To enable the fast path run SET GLOBAL local_infile = 1 as an " +
  "administrator, or put local_infile=1 under [mysqld] in the server's configuration and restart it.";

/** Whether the server accepts LOAD DATA LOCAL INFILE (a global setting; it cannot be enabled per session). */
export async function localInfileEnabled(pool: Pool): Promise<boolean> {
  const [rows] = await pool.query<RowDataPacket[]>("SELECT @@GLOBAL.local_infile AS enabled");
  return Number(rows[0]?.enabled) === 1;
}

export function isLocalInfileRefused(error: unknown): boolean {
  const errno = (error as { errno?: unknown } | null)?.errno;
  return typeof errno === "number" && LOCAL_INFILE_REFUSED.has(errno);
}

/** Internal keys of users by external id, fetched in slices. */
export async function userKeys(
  pool: Pool,
  externalIds: readonly string[],
): Promise<Map<string, { id: number; affiliateId: number }>> {
  const keys = new Map<string, { id: number; affiliateId: number }>();
  for (let i = 0; i < externalIds.length; i += 5000) {
    const [rows] = await pool.query<RowDataPacket[]>(
      "SELECT id, external_id, affiliate_id FROM users WHERE external_id IN (?)",
      [externalIds.slice(i, i + 5000)],
    );
    for (const r of rows) keys.set(String(r.external_id), { id: Number(r.id), affiliateId: Number(r.affiliate_id) });
  }
  return keys;
}

const CHUNK_HOURLY = "seed_chunk_hourly";

/** Loads one chunk and adds its new rows to the rollups, in one transaction. Returns the rows inserted. */
export async function loadWagerChunk(pool: Pool, chunk: WagerChunk, method: LoadMethod): Promise<number> {
  if (chunk.rows.length === 0) return 0;
  return inTransaction(pool, async (connection) => {
    // The chunk's hourly groups: a few hundred thousand rows at most, kept in memory.
    await connection.query("SET SESSION max_heap_table_size = ?", [1024 * 1024 * 1024]);
    await connection.query(
      `CREATE TEMPORARY TABLE IF NOT EXISTS ${CHUNK_HOURLY} (
        affiliate_id INT UNSIGNED NOT NULL, bucket INT UNSIGNED NOT NULL, user_id INT UNSIGNED NOT NULL,
        total DECIMAL(30,8) NOT NULL, weight_discount DECIMAL(34,12) NOT NULL, weighted_sum DECIMAL(34,12) NOT NULL,
        wagers INT UNSIGNED NOT NULL, PRIMARY KEY USING BTREE (affiliate_id, bucket, user_id)) ENGINE=MEMORY`,
    );
    await connection.query(`DELETE FROM ${CHUNK_HOURLY}`);
    const [top] = await connection.query<RowDataPacket[]>("SELECT COALESCE(MAX(id), 0) AS id FROM wagers");
    const before = String(top[0]?.id ?? "0");
    const inserted = method === "load-data" ? await loadData(connection, chunk) : await insertRows(connection, chunk);
    if (inserted === 0) return 0;
    const [hourly, ...coarser] = ROLLUPS;
    if (hourly === undefined) throw new Error("no hourly rollup defined");
    await connection.query(
      `INSERT INTO ${CHUNK_HOURLY} (affiliate_id, bucket, user_id, ${ROLLUP_VALUE_COLUMNS})
       SELECT affiliate_id, ${hourly.bucketOf("placed_at")} AS b, user_id, ${ROLLUP_SUMS_OF_WAGERS}
         FROM wagers WHERE id > ? AND external_id BETWEEN ? AND ?
        GROUP BY affiliate_id, b, user_id`,
      [before, chunk.firstExternalId, chunk.lastExternalId],
    );
    await connection.query(
      `INSERT INTO ${hourly.table} (affiliate_id, bucket, user_id, ${ROLLUP_VALUE_COLUMNS})
       SELECT affiliate_id, bucket, user_id, ${ROLLUP_VALUE_COLUMNS} FROM ${CHUNK_HOURLY}
        ORDER BY affiliate_id, bucket, user_id ${upsertAdding(hourly.table)}`,
    );
    for (const rollup of coarser) {
      await connection.query(addIntoRollup(rollup, CHUNK_HOURLY, "bucket", ROLLUP_SUMS_OF_ROLLUP));
    }
    const [spans] = await connection.query<RowDataPacket[]>(
      `SELECT affiliate_id, MIN(bucket) AS first, MAX(bucket) + 3599 AS last FROM ${CHUNK_HOURLY} GROUP BY affiliate_id`,
    );
    await noteWagerTimes(
      connection,
      spans.flatMap((r) => [
        { affiliateId: Number(r.affiliate_id), placedAt: Number(r.first) },
        { affiliateId: Number(r.affiliate_id), placedAt: Number(r.last) },
      ]),
    );
    return inserted;
  });
}

async function loadData(connection: PoolConnection, chunk: WagerChunk): Promise<number> {
  const [result] = await connection.query<ResultSetHeader>({
    sql: `LOAD DATA LOCAL INFILE 'wagers.csv' IGNORE INTO TABLE wagers CHARACTER SET utf8mb4
          FIELDS TERMINATED BY ',' LINES TERMINATED BY '\\n'
          (external_id, user_id, affiliate_id, amount, placed_at, weight_bps)`,
    infileStreamFactory: () => Readable.from(csvPieces(chunk.rows)),
  });
  return result.affectedRows;
}

/** The rows as CSV text in pieces of a few thousand lines. Ids are plain (checked by the caller): no quoting. */
function* csvPieces(rows: readonly WagerRow[]): Generator<Buffer> {
  for (let i = 0; i < rows.length; i += 4096) {
    let piece = "";
    const end = Math.min(rows.length, i + 4096);
    for (let j = i; j < end; j++) {
      const r = rows[j] as WagerRow;
      piece += `${r[0]},${r[1]},${r[2]},${r[3]},${r[4]},${r[5]}\n`;
    }
    yield Buffer.from(piece, "utf8");
  }
}

async function insertRows(connection: PoolConnection, chunk: WagerChunk): Promise<number> {
  let inserted = 0;
  for (let i = 0; i < chunk.rows.length; i += 2000) {
    const [result] = await connection.query<ResultSetHeader>(
      "INSERT IGNORE INTO wagers (external_id, user_id, affiliate_id, amount, placed_at, weight_bps) VALUES ?",
      [chunk.rows.slice(i, i + 2000)],
    );
    inserted += result.affectedRows;
  }
  return inserted;
}
