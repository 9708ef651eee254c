/**
 * `migrate` on a database whose record and tables disagree (issue 47, item 3): a dump of version 12 loaded over a
 * database a newer release had migrated leaves the newer tables beside the older record. migrate then names the
 * tables that are ahead, by migration, and what to do, and changes nothing, where it used to stop on
 * `Table 'signing_keys' already exists`. A table an interrupted migrate left (the first pending migration's, made
 * with IF NOT EXISTS) does not count: migrate finishes that migration.
 */
import type { RowDataPacket } from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { migrate } from "../../src/schema/migration-runner.js";
import { MIGRATIONS } from "../../src/schema/schema-migrations.js";
import { createDatabaseAtVersion, createTestDatabase } from "../support/database.js";

const AHEAD =
  "signing_keys, race_signed_results (migration 13); race_history, race_voids (migration 14); retention_horizons, " +
  "pruned_wagers (migration 17); race_late_wagers (migration 18); live_signing_keys (migration 19); log_head, " +
  "log_entries, log_tile_hashes, log_checkpoints, log_state, log_signing_keys (migration 21); retention_holds " +
  "(migration 22); instances (migration 23)";
const WHY =
  "A backup of version 12 was probably loaded into a database a newer release had migrated (loading a dump " +
  "replaces the tables it holds and leaves the others). Nothing was changed. Restore the backup into a new, empty " +
  "database instead, or ";

const versions = async (pool: import("mysql2/promise").Pool, table: string) =>
  ((await pool.query<RowDataPacket[]>(`SELECT version FROM ${table} ORDER BY version`))[0] as RowDataPacket[]).map(
    (r) => Number(r.version),
  );

describe("migrate on a database whose record and tables disagree", () => {
  it("a dump of version 12 loaded over a migrated database: names the records and the tables ahead", async () => {
    const database = await createTestDatabase("disagree_dump");
    try {
      const pool = database.db.write;
      // What the dump of version 12 leaves: its own schema_migrations, the newer tables and schema_versions kept.
      await pool.query("DELETE FROM schema_migrations WHERE version > 12");
      await expect(migrate(pool)).rejects.toThrow(
        "the schema and its record disagree: schema_migrations says version 12 but schema_versions says 25, and " +
          `tables of later migrations are here already: ${AHEAD}. ${WHY}drop those tables and schema_versions and ` +
          'run migrate again (docs/operations.md, "Rolling back")',
      );
      expect(await versions(pool, "schema_migrations")).toEqual(
        MIGRATIONS.filter((m) => m.version <= 12).map((m) => m.version),
      );
    } finally {
      await database.drop();
    }
  });

  it("a database only older releases recorded: names the tables ahead of its record", async () => {
    const database = await createTestDatabase("disagree_legacy");
    try {
      const pool = database.db.write;
      await pool.query("DROP TABLE schema_versions");
      await pool.query("DELETE FROM schema_migrations WHERE version > 12");
      await expect(migrate(pool)).rejects.toThrow(
        `the schema and its record disagree: the schema's record says version 12, and tables of later migrations ` +
          `are here already: ${AHEAD}. ${WHY}drop those tables and run migrate again (docs/operations.md, ` +
          '"Rolling back")',
      );
    } finally {
      await database.drop();
    }
  });

  it("a table an interrupted migrate left is the first pending migration's: migrate finishes it", async () => {
    const database = await createDatabaseAtVersion("disagree_resume", 18);
    try {
      const pool = database.db.write;
      await pool.query(MIGRATIONS.find((m) => m.version === 19)?.statements[0] as string);
      const report = await migrate(pool);
      expect(report.applied.map((m) => m.version)).toEqual([19, 20, 21, 22, 23, 24, 25]);
      expect(await versions(pool, "schema_versions")).toEqual(MIGRATIONS.map((m) => m.version));
      expect(await versions(pool, "schema_migrations")).toEqual(MIGRATIONS.map((m) => m.version));
    } finally {
      await database.drop();
    }
  });
});
