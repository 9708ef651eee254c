/**
 * The record of applied migrations, in two tables. `schema_versions` is the record this release and every later
 * one reads and writes. `schema_migrations` is the record releases up to 0.4.0 read (their readiness compares its
 * highest version with theirs; their runner applies what it lacks): kept equal to `schema_versions`, so that an
 * older release keeps serving during a rolling upgrade or after a rollback within the release floor, until
 * retention first prunes. Then it is closed (`closeLegacyRecord`): emptied but for one note (version 0), so that a
 * release that cannot read the retention horizons, and would answer the pruned periods short, finds no schema it
 * knows: 0.1.0 and 0.2.0 stop at their first migration (`Table 'affiliates' already exists`) or never become
 * ready (`migrations_pending`, version 0); 0.3.0 and 0.4.0 are refused by the release floor first (./release-floor.ts).
 * Closing is a DELETE and an INSERT: the runtime user of a least-privilege deployment may do it.
 */
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";
import { errnoOf } from "./database-errors.js";

/** The record every release from this one on reads. */
export const RECORD_TABLE = "schema_versions";
/** The record releases up to 0.4.0 read. */
export const LEGACY_RECORD_TABLE = "schema_migrations";
/** The version of the note that closes the legacy record (no migration has it). */
export const CLOSED_NOTE_VERSION = 0;

const ER_NO_SUCH_TABLE = 1146;
const ER_BAD_DB_ERROR = 1049;

/** Both records, of one shape (written out, so that the docs' tests find every table by its CREATE TABLE). */
const CREATE_RECORDS = [
  `CREATE TABLE IF NOT EXISTS schema_migrations (
      version INT UNSIGNED NOT NULL PRIMARY KEY,
      name VARCHAR(200) NOT NULL,
      applied_at INT UNSIGNED NOT NULL
    ) ENGINE=InnoDB`,
  `CREATE TABLE IF NOT EXISTS schema_versions (
      version INT UNSIGNED NOT NULL PRIMARY KEY,
      name VARCHAR(200) NOT NULL,
      applied_at INT UNSIGNED NOT NULL
    ) ENGINE=InnoDB`,
];

/** One applied migration as the record keeps it. */
export interface RecordedMigration {
  readonly version: number;
  readonly name: string;
  readonly appliedAt: number;
}

/** Both records as the migration runner reads them (after `openRecord`). */
export interface SchemaRecord {
  /** The applied migrations (`schema_versions`), in order. */
  readonly applied: readonly RecordedMigration[];
  /** The versions the legacy record holds, its closing note left out. */
  readonly legacy: readonly number[];
  /** Whether retention closed the legacy record (it holds the note). */
  readonly closed: boolean;
}

/**
 * Creates both records when missing and reads them. A version the legacy record holds and `schema_versions`
 * lacks was applied by a release before this one (a database only they migrated, or one they migrated further
 * after a rollback): it is copied over first, so both say the same unless something else made them differ.
 */
export async function openRecord(connection: PoolConnection): Promise<SchemaRecord> {
  for (const statement of CREATE_RECORDS) await connection.query(statement);
  await connection.query(
    `INSERT IGNORE INTO ${RECORD_TABLE} (version, name, applied_at)
     SELECT version, name, applied_at FROM ${LEGACY_RECORD_TABLE} WHERE version <> ?`,
    [CLOSED_NOTE_VERSION],
  );
  const [legacy] = await connection.query<RowDataPacket[]>(
    `SELECT version FROM ${LEGACY_RECORD_TABLE} ORDER BY version`,
  );
  const versions = legacy.map((r) => Number(r.version));
  return {
    applied: await recordedMigrations(connection, RECORD_TABLE),
    legacy: versions.filter((v) => v !== CLOSED_NOTE_VERSION),
    closed: versions.includes(CLOSED_NOTE_VERSION),
  };
}

/** Records `migration` as applied: in `schema_versions`, and in the legacy record while it is open. */
export async function recordApplied(
  connection: PoolConnection,
  migration: { readonly version: number; readonly name: string },
): Promise<void> {
  // IGNORE: an instance that took over an expired lease mid-step may have recorded it too.
  await connection.query(
    `INSERT IGNORE INTO ${RECORD_TABLE} (version, name, applied_at) VALUES (?, ?, UNIX_TIMESTAMP())`,
    [migration.version, migration.name],
  );
  if (await isLegacyRecordClosed(connection)) return;
  await connection.query(
    `INSERT IGNORE INTO ${LEGACY_RECORD_TABLE} (version, name, applied_at) VALUES (?, ?, UNIX_TIMESTAMP())`,
    [migration.version, migration.name],
  );
}

