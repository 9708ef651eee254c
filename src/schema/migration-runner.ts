/**
 * Applies the schema migrations (./schema-migrations.ts). Each runs once, in order, and is
 * recorded (./schema-record.ts: `schema_versions`, and the record older releases read while it is open); a lease row
 * (`schema_migration_lease`) keeps two instances starting at once, on one server or on two Galera nodes, from
 * applying the same migration twice. Before anything is applied, a record that disagrees with the tables (a dump
 * loaded over a newer schema) is refused with the tables that are ahead (./schema-disagreement.ts).
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Pool, PoolConnection, ResultSetHeader, RowDataPacket } from "mysql2/promise";
import { classifyDatabaseError } from "../platform/database/database-errors.js";
import { appliedMigrations, openRecord, recordApplied } from "../platform/database/schema-record.js";
import { packageInfo } from "../platform/package-info.js";
import { assertReleaseMayUse, createReleaseFloorTable, raiseReleaseFloor } from "./release-floor.js";
import { refuseDisagreement } from "./schema-disagreement.js";
import { MIGRATIONS, type Migration } from "./schema-migrations.js";

export { currentSchemaVersion } from "../platform/database/schema-record.js";

/** How long a migration lease lasts unless renewed; renewed every LEASE_SECONDS / 3 while migrating. */
const LEASE_SECONDS = 30;
const LEASE_NAME = "migrations";

export interface MigrationReport {
  readonly applied: readonly Migration[];
  readonly current: number;
}

export interface MigrateOptions {
  /** How long to wait for another instance's lease; default 120 s. */
  readonly waitMs?: number;
  /** Who holds the lease, for the table's readers; default "host:pid:random since <ISO time>". */
  readonly holder?: string;
  /** The release running the migrations, checked against the schema's floor; default package.json's version. */
  readonly release?: string;
  /**
   * Lines for the operator (the CLI prints them, the server logs them): each migration as it starts and once
   * it is recorded, each wait for another runner's lease, and every few seconds while a long step runs.
   */
  readonly onProgress?: (text: string) => void;
  /** Told of each migration once it is recorded (before the next one starts). */
  readonly onApplied?: (migration: Migration, seconds: number) => void;
}

/**
 * Applies every pending migration. Safe to call from several instances at once, also against
 * different nodes of a Galera cluster: the lock is a lease row in `schema_migration_lease`, which
 * the cluster replicates (GET_LOCK is local to one node there). The lease is taken by one atomic
 * UPDATE that only matches a free or expired lease; on Galera two such UPDATEs on two nodes
 * conflict at certification and exactly one wins. It expires by itself if its holder dies.
 */
export async function migrate(
  pool: Pool,
  migrations: readonly Migration[] = MIGRATIONS,
  options: MigrateOptions = {},
): Promise<MigrationReport> {
  const holder = options.holder ?? defaultHolder();
  await createLeaseRow(pool);
  await takeLease(pool, holder, options.waitMs ?? 120_000, options.onProgress ?? (() => undefined));
  const renewal = keepRenewing(pool, holder);
  const connection = await pool.getConnection();
  try {
    const applied = await applyPending(connection, migrations, options, renewal);
    return { applied, current: Math.max(0, ...migrations.map((m) => m.version)) };
  } finally {
    renewal.stop();
    connection.release();
    await pool
      .query("UPDATE schema_migration_lease SET holder = '', expires_at = 0 WHERE name = ? AND holder = ?", [
        LEASE_NAME,
        holder,
      ])
      .catch(() => undefined); // it expires by itself
  }
}

/** Who holds the lease, as its waiters print it: "host:pid:random since 2026-11-28T23:40:01Z". */
function defaultHolder(): string {
  const since = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  return `${hostname()}:${process.pid}:${randomBytes(6).toString("hex")} since ${since}`;
}

/** The lease's table and its one row (free), when they do not exist yet. */
async function createLeaseRow(pool: Pool): Promise<void> {
  await pool.query(
    `CREATE TABLE IF NOT EXISTS schema_migration_lease (
      name VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
      holder VARCHAR(200) NOT NULL,
      expires_at BIGINT NOT NULL
    ) ENGINE=InnoDB`,
  );
  for (let attempt = 1; ; attempt++) {
    try {
      await pool.query("INSERT IGNORE INTO schema_migration_lease (name, holder, expires_at) VALUES (?, '', 0)", [
        LEASE_NAME,
      ]);
      return;
    } catch (error) {
      // Two nodes inserting the row at once conflict at certification (Galera): the row is there now.
      if (classifyDatabaseError(error) !== "retry" || attempt >= 5) throw error;
    }
  }
}

/** The lease renewed every LEASE_SECONDS / 3 until stopped; `lost` is why a renewal failed, if one did. */
interface Renewal {
  lost(): unknown;
  stop(): void;
}

function keepRenewing(pool: Pool, holder: string): Renewal {
  let lost: unknown;
  const timer = setInterval(
    () => {
      renewLease(pool, holder).catch((error: unknown) => {
        lost ??= error;
      });
    },
    (LEASE_SECONDS * 1000) / 3,
  );
  timer.unref();
  return { lost: () => lost, stop: () => clearInterval(timer) };
}

