/**
 * A throwaway database per test file on the real MariaDB/MySQL server, with
 * every migration applied. Dropped again in afterAll.
 */
import { randomBytes } from "node:crypto";
import mysql, { type RowDataPacket } from "mysql2/promise";
import { connectionOptions, type Database, openDatabase } from "../../src/platform/database/database.js";
import { migrate } from "../../src/schema/migration-runner.js";
import { MIGRATIONS, type Migration } from "../../src/schema/schema-migrations.js";
import { toUnits, unitsToDecimal } from "./decimals.js";
import { useStarted } from "./lifecycle.js";

/** Server to create test databases on; the database part of the URL is replaced. */
export const TEST_SERVER_URL = process.env.TEST_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/topwagers_test";

export interface TestDatabase {
  readonly url: string;
  readonly db: Database;
  drop(): Promise<void>;
}

/** `migrations`: the ones to apply (default: all), e.g. only the older ones to test a later one on their data. */
export async function createTestDatabase(label: string, migrations?: readonly Migration[]): Promise<TestDatabase> {
  const name = `tw_test_${label.replace(/[^A-Za-z0-9_]/g, "_").slice(0, 30)}_${randomBytes(4).toString("hex")}`;
  const url = new URL(TEST_SERVER_URL);
  url.pathname = `/${name}`;
  const { database: _unused, ...serverOptions } = connectionOptions(url.toString());
  const admin = await mysql.createConnection(serverOptions);
  await admin.query(`CREATE DATABASE ${mysql.escapeId(name)} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  await admin.end();
  const db = await openDatabase({ url: url.toString(), poolSize: 4, queryTimeoutMs: 10_000 });
  await migrate(db.write, migrations);
  return {
    url: url.toString(),
    db,
    async drop() {
      await db.close();
      const conn = await mysql.createConnection(serverOptions);
      await conn.query(`DROP DATABASE IF EXISTS ${mysql.escapeId(name)}`);
      await conn.end();
    },
  };
}

/** A throwaway database with the migrations up to `version` only, to test a later migration on what they wrote. */
export function createDatabaseAtVersion(label: string, version: number): Promise<TestDatabase> {
  return createTestDatabase(
    label,
    MIGRATIONS.filter((m) => m.version <= version),
  );
}

/** A throwaway database for the enclosing describe (or file): made in beforeAll, dropped in afterAll. */
export function useTestDatabase(label: string, migrations?: readonly Migration[]): TestDatabase {
  return useStarted(
    () => createTestDatabase(label, migrations),
    (database) => database.drop(),
  );
}

/** Per user: [sum of the raw wagers (canonical decimal), count], ordered by user id. */
export async function wagerTotals(database: TestDatabase): Promise<[string, string, number][]> {
  const [rows] = await database.db.read.query<RowDataPacket[]>(
    `SELECT u.external_id AS user, SUM(w.amount) AS total, COUNT(*) AS n
       FROM wagers w JOIN users u ON u.id = w.user_id GROUP BY u.external_id ORDER BY u.external_id`,
  );
  return rows.map((r) => [String(r.user), unitsToDecimal(toUnits(String(r.total))), Number(r.n)]);
}
