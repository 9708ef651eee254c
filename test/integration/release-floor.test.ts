/**
 * Version safety (issue 38): the schema records the oldest release that may use it; a release older than that
 * refuses to migrate (before applying anything) and readiness says release_too_old; a schema newer than a release
 * knows is ready with a warning. Migrations report each step as it happens: each migration as it starts and once
 * it is recorded, and each wait for another runner's lease, naming its holder.
 */
import type { RowDataPacket } from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { Readiness } from "../../src/platform/observability/readiness.js";
import { migrate } from "../../src/schema/migration-runner.js";
import { MIGRATIONS, type Migration } from "../../src/schema/schema-migrations.js";
import { mariadbSchema } from "../../src/schema/schema-versions.js";
import { useTestDatabase } from "../support/database.js";
import { RELEASE } from "../support/release.js";

const LATEST = Math.max(...MIGRATIONS.map((m) => m.version));

async function floorRow(pool: import("mysql2/promise").Pool): Promise<unknown[]> {
  const [rows] = await pool.query<RowDataPacket[]>(
    "SELECT oldest_release, set_by_migration FROM schema_release_floor ORDER BY id",
  );
  return rows.map((r) => [String(r.oldest_release), Number(r.set_by_migration)]);
}

/** A migration after every real one that creates a marker table, so a test can see whether it ran. */
const PROBE: Migration = {
  version: LATEST + 100,
  name: "a probe table",
  statements: ["CREATE TABLE floor_probe (id INT NOT NULL PRIMARY KEY) ENGINE=InnoDB"],
};

async function tableExists(pool: import("mysql2/promise").Pool, table: string): Promise<boolean> {
  const [rows] = await pool.query<RowDataPacket[]>(
    "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
    [table],
  );
  return rows.length > 0;
}

describe("the release floor", () => {
  const database = useTestDatabase("release_floor");

  it("a fully migrated schema records 0.2.0 (migration 9, scopes) as the oldest release", async () => {
    expect(await floorRow(database.db.write)).toEqual([["0.2.0", 9]]);
    const readiness = new Readiness(mariadbSchema(database.db.write, RELEASE.version));
    expect(await readiness.check()).toEqual({ status: "ready", schemaVersion: LATEST });
  });

  it("a release older than the floor refuses to migrate, naming both versions, and applies nothing", async () => {
    await database.db.write.query(
      "UPDATE schema_release_floor SET oldest_release = '99.1.0', set_by_migration = 99 WHERE id = 1",
    );
    const refusal =
      `this release (${RELEASE.version}) is older than the oldest release this database's schema allows ` +
      "(99.1.0, set by migration 99): run 99.1.0 or newer. Going back below it means restoring the backup " +
      'taken before migration 99 (docs/operations.md, "Rolling back")';
    await expect(migrate(database.db.write, [...MIGRATIONS, PROBE])).rejects.toThrow(refusal);
    expect(await tableExists(database.db.write, "floor_probe")).toBe(false);

    const readiness = new Readiness(mariadbSchema(database.db.write, RELEASE.version));
    expect(await readiness.check()).toEqual({ status: "release_too_old", schemaVersion: LATEST, message: refusal });
    expect(await readiness.ready()).toBe(false);

    // The release it names may migrate; a migration with a lower floor (9: 0.2.0) never lowers it.
    const report = await migrate(database.db.write, [...MIGRATIONS, PROBE], { release: "99.1.0" });
    expect(report.applied.map((m) => m.version)).toEqual([PROBE.version]);
    expect(await floorRow(database.db.write)).toEqual([["99.1.0", 99]]);
    expect(await tableExists(database.db.write, "floor_probe")).toBe(true);
    const newer = new Readiness(mariadbSchema(database.db.write, "99.1.0"));
    // The probe migration put the schema past what this build knows: ready, with the warning.
    expect(await newer.check()).toEqual({
      status: "ready",
      schemaVersion: PROBE.version,
      warning:
        `the schema is at version ${PROBE.version}, newer than this release knows (${LATEST}): a newer release ` +
        "migrated it. This release still serves, but data the newer migrations bring is not read here; finish " +
        'the roll-out or roll back as docs/operations.md "Rolling back" says',
    });
  });
});

describe("migrate reports as it goes", () => {
  // Made with every migration but the last: the last is applied by the test.
  const database = useTestDatabase("migrate_reports", MIGRATIONS.slice(0, -1));

  it("each migration as it starts and once recorded, in that order, and the floor raised by a new one", async () => {
    const events: string[] = [];
    const raising: Migration = { ...PROBE, name: "raises the floor", oldestRelease: "0.2.1" };
    const report = await migrate(database.db.write, [...MIGRATIONS, raising], {
      release: "0.2.1",
      onProgress: (line) => {
        if (line.startsWith("applying migration ")) events.push(line);
      },
      onApplied: (m) => events.push(`recorded ${m.version}`),
    });
    const last = MIGRATIONS[MIGRATIONS.length - 1] as Migration;
    expect(events).toEqual([
      `applying migration ${last.version}: ${last.name}`,
      `recorded ${last.version}`,
      `applying migration ${raising.version}: raises the floor`,
      `recorded ${raising.version}`,
    ]);
    expect(report.applied.map((m) => m.version)).toEqual([last.version, raising.version]);
    expect(await floorRow(database.db.write)).toEqual([["0.2.1", raising.version]]);
  });

  it("a wait for another runner's lease is printed once, with its holder and when it expires", async () => {
    const holder = "other-host:4242:0123456789ab since 2026-11-28T23:40:01Z";
    await database.db.write.query(
      "UPDATE schema_migration_lease SET holder = ?, expires_at = UNIX_TIMESTAMP() + 2 WHERE name = 'migrations'",
      [holder],
    );
    const [rows] = await database.db.write.query<RowDataPacket[]>(
      "SELECT expires_at FROM schema_migration_lease WHERE name = 'migrations'",
    );
    const expires = new Date(Number(rows[0]?.expires_at) * 1000).toISOString().replace(/\.000Z$/, "Z");
    const lines: string[] = [];
    const started = Date.now();
    await migrate(database.db.write, undefined, { release: "0.2.1", onProgress: (line) => lines.push(line) });
    expect(Date.now() - started).toBeGreaterThan(1_000); // it did wait for the lease to expire
    expect(lines).toEqual([
      `waiting for the migration lease held by ${holder} (it expires at ${expires} unless its holder renews it)`,
    ]);
  });
});
