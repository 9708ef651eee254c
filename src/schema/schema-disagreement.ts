/**
 * Before `migrate` applies anything: does the schema's record (./schema-record.ts) agree with its tables? Loading a
 * dump into a database a newer release had migrated replaces the tables the dump holds and leaves the others: the
 * record then says an older version while tables of later migrations are there, and the next migration would stop
 * on `Table '…' already exists` halfway (issue 47: a rollback by the book broke the next upgrade). This check
 * names the tables that are ahead of the record, with the migration that makes each, and what to do; it changes
 * nothing. A table that the first pending migration makes with IF NOT EXISTS is not counted: an interrupted
 * `migrate` leaves such a table, and running it again finishes the migration.
 */
import type { PoolConnection, RowDataPacket } from "mysql2/promise";
import { RECORD_TABLE, type SchemaRecord } from "../platform/database/schema-record.js";

/** What a migration is to this check: its version and its statements as written. */
export interface CheckedMigration {
  readonly version: number;
  readonly statements: readonly unknown[];
}

/** The schema's record and its tables disagree: nothing was applied. */
export class SchemaDisagreementError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SchemaDisagreementError";
  }
}

const CREATES = /CREATE TABLE (IF NOT EXISTS )?`?([a-z_0-9]+)`?/g;

/** The tables a migration's statements create (those written as SQL), each with whether it says IF NOT EXISTS. */
export function tablesCreatedBy(migration: CheckedMigration): { table: string; ifNotExists: boolean }[] {
  return migration.statements.flatMap((step) =>
    typeof step === "string"
      ? [...step.matchAll(CREATES)].map((m) => ({ table: m[2] as string, ifNotExists: m[1] !== undefined }))
      : [],
  );
}

/**
 * Throws SchemaDisagreementError when tables of migrations the record does not hold are in the database already,
 * or when the legacy record (open) holds fewer migrations than `schema_versions` (a dump of a release before this
 * one loaded over a database this one migrated).
 */
export async function refuseDisagreement(
  connection: PoolConnection,
  migrations: readonly CheckedMigration[],
  record: SchemaRecord,
): Promise<void> {
  const applied = new Set(record.applied.map((m) => m.version));
  const legacy = new Set(record.legacy);
  const legacyBehind = !record.closed && legacy.size > 0 && [...applied].some((v) => !legacy.has(v));
  const trusted = legacyBehind ? legacy : applied;
  const pending = migrations.filter((m) => !trusted.has(m.version));
  const existing = await tablesInDatabase(connection);
  const ahead = pending.flatMap((migration, index) =>
    tablesCreatedBy(migration)
      .filter(({ table, ifNotExists }) => existing.has(table) && !(index === 0 && ifNotExists && !legacyBehind))
      .map(({ table }) => ({ table, version: migration.version })),
  );
  if (ahead.length === 0 && !legacyBehind) return;
  const said = Math.max(0, ...trusted);
  throw new SchemaDisagreementError(disagreementMessage(said, ahead, legacyBehind ? Math.max(...applied) : undefined));
}

/** The refusal's text: what the record says, which tables are ahead (by migration), why, and the two ways out. */
export function disagreementMessage(
  said: number,
  ahead: readonly { table: string; version: number }[],
  versionsSays: number | undefined,
): string {
  const byMigration = new Map<number, string[]>();
  for (const { table, version } of ahead) byMigration.set(version, [...(byMigration.get(version) ?? []), table]);
  const listed = [...byMigration].map(([version, tables]) => `${tables.join(", ")} (migration ${version})`).join("; ");
  const records =
    versionsSays === undefined
      ? `the schema's record says version ${said}`
      : `schema_migrations says version ${said} but ${RECORD_TABLE} says ${versionsSays}`;
  const tables = ahead.length === 0 ? "" : `, and tables of later migrations are here already: ${listed}`;
  const drop = versionsSays === undefined ? "drop those tables" : `drop those tables and ${RECORD_TABLE}`;
  return (
    `the schema and its record disagree: ${records}${tables}. A backup of version ${said} was probably loaded into ` +
    "a database a newer release had migrated (loading a dump replaces the tables it holds and leaves the others). " +
    `Nothing was changed. Restore the backup into a new, empty database instead, or ${drop} and run migrate ` +
    `again (docs/operations.md, "Rolling back")`
  );
}

async function tablesInDatabase(connection: PoolConnection): Promise<Set<string>> {
  const [rows] = await connection.query<RowDataPacket[]>(
    "SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()",
  );
  return new Set(rows.map((r) => String(r.name)));
}
