/**
 * The oldest release that may still use this database: a one-row table, `schema_release_floor`, that
 * migrations raise (a migration's `oldestRelease`, ./schema-migrations.ts) and never lower. A release
 * older than the floor would misread data its successors write (a key restricted by scopes answered
 * in full by a release that knows no scopes), so it refuses to start and to migrate, naming both
 * versions. Releases from before this table cannot read it; from this one on every release does.
 */
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";
import semver from "semver";

/** The floor as the database records it. */
export interface ReleaseFloor {
  /** The oldest release that may use the schema, e.g. "0.2.0". */
  readonly oldestRelease: string;
  /** The migration that raised it there, e.g. 9. */
  readonly setByMigration: number;
}

/** Why a release may not use a database: the floor names a newer release than `release`. */
export class ReleaseTooOldError extends Error {
  constructor(
    readonly release: string,
    readonly floor: ReleaseFloor,
  ) {
    super(releaseTooOldMessage(release, floor));
    this.name = "ReleaseTooOldError";
  }
}

/** The refusal's text: both versions, the migration that set the floor, and what to do. */
export function releaseTooOldMessage(release: string, floor: ReleaseFloor): string {
  return (
    `this release (${release}) is older than the oldest release this database's schema allows ` +
    `(${floor.oldestRelease}, set by migration ${floor.setByMigration}): run ${floor.oldestRelease} or newer. ` +
    `Going back below it means restoring the backup taken before migration ${floor.setByMigration} ` +
    `(docs/operations.md, "Rolling back")`
  );
}

/** Whether `release` is older than the floor (a release that is not a version string is treated as older). */
export function isOlderThanFloor(release: string, floor: ReleaseFloor | undefined): boolean {
  if (floor === undefined) return false;
  const own = semver.valid(release);
  return own === null || semver.lt(own, floor.oldestRelease);
}

/** The floor's table, created (empty) by the migration runner before it applies anything. */
export async function createReleaseFloorTable(connection: PoolConnection): Promise<void> {
  await connection.query(
    `CREATE TABLE IF NOT EXISTS schema_release_floor (
      id TINYINT UNSIGNED NOT NULL PRIMARY KEY,
      oldest_release VARCHAR(40) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      set_by_migration INT UNSIGNED NOT NULL,
      set_at INT UNSIGNED NOT NULL
    ) ENGINE=InnoDB`,
  );
}

/** The recorded floor; undefined when none is (no table yet, or no migration raised it). */
export async function readReleaseFloor(pool: Pool | PoolConnection): Promise<ReleaseFloor | undefined> {
  let rows: RowDataPacket[];
  try {
    [rows] = await pool.query<RowDataPacket[]>(
      "SELECT oldest_release, set_by_migration FROM schema_release_floor WHERE id = 1",
    );
  } catch (error) {
    const code = (error as { code?: string }).code;
    // A schema from before the floor existed, or a database `migrate` has not created yet.
    if (code === "ER_NO_SUCH_TABLE" || code === "ER_BAD_DB_ERROR") return undefined;
    throw error;
  }
  const row = rows[0];
  if (row === undefined) return undefined;
  return { oldestRelease: String(row.oldest_release), setByMigration: Number(row.set_by_migration) };
}

/** Refuses (ReleaseTooOldError) when the database's floor names a newer release than `release`. */
export async function assertReleaseMayUse(pool: Pool | PoolConnection, release: string): Promise<void> {
  const floor = await readReleaseFloor(pool);
  if (floor !== undefined && isOlderThanFloor(release, floor)) throw new ReleaseTooOldError(release, floor);
}

/**
 * Raises the floor to `oldestRelease` (set by migration `version`) unless it is there or higher already.
 * Called under the migration lease, so no other runner writes it meanwhile.
 */
export async function raiseReleaseFloor(
  connection: PoolConnection,
  oldestRelease: string,
  version: number,
): Promise<void> {
  const floor = await readReleaseFloor(connection);
  if (floor !== undefined && semver.gte(floor.oldestRelease, oldestRelease)) return;
  await connection.query(
    `INSERT INTO schema_release_floor (id, oldest_release, set_by_migration, set_at)
     VALUES (1, ?, ?, UNIX_TIMESTAMP())
     ON DUPLICATE KEY UPDATE oldest_release = VALUES(oldest_release),
       set_by_migration = VALUES(set_by_migration), set_at = VALUES(set_at)`,
    [oldestRelease, version],
  );
}