/**
 * Applies the migrations not recorded, in order, while the lease holds. DDL commits
 * implicitly in MySQL, so a migration is made of idempotent-enough steps and recorded only once all of them
 * succeeded. Refuses (ReleaseTooOldError) before anything is applied when the schema's release floor names a
 * newer release than this one; raises the floor for every recorded migration that carries one.
 */
async function applyPending(
  connection: PoolConnection,
  migrations: readonly Migration[],
  options: MigrateOptions,
  renewal: Renewal,
): Promise<Migration[]> {
  await createReleaseFloorTable(connection);
  await assertReleaseMayUse(connection, options.release ?? packageInfo().version);
  const record = await openRecord(connection);
  await refuseDisagreement(connection, migrations, record);
  const done = new Set(record.applied.map((m) => m.version));
  // Migrations recorded before the floor existed (or by a release that did not know theirs) raise it now.
  for (const migration of migrations) {
    if (done.has(migration.version)) await raiseFloorFor(connection, migration);
  }
  const applied: Migration[] = [];
  for (const migration of migrations) {
    if (done.has(migration.version)) continue;
    const lost = renewal.lost();
    if (lost !== undefined) throw new Error("lost the migration lease; stopping", { cause: lost });
    await applyOne(connection, migration, options);
    applied.push(migration);
  }
  return applied;
}

/** Runs one migration's steps, records it and raises the release floor it carries; says so before and after. */
async function applyOne(connection: PoolConnection, migration: Migration, options: MigrateOptions): Promise<void> {
  const progress = options.onProgress ?? (() => undefined);
  const started = Date.now();
  progress(`applying migration ${migration.version}: ${migration.name}`);
  const context = { connection, progress };
  for (const statement of migration.statements) {
    if (typeof statement === "string") await connection.query(statement);
    else await statement(context);
  }
  await recordApplied(connection, migration);
  await raiseFloorFor(connection, migration);
  options.onApplied?.(migration, (Date.now() - started) / 1000);
}

async function raiseFloorFor(connection: PoolConnection, migration: Migration): Promise<void> {
  if (migration.oldestRelease !== undefined) {
    await raiseReleaseFloor(connection, migration.oldestRelease, migration.version);
  }
}

async function takeLease(pool: Pool, holder: string, waitMs: number, say: (text: string) => void): Promise<void> {
  const deadline = Date.now() + waitMs;
  let reported = "";
  for (;;) {
    try {
      const [result] = await pool.query<ResultSetHeader>(
        `UPDATE schema_migration_lease SET holder = ?, expires_at = UNIX_TIMESTAMP() + ?
          WHERE name = ? AND (expires_at < UNIX_TIMESTAMP() OR holder = ?)`,
        [holder, LEASE_SECONDS, LEASE_NAME, holder],
      );
      if (result.affectedRows === 1) return;
      reported = await reportWait(pool, reported, say);
    } catch (error) {
      // Another node's UPDATE won certification (Galera) or the row lock (1213 / 1205): try again.
      if (classifyDatabaseError(error) !== "retry") throw error;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `could not take the migration lease within ${Math.round(waitMs / 1000)} s; is another migration running? (table schema_migration_lease)`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100 + Math.random() * 200));
  }
}

/**
 * Says whose lease this runner waits for, once per holder: "waiting for the migration lease held by
 * host:pid:random since <time> (it expires at <time> unless its holder renews it)". Returns the holder reported.
 */
async function reportWait(pool: Pool, reported: string, say: (text: string) => void): Promise<string> {
  const [rows] = await pool.query<RowDataPacket[]>(
    "SELECT holder, expires_at FROM schema_migration_lease WHERE name = ?",
    [LEASE_NAME],
  );
  const row = rows[0];
  if (row === undefined || String(row.holder) === reported) return reported;
  const expires = new Date(Number(row.expires_at) * 1000).toISOString().replace(/\.\d+Z$/, "Z");
  say(
    `waiting for the migration lease held by ${String(row.holder)} (it expires at ${expires} unless its holder renews it)`,
  );
  return String(row.holder);
}

async function renewLease(pool: Pool, holder: string): Promise<void> {
  const [result] = await pool.query<ResultSetHeader>(
    "UPDATE schema_migration_lease SET expires_at = UNIX_TIMESTAMP() + ? WHERE name = ? AND holder = ?",
    [LEASE_SECONDS, LEASE_NAME, holder],
  );
  if (result.affectedRows !== 1) throw new Error("the migration lease was taken by another instance");
}

export interface MigrationStatus {
  /** Whether the database itself exists yet (`migrate` creates it). */
  readonly databaseExists: boolean;
  readonly applied: readonly { readonly version: number; readonly name: string; readonly appliedAt: number }[];
  readonly pending: readonly Migration[];
}

/** Applied and pending migrations, read only: nothing is created or applied. */
export async function migrationStatus(
  pool: Pool,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<MigrationStatus> {
  let databaseExists = true;
  let applied: MigrationStatus["applied"] = [];
  try {
    applied = await appliedMigrations(pool);
  } catch (error) {
    if ((error as { code?: string }).code !== "ER_BAD_DB_ERROR") throw error;
    databaseExists = false;
  }
  const done = new Set(applied.map((m) => m.version));
  return { databaseExists, applied, pending: migrations.filter((m) => !done.has(m.version)) };
}
