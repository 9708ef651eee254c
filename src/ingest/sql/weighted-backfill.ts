/**
 * Migration 12's steps: the weighted total stored beside the plain one (`weighted_sum` on every
 * rollup), kept exact by every writer of any version, and filled on existing rows in bounded
 * batches. Boards read it once migration 12 is recorded (../../boards/sql/leaderboard-queries.ts); until then
 * they read the virtual `weighted_total`, so answers are exact before, during and after the backfill.
 *
 * Why every value is exact while the previous version still writes (a rolling deploy):
 * - this version's writers write `weighted_sum` themselves (./rollups.ts), adding to it as to `total`;
 * - a row inserted by the previous version (which names only total, weight_discount and wagers) gets
 *   the column's default, the expression `total - weight_discount`;
 * - a row updated by the previous version (its upserts and voids change total and weight_discount)
 *   gets `weighted_sum = total - weight_discount` from a BEFORE UPDATE trigger;
 * - rows written before the column existed are NULL until the backfill sets them; the backfill
 *   runs after the trigger exists and also repairs a value a writer of the previous version left
 *   stale between the column's creation and the trigger's.
 * The trigger is for the transition: once no instance older than this version can write, a later
 * migration can drop it (this version's writers keep the value exact themselves).
 *
 * The backfill walks each table in primary-key order, `BACKFILL_BATCH_ROWS` rows per transaction at
 * READ COMMITTED (row locks only on the batch's rows, no gap locks, so ingest inserting new rows
 * never waits for it), and records where it got to in `schema_backfill_progress` in the same
 * transaction: a crash loses at most the batch in flight, and the next `migrate` resumes there.
 */

import type { Pool, PoolConnection, ResultSetHeader, RowDataPacket } from "mysql2/promise";
import { classifyDatabaseError } from "../../platform/database/database-errors.js";
import { migrationRecordedReader } from "../../platform/database/schema-record.js";
import type { MigrationContext } from "../../platform/database/schema-steps.js";
import { ROLLUPS, type RollupTable } from "./rollups.js";

/** The column of a rollup row's weighted total: stored (migration 12 recorded) or virtual (before). */
export type WeightedColumn = "weighted_sum" | "weighted_total";

/** The migration whose record says that every `weighted_sum` is set (../../schema/schema-migrations.ts). */
export const WEIGHTED_SUM_MIGRATION = 12;

/** How often a reader asks again whether migration 12 is recorded, while it is not. */
const RECHECK_MS = 5_000;

/**
 * The weighted column boards read from this pool: the virtual `weighted_total` until migration 12 is
 * recorded (its backfill done), then the stored `weighted_sum` for good. Asked of the database at most
 * once every 5 s while the answer is no; an error (no schema yet) counts as no.
 */
export function weightedColumnReader(pool: Pool): () => Promise<WeightedColumn> {
  const recorded = migrationRecordedReader(pool, WEIGHTED_SUM_MIGRATION, RECHECK_MS);
  return async () => ((await recorded()) ? "weighted_sum" : "weighted_total");
}

/** Rows per backfill transaction: a few tens of milliseconds of row locks on this machine. */
export const BACKFILL_BATCH_ROWS = 5_000;

/** How often the backfill reports progress to the operator. */
const PROGRESS_INTERVAL_MS = 10_000;

const JOB = "weighted_sum";

/** A primary key of a rollup row: where a batch ends and the next starts after. */
interface RowKey {
  readonly affiliateId: number;
  readonly bucket: number;
  readonly userId: number;
}

export interface BackfillOptions {
  /** Rows per batch; default BACKFILL_BATCH_ROWS. */
  readonly batchRows?: number;
  /** Called before each batch (tests stop the backfill here to play a crash). */
  readonly beforeBatch?: (table: RollupTable, batch: number) => void | Promise<void>;
}

