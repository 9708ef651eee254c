/**
 * Read query hygiene: the read pool carries a server-side statement limit, so a
 * pathological query is stopped by the database itself; the write pool has none.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Database, openDatabase } from "../../src/platform/database/database.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";

/** A join that takes MariaDB many seconds (10^10 row pairs from the sequence engine). */
const SLOW_QUERY = "SELECT COUNT(*) AS n FROM seq_1_to_100000 a JOIN seq_1_to_100000 b ON a.seq + b.seq = 77";

let test: TestDatabase;
let db: Database;

beforeAll(async () => {
  test = await createTestDatabase("query_timeout");
  db = await openDatabase({ url: test.url, poolSize: 2, queryTimeoutMs: 250 });
});

afterAll(async () => {
  await db?.close();
  await test?.drop();
});

it("stops a read query at the statement timeout", async () => {
  const started = Date.now();
  const failure = await db.read.query(SLOW_QUERY).then(
    () => undefined,
    (error: { errno?: number; message?: string }) => error,
  );
  const elapsed = Date.now() - started;
  expect(failure?.errno).toBe(1969); // ER_STATEMENT_TIMEOUT
  expect(elapsed).toBeLessThan(5_000);
});

it("leaves the write pool without a statement timeout", async () => {
  // These machines run MariaDB (max_statement_time, seconds); MySQL uses max_execution_time in ms.
  expect(db.flavour).toBe("mariadb");
  const [rows] = await db.write.query("SELECT @@max_statement_time AS limit_s");
  expect(rows).toEqual([{ limit_s: 0 }]);
  const [read] = await db.read.query("SELECT @@max_statement_time AS limit_s, @@time_zone AS tz");
  expect(read).toEqual([{ limit_s: 0.25, tz: "+00:00" }]);
});