/** Whether the legacy record holds the closing note. */
export async function isLegacyRecordClosed(pool: Pool | PoolConnection): Promise<boolean> {
  const [rows] = await pool.query<RowDataPacket[]>(`SELECT 1 FROM ${LEGACY_RECORD_TABLE} WHERE version = ?`, [
    CLOSED_NOTE_VERSION,
  ]);
  return rows.length > 0;
}

/**
 * Closes the legacy record for good, in one transaction: every row goes, the note `note` comes in. Does nothing
 * when it is closed already, or when `schema_versions` does not hold every version it does (never loses what only
 * the legacy record knows). Answers whether it closed it now.
 */
export async function closeLegacyRecord(connection: PoolConnection, note: string): Promise<boolean> {
  await connection.beginTransaction();
  try {
    const [rows] = await connection.query<RowDataPacket[]>(
      `SELECT l.version, v.version AS kept FROM ${LEGACY_RECORD_TABLE} l
         LEFT JOIN ${RECORD_TABLE} v ON v.version = l.version FOR UPDATE`,
    );
    const closed = rows.some((r) => Number(r.version) === CLOSED_NOTE_VERSION);
    const unkept = rows.some((r) => Number(r.version) !== CLOSED_NOTE_VERSION && r.kept === null);
    if (closed || unkept) {
      await connection.rollback();
      return false;
    }
    await connection.query(`DELETE FROM ${LEGACY_RECORD_TABLE}`);
    await connection.query(
      `INSERT INTO ${LEGACY_RECORD_TABLE} (version, name, applied_at) VALUES (?, ?, UNIX_TIMESTAMP())`,
      [CLOSED_NOTE_VERSION, note.slice(0, 200)],
    );
    await connection.commit();
    return true;
  } catch (error) {
    await connection.rollback().catch(() => undefined);
    throw error;
  }
}

/**
 * The applied migrations, read only (nothing created): from `schema_versions`, or from the legacy record on a
 * database no release from this one on has migrated yet; none on an empty schema. Rejects with the driver's
 * error when the database itself is missing (ER_BAD_DB_ERROR) or does not answer.
 */
export async function appliedMigrations(pool: Pool | PoolConnection): Promise<RecordedMigration[]> {
  for (const table of [RECORD_TABLE, LEGACY_RECORD_TABLE]) {
    try {
      return (await recordedMigrations(pool, table)).filter((m) => m.version !== CLOSED_NOTE_VERSION);
    } catch (error) {
      if (errnoOf(error) !== ER_NO_SUCH_TABLE) throw error;
    }
  }
  return [];
}

/** The highest applied migration, or 0 when none is (an empty schema): what readiness compares. */
export async function currentSchemaVersion(pool: Pool | PoolConnection): Promise<number> {
  return Math.max(0, ...(await appliedMigrations(pool)).map((m) => m.version));
}

/** Whether migration `version` is recorded (read only); false on a database without a record. */
export async function isMigrationApplied(pool: Pool | PoolConnection, version: number): Promise<boolean> {
  try {
    return (await appliedMigrations(pool)).some((m) => m.version === version);
  } catch (error) {
    if (errnoOf(error) === ER_BAD_DB_ERROR) return false;
    throw error;
  }
}

/**
 * Whether migration `version` is recorded, asked of the database at most once every `recheckMs` while the answer
 * is no, and never again once it is yes (a recorded migration stays recorded); an error (no schema yet) counts as no.
 */
export function migrationRecordedReader(pool: Pool, version: number, recheckMs = 5_000): () => Promise<boolean> {
  let recorded = false;
  let askedAt = Number.NEGATIVE_INFINITY;
  let asking: Promise<void> | undefined;
  const ask = async (): Promise<void> => {
    try {
      recorded = await isMigrationApplied(pool, version);
    } catch {
      recorded = false;
    } finally {
      askedAt = Date.now();
      asking = undefined;
    }
  };
  return async () => {
    if (!recorded && Date.now() - askedAt >= recheckMs) {
      asking ??= ask();
      await asking;
    }
    return recorded;
  };
}

async function recordedMigrations(pool: Pool | PoolConnection, table: string): Promise<RecordedMigration[]> {
  const [rows] = await pool.query<RowDataPacket[]>(`SELECT version, name, applied_at FROM ${table} ORDER BY version`);
  return rows.map((r) => ({ version: Number(r.version), name: String(r.name), appliedAt: Number(r.applied_at) }));
}