/** The step that sets every NULL (or stale) `weighted_sum` of the rollups; resumable. */
export function backfillWeightedSums(options: BackfillOptions = {}) {
  return async (context: MigrationContext): Promise<void> => {
    await context.connection.query(
      `CREATE TABLE IF NOT EXISTS schema_backfill_progress (
        name VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
        after_affiliate_id INT UNSIGNED NULL,
        after_bucket INT UNSIGNED NULL,
        after_user_id INT UNSIGNED NULL,
        rows_done BIGINT UNSIGNED NOT NULL DEFAULT 0,
        done_at INT UNSIGNED NULL,
        updated_at INT UNSIGNED NOT NULL
      ) ENGINE=InnoDB`,
    );
    await context.connection.query("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
    try {
      for (const { table } of ROLLUPS) await backfillTable(context, table, options);
    } finally {
      await context.connection.query("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ");
    }
  };
}

/** The default for rows inserted by writers that do not name the column (the previous version). */
export function weightedSumDefault(table: RollupTable) {
  return async (context: MigrationContext): Promise<void> => {
    await context.connection.query(
      `ALTER TABLE ${table} ALTER COLUMN weighted_sum SET DEFAULT (total - weight_discount), ALGORITHM=INSTANT`,
    );
  };
}

/** MariaDB/MySQL: a trigger of that name exists already (a concurrent or earlier run made it). */
const ER_TRG_ALREADY_EXISTS = 1359;

/**
 * The trigger that keeps the column exact on rows updated by writers that do not name it. Creating
 * it takes the table's metadata lock for a moment (it waits for transactions on the table to end).
 * With binary logging on, the migrating account needs SUPER or log_bin_trust_function_creators = 1.
 */
export function weightedSumTrigger(table: RollupTable) {
  const name = `${table}_weighted_sum`;
  return async (context: MigrationContext): Promise<void> => {
    const [found] = await context.connection.query<RowDataPacket[]>(
      "SELECT 1 FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND TRIGGER_NAME = ?",
      [name],
    );
    if (found.length > 0) return;
    try {
      await context.connection.query(
        `CREATE TRIGGER ${name} BEFORE UPDATE ON ${table} FOR EACH ROW
          SET NEW.weighted_sum = NEW.total - NEW.weight_discount`,
      );
    } catch (error) {
      if ((error as { errno?: unknown }).errno !== ER_TRG_ALREADY_EXISTS) throw error;
    }
  };
}

/** Rows strictly after `key` in primary-key order (expanded, so that MariaDB reads it as a range). */
function after(key: RowKey | null): { sql: string; params: number[] } {
  if (key === null) return { sql: "TRUE", params: [] };
  return {
    sql: "(affiliate_id > ? OR (affiliate_id = ? AND (bucket > ? OR (bucket = ? AND user_id > ?))))",
    params: [key.affiliateId, key.affiliateId, key.bucket, key.bucket, key.userId],
  };
}

/** Rows at or before `key` in primary-key order; everything when `key` is null (the last batch). */
function atOrBefore(key: RowKey | null): { sql: string; params: number[] } {
  if (key === null) return { sql: "TRUE", params: [] };
  return {
    sql: "(affiliate_id < ? OR (affiliate_id = ? AND (bucket < ? OR (bucket = ? AND user_id <= ?))))",
    params: [key.affiliateId, key.affiliateId, key.bucket, key.bucket, key.userId],
  };
}

interface Checkpoint {
  readonly after: RowKey | null;
  readonly rowsDone: number;
  readonly done: boolean;
}

async function readCheckpoint(connection: PoolConnection, name: string): Promise<Checkpoint> {
  await connection.query(
    "INSERT IGNORE INTO schema_backfill_progress (name, updated_at) VALUES (?, UNIX_TIMESTAMP())",
    [name],
  );
  const [rows] = await connection.query<RowDataPacket[]>(
    "SELECT after_affiliate_id, after_bucket, after_user_id, rows_done, done_at FROM schema_backfill_progress WHERE name = ?",
    [name],
  );
  const row = rows[0];
  const after =
    row?.after_affiliate_id == null
      ? null
      : {
          affiliateId: Number(row.after_affiliate_id),
          bucket: Number(row.after_bucket),
          userId: Number(row.after_user_id),
        };
  return { after, rowsDone: Number(row?.rows_done ?? 0), done: row?.done_at != null };
}

/** The key of the batch's last row, or null when fewer than `rows` rows remain (the last batch). */
async function batchEnd(
  connection: PoolConnection,
  table: RollupTable,
  from: RowKey | null,
  rows: number,
): Promise<RowKey | null> {
  const start = after(from);
  const [found] = await connection.query<RowDataPacket[]>(
    `SELECT affiliate_id, bucket, user_id FROM ${table} WHERE ${start.sql}
      ORDER BY affiliate_id, bucket, user_id LIMIT 1 OFFSET ?`,
    [...start.params, rows - 1],
  );
  const row = found[0];
  if (row === undefined) return null;
  return { affiliateId: Number(row.affiliate_id), bucket: Number(row.bucket), userId: Number(row.user_id) };
}

/** One batch and its checkpoint, in one transaction. Returns the rows it set. */
async function runBatch(
  connection: PoolConnection,
  table: RollupTable,
  name: string,
  from: RowKey | null,
  to: RowKey | null,
): Promise<number> {
  const start = after(from);
  const end = atOrBefore(to);
  await connection.beginTransaction();
  try {
    const [result] = await connection.query<ResultSetHeader>(
      `UPDATE ${table} SET weighted_sum = total - weight_discount
        WHERE ${start.sql} AND ${end.sql} AND (weighted_sum IS NULL OR weighted_sum <> total - weight_discount)`,
      [...start.params, ...end.params],
    );
    await connection.query(
      `UPDATE schema_backfill_progress
          SET after_affiliate_id = ?, after_bucket = ?, after_user_id = ?, rows_done = rows_done + ?,
              done_at = IF(?, UNIX_TIMESTAMP(), NULL), updated_at = UNIX_TIMESTAMP()
        WHERE name = ?`,
      [to?.affiliateId ?? null, to?.bucket ?? null, to?.userId ?? null, result.affectedRows, to === null, name],
    );
    await connection.commit();
    return result.affectedRows;
  } catch (error) {
    await connection.rollback().catch(() => undefined);
    throw error;
  }
}

/** Attempts of one batch that loses a deadlock or a lock wait to ingest before the backfill gives up. */
const BATCH_ATTEMPTS = 10;

/** runBatch, again after a deadlock or lock wait timeout (the batch is rolled back whole, so it is simply redone). */
async function runBatchRetrying(...args: Parameters<typeof runBatch>): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await runBatch(...args);
    } catch (error) {
      if (attempt >= BATCH_ATTEMPTS || classifyDatabaseError(error) !== "retry") throw error;
      await new Promise((resolve) => setTimeout(resolve, 20 * attempt));
    }
  }
}

