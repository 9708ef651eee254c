/**
 * Range partitions by month, measured (issue 38): two copies of the `wagers` table in a database of their own,
 * one as the schema has it and one partitioned by month of `placed_at` (which must then be part of the primary
 * key and of the unique key on the platform id), each filled with the same 5M synthetic wagers in time order (as
 * ingest writes them: 12 months, 2,000 affiliates, 590,000 users) in chunks of `chunk` rows. Then the oldest month
 * is removed from each: by DELETE in batches of 5,000 (what the retention job does) and by ALTER TABLE … DROP
 * PARTITION, while a second connection runs a board's raw-edge query (a day of one affiliate's wagers) in a loop.
 *
 *   npm run bench -- partitions [--wagers 5000000] [--chunk 250000]
 */
import { parseArgs } from "node:util";
import mysql, { type RowDataPacket } from "mysql2/promise";
import { connectionOptions } from "../src/platform/database/database.js";
import { DAY } from "../src/values/calendar.js";
import { databaseUrl } from "./query.js";
import { fmt, machineDescription, percentile, table } from "./support.js";

const START = 1_764_547_200; // 2025-12-01 UTC
const MONTH_STARTS = Array.from({ length: 14 }, (_, i) => Date.UTC(2025, 11 + i, 1) / 1000);

const PLAIN = `CREATE TABLE w_plain (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  external_id VARBINARY(256) NOT NULL, user_id INT UNSIGNED NOT NULL, affiliate_id INT UNSIGNED NOT NULL,
  amount DECIMAL(20,8) NOT NULL, placed_at INT UNSIGNED NOT NULL, weight_bps SMALLINT UNSIGNED NOT NULL DEFAULT 10000,
  UNIQUE KEY ux_wagers_external (external_id),
  KEY ix_wagers_affiliate_time_weight (affiliate_id, placed_at, user_id, amount, weight_bps)
) ENGINE=InnoDB`;

/** The same table partitioned by month: placed_at joins the primary key and the unique key on the platform id. */
const PARTITIONED = `CREATE TABLE w_part (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  external_id VARBINARY(256) NOT NULL, user_id INT UNSIGNED NOT NULL, affiliate_id INT UNSIGNED NOT NULL,
  amount DECIMAL(20,8) NOT NULL, placed_at INT UNSIGNED NOT NULL, weight_bps SMALLINT UNSIGNED NOT NULL DEFAULT 10000,
  PRIMARY KEY (id, placed_at),
  UNIQUE KEY ux_wagers_external (external_id, placed_at),
  KEY ix_wagers_affiliate_time_weight (affiliate_id, placed_at, user_id, amount, weight_bps)
) ENGINE=InnoDB
PARTITION BY RANGE (placed_at) (
${MONTH_STARTS.slice(1)
  .map((end, i) => `  PARTITION p${i} VALUES LESS THAN (${end})`)
  .join(",\n")},
  PARTITION pmax VALUES LESS THAN MAXVALUE
)`;

async function fill(connection: mysql.Connection, name: string, wagers: number, chunk: number): Promise<number> {
  const spacing = (365 * DAY) / wagers;
  const started = Date.now();
  for (let from = 0; from < wagers; from += chunk) {
    const n = Math.min(chunk, wagers - from);
    await connection.query(
      `INSERT INTO ${name} (external_id, user_id, affiliate_id, amount, placed_at, weight_bps)
       SELECT CONCAT('p-w', LPAD(seq, 10, '0')), 1 + (seq * 7919) % 590000, 1 + (seq * 104729) % 2000,
              ((seq * 2654435761) % 10000000) / 100, ? + FLOOR(seq * ?), 10000
         FROM seq_${from + 1}_to_${from + n}`,
      [START, spacing],
    );
  }
  return (Date.now() - started) / 1000;
}

/** Runs `op` while a second connection repeats the raw-edge query; the op's time and the query's latencies. */
async function whileQuerying(
  url: string,
  name: string,
  op: (c: mysql.Connection) => Promise<void>,
): Promise<{ seconds: number; p50: number; max: number; n: number }> {
  const opConnection = await mysql.createConnection(connectionOptions(url));
  const queryConnection = await mysql.createConnection(connectionOptions(url));
  const latencies: number[] = [];
  let done = false;
  const day = START + 300 * DAY;
  const loop = (async () => {
    while (!done) {
      const t = performance.now();
      await queryConnection.query(
        `SELECT user_id, SUM(amount) AS s FROM ${name} WHERE affiliate_id = 7 AND placed_at >= ? AND placed_at < ?
          GROUP BY user_id ORDER BY s DESC LIMIT 10`,
        [day, day + DAY],
      );
      latencies.push(performance.now() - t);
    }
  })();
  const started = Date.now();
  await op(opConnection);
  const seconds = (Date.now() - started) / 1000;
  done = true;
  await loop;
  await opConnection.end();
  await queryConnection.end();
  const sorted = latencies.sort((a, b) => a - b);
  return { seconds, p50: percentile(sorted, 50), max: sorted.at(-1) ?? Number.NaN, n: sorted.length };
}

