/**
 * Migration steps that look at the schema before they change it, so a step
 * that already ran (a migration interrupted after its DDL committed, or run by
 * a second instance that took over an expired lease) is skipped instead of
 * failing on a duplicate column or index. Table, column and index names and
 * definitions are constants of the migrations (../../schema/schema-migrations.ts and the bodies it lists), never input.
 */
import type { PoolConnection, RowDataPacket } from "mysql2/promise";

/** What a migration step written in code gets: its connection, and a line for the operator on long work. */
export interface MigrationContext {
  readonly connection: PoolConnection;
  readonly progress: (text: string) => void;
}

/** One step of a migration: a statement, or code for a step that must check the schema first. */
export type MigrationStep = string | ((context: MigrationContext) => Promise<void>);

/** MariaDB/MySQL: duplicate column name, duplicate key name, can't drop (no such column or key). */
const ER_DUP_FIELDNAME = 1060;
const ER_DUP_KEYNAME = 1061;
const ER_CANT_DROP_FIELD_OR_KEY = 1091;

/** How often a long step reports that it is still running. */
const PROGRESS_INTERVAL_MS = 15_000;

async function columnNames(context: MigrationContext, table: string): Promise<Set<string>> {
  const [rows] = await context.connection.query<RowDataPacket[]>(
    "SELECT COLUMN_NAME AS name FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
    [table],
  );
  return new Set(rows.map((r) => String(r.name).toLowerCase()));
}

async function hasIndex(context: MigrationContext, table: string, index: string): Promise<boolean> {
  const [rows] = await context.connection.query<RowDataPacket[]>(
    `SELECT 1 FROM information_schema.STATISTICS
      WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME = ? LIMIT 1`,
    [table, index],
  );
  return rows.length > 0;
}

/** Runs `sql`, treating the given error numbers as "already done" (a concurrent or earlier run did it). */
async function tolerating(context: MigrationContext, sql: string, errnos: readonly number[]): Promise<void> {
  try {
    await context.connection.query(sql);
  } catch (error) {
    const errno = (error as { errno?: unknown }).errno;
    if (typeof errno !== "number" || !errnos.includes(errno)) throw error;
  }
}

/**
 * Adds the columns a table lacks, in this order, each by a metadata-only ALTER (ALGORITHM=INSTANT:
 * the server refuses rather than copy the table; a virtual column cannot share its ALTER).
 * `columns`: name → definition.
 */
export function addColumnsIfMissing(table: string, columns: Readonly<Record<string, string>>) {
  return async (context: MigrationContext): Promise<void> => {
    const present = await columnNames(context, table);
    for (const [name, definition] of Object.entries(columns)) {
      if (present.has(name)) continue;
      await tolerating(context, `ALTER TABLE ${table} ADD COLUMN ${name} ${definition}, ALGORITHM=INSTANT`, [
        ER_DUP_FIELDNAME,
      ]);
    }
  };
}

/**
 * Builds an index (`unique`: a unique one) online (ALGORITHM=INPLACE, LOCK=NONE: writes and reads go on meanwhile) unless it
 * exists. InnoDB reports no progress for such a build, so while it runs a line says every few
 * seconds how long it has taken and how many rows the table holds (nothing on a small table).
 */
export function addIndexIfMissing(table: string, index: string, columns: string, unique = false) {
  return async (context: MigrationContext): Promise<void> => {
    if (await hasIndex(context, table, index)) return;
    const [size] = await context.connection.query<RowDataPacket[]>(
      "SELECT TABLE_ROWS AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
      [table],
    );
    const what = `building index ${index} on ${table} (about ${Number(size[0]?.n ?? 0).toLocaleString("en-US")} rows, online)`;
    const started = Date.now();
    const seconds = () => Math.round((Date.now() - started) / 1000);
    let reported = false;
    const ticker = setInterval(() => {
      reported = true;
      context.progress(`${what}: ${seconds()} s so far`);
    }, PROGRESS_INTERVAL_MS);
    try {
      const kind = unique ? "UNIQUE INDEX" : "INDEX";
      await tolerating(
        context,
        `ALTER TABLE ${table} ADD ${kind} ${index} (${columns}), ALGORITHM=INPLACE, LOCK=NONE`,
        [ER_DUP_KEYNAME],
      );
    } finally {
      clearInterval(ticker);
    }
    if (reported) context.progress(`${what}: done in ${seconds()} s`);
  };
}

/** Drops an index if it exists (metadata only in InnoDB). */
export function dropIndexIfPresent(table: string, index: string) {
  return async (context: MigrationContext): Promise<void> => {
    if (!(await hasIndex(context, table, index))) return;
    await tolerating(context, `ALTER TABLE ${table} DROP INDEX ${index}, ALGORITHM=INPLACE, LOCK=NONE`, [
      ER_CANT_DROP_FIELD_OR_KEY,
    ]);
  };
}