/** Backfills one table from its checkpoint to its end, reporting progress every few seconds. */
async function backfillTable(context: MigrationContext, table: RollupTable, options: BackfillOptions): Promise<void> {
  const { connection } = context;
  const name = `${JOB}:${table}`;
  let checkpoint = await readCheckpoint(connection, name);
  if (checkpoint.done) return;
  const [size] = await connection.query<RowDataPacket[]>(
    "SELECT TABLE_ROWS AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
    [table],
  );
  const progress = progressLine(context, table, Number(size[0]?.n ?? 0), checkpoint.after !== null);
  const batchRows = options.batchRows ?? BACKFILL_BATCH_ROWS;
  let scanned = 0;
  for (let batch = 1; ; batch++) {
    await options.beforeBatch?.(table, batch);
    const to = await batchEnd(connection, table, checkpoint.after, batchRows);
    const set = await runBatchRetrying(connection, table, name, checkpoint.after, to);
    scanned += to === null ? 0 : batchRows;
    checkpoint = { after: to, rowsDone: checkpoint.rowsDone + set, done: to === null };
    if (to === null) break;
    progress.tick(scanned, checkpoint.rowsDone);
  }
  progress.finish(checkpoint.rowsDone);
}

/** Below this many rows (estimated) a backfill that is not resumed says nothing unless it takes long. */
const QUIET_BELOW_ROWS = 100_000;

/**
 * Lines like "weighted_sum backfill of wager_hourly: 1,200,000 of about 30,000,000 rows read (4 %), …":
 * at the start (large tables and resumed ones), every 10 s, and at the end if anything was said.
 */
function progressLine(context: MigrationContext, table: RollupTable, estimate: number, resumed: boolean) {
  const started = Date.now();
  let last = started;
  let said = false;
  const n = (value: number) => Math.round(value).toLocaleString("en-US");
  const what = `weighted_sum backfill of ${table}`;
  const say = (line: string) => {
    said = true;
    context.progress(`${what}: ${line}`);
  };
  if (resumed || estimate >= QUIET_BELOW_ROWS) say(`${resumed ? "resuming" : "starting"} (about ${n(estimate)} rows)`);
  return {
    tick(scanned: number, set: number): void {
      const now = Date.now();
      if (now - last < PROGRESS_INTERVAL_MS) return;
      last = now;
      const rate = scanned / ((now - started) / 1000);
      const share = estimate > 0 ? ` (${Math.min(100, Math.round((100 * scanned) / estimate))} %)` : "";
      say(`${n(scanned)} of about ${n(estimate)} rows read${share}, ${n(set)} set, ${n(rate)} rows/s`);
    },
    finish(set: number): void {
      if (said) say(`done in ${((Date.now() - started) / 1000).toFixed(1)} s, ${n(set)} rows set in all`);
    },
  };
}