async function sizeMiB(connection: mysql.Connection, name: string): Promise<number> {
  await connection.query(`ANALYZE TABLE ${name}`);
  const [rows] = await connection.query<RowDataPacket[]>(
    "SELECT DATA_LENGTH + INDEX_LENGTH AS b FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
    [name],
  );
  return Number(rows[0]?.b) / 2 ** 20;
}

export async function runPartitionsBench(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { wagers: { type: "string", default: "5000000" }, chunk: { type: "string", default: "250000" } },
  });
  const wagers = Number(values.wagers);
  const chunk = Number(values.chunk);
  const url = databaseUrl(wagers).replace("/topwagers_bench_", "/topwagers_partitions_");
  const { database, ...server } = connectionOptions(url);
  const admin = await mysql.createConnection(server);
  await admin.query(`DROP DATABASE IF EXISTS ${mysql.escapeId(String(database))}`);
  await admin.query(`CREATE DATABASE ${mysql.escapeId(String(database))}`);
  await admin.end();
  const c = await mysql.createConnection(connectionOptions(url));
  process.stdout.write(`${await machineDescription(url)}\n${wagers.toLocaleString("en-US")} synthetic wagers\n\n`);
  await c.query(PLAIN);
  await c.query(PARTITIONED);
  const rows: (string | number)[][] = [];
  // Alternate the fills in halves so that neither has the quieter half of a shared machine.
  const half = Math.floor(wagers / 2);
  const plainFill = await fill(c, "w_plain", half, chunk);
  const partFill = await fill(c, "w_part", half, chunk);
  await c.query("TRUNCATE TABLE w_plain");
  await c.query("TRUNCATE TABLE w_part");
  const partFill2 = await fill(c, "w_part", wagers, chunk);
  const plainFill2 = await fill(c, "w_plain", wagers, chunk);
  rows.push([
    "insert (wagers/s), first half-size round, then full",
    `${fmt(half / plainFill, 0)} / ${fmt(wagers / plainFill2, 0)}`,
    `${fmt(half / partFill, 0)} / ${fmt(wagers / partFill2, 0)}`,
  ]);
  rows.push(["size MiB", fmt(await sizeMiB(c, "w_plain"), 1), fmt(await sizeMiB(c, "w_part"), 1)]);
  const [month] = await c.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM w_plain WHERE placed_at < ?", [
    MONTH_STARTS[1],
  ]);
  const idle = await whileQuerying(url, "w_plain", async () => {
    await new Promise((resolve) => setTimeout(resolve, 5_000));
  });
  const idlePart = await whileQuerying(url, "w_part", async () => {
    await new Promise((resolve) => setTimeout(resolve, 5_000));
  });
  const deleted = await whileQuerying(url, "w_plain", async (op) => {
    for (;;) {
      const [result] = await op.query<mysql.ResultSetHeader>(
        "DELETE FROM w_plain WHERE placed_at < ? ORDER BY id LIMIT 5000",
        [MONTH_STARTS[1]],
      );
      if (result.affectedRows < 5000) break;
    }
  });
  const dropped = await whileQuerying(url, "w_part", async (op) => {
    await op.query("ALTER TABLE w_part DROP PARTITION p0");
  });
  rows.push([
    `remove the oldest month (${Number(month[0]?.n).toLocaleString("en-US")} wagers), s`,
    `${fmt(deleted.seconds, 2)} (DELETE, batches of 5,000)`,
    `${fmt(dropped.seconds, 3)} (DROP PARTITION)`,
  ]);
  rows.push([
    "concurrent raw-edge query p50 / max ms (count), idle",
    `${fmt(idle.p50, 2)} / ${fmt(idle.max, 1)} (${idle.n})`,
    `${fmt(idlePart.p50, 2)} / ${fmt(idlePart.max, 1)} (${idlePart.n})`,
  ]);
  rows.push([
    "… during the removal",
    `${fmt(deleted.p50, 2)} / ${fmt(deleted.max, 1)} (${deleted.n})`,
    `${fmt(dropped.p50, 2)} / ${fmt(dropped.max, 1)} (${dropped.n})`,
  ]);
  rows.push(["size MiB after", fmt(await sizeMiB(c, "w_plain"), 1), fmt(await sizeMiB(c, "w_part"), 1)]);
  process.stdout.write(`${table(["", "plain (today's schema)", "partitioned by month"], rows)}\n`);
  await c.end();
}
