/**
 * Storage scenario (issue 38): what every table costs per wager on the seeded data set (its own
 * topwagers_storage_<size>, seeded once like the query bench's: retention deletes from it), before and after the
 * retention job prunes raw wagers and hourly rows and after OPTIMIZE TABLE (./storage-retention.ts), and what the
 * webhook history costs per delivery before and after the retention job deletes it.
 *
 *   npm run bench -- storage [--wagers 5000000] [--deliveries 100000] [--wager-days 90] [--hourly-days 30]
 *
 * Sizes are InnoDB's own (information_schema.TABLES after ANALYZE TABLE: data and index pages in use), so they
 * include page fill and fragmentation as a real database has them.
 */
import { parseArgs } from "node:util";
import type { RowDataPacket } from "mysql2/promise";
import { Registry } from "prom-client";
import { startRetention } from "../src/jobs/retention.js";
import { type Database, openDatabase } from "../src/platform/database/database.js";
import { createLogger } from "../src/platform/logger.js";
import { migrate } from "../src/schema/migration-runner.js";
import { databaseUrl, ensureSeeded } from "./query.js";
import { pruneAsTheServiceWould } from "./storage-retention.js";
import { fmt, machineDescription, table } from "./support.js";

const DAY_MS = 86_400_000;

interface TableSize {
  readonly name: string;
  readonly rows: number;
  readonly data: number;
  readonly index: number;
}

async function tableSizes(db: Database): Promise<TableSize[]> {
  const [names] = await db.write.query<RowDataPacket[]>(
    "SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE'",
  );
  for (const row of names) await db.write.query(`ANALYZE TABLE \`${String(row.name)}\``);
  const [rows] = await db.write.query<RowDataPacket[]>(
    `SELECT TABLE_NAME AS name, TABLE_ROWS AS n, DATA_LENGTH AS data, INDEX_LENGTH AS idx
       FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE'
      ORDER BY DATA_LENGTH + INDEX_LENGTH DESC`,
  );
  return rows.map((r) => ({ name: String(r.name), rows: Number(r.n), data: Number(r.data), index: Number(r.idx) }));
}

/** `count` delivered deliveries 40 days old, each with its event (a 1 KB body) and one attempt. */
async function addWebhookHistory(db: Database, count: number, nowMs: number): Promise<void> {
  await db.write.query("INSERT IGNORE INTO affiliates (external_id, created_at) VALUES ('bench-storage', 0)");
  await db.write.query(
    `INSERT IGNORE INTO webhook_endpoints (id, affiliate_id, url, event_types, secret, created_at, updated_at)
     SELECT 'ep_bench_storage', id, 'https://receiver.example/hook', '["race.finalized"]', REPEAT('s', 60), 0, 0
       FROM affiliates WHERE external_id = 'bench-storage'`,
  );
  const at = nowMs - 40 * DAY_MS;
  for (let done = 0; done < count; done += 10_000) {
    const n = Math.min(10_000, count - done);
    await db.write.query(
      `INSERT INTO webhook_events (message_id, affiliate_id, type, body, created_at)
       SELECT CONCAT('msg_bench_', ?, '_', seq), (SELECT id FROM affiliates WHERE external_id = 'bench-storage'),
              'race.finalized', REPEAT('x', 1000), 0 FROM seq_1_to_${n}`,
      [done],
    );
    await db.write.query(
      `INSERT INTO webhook_deliveries (event_id, endpoint_id, state, attempts, max_attempts, delivered_at_ms,
         last_status, created_at)
       SELECT id, 'ep_bench_storage', 'delivered', 1, 10, ?, 200, 0 FROM webhook_events
        WHERE message_id LIKE CONCAT('msg_bench_', ?, '\\_%')`,
      [at, done],
    );
  }
  await db.write.query(
    `INSERT INTO webhook_attempts (delivery_id, attempt, started_at_ms, duration_ms, status, response, instance)
     SELECT id, 1, delivered_at_ms, 40, 200, REPEAT('r', 100), 'bench:1' FROM webhook_deliveries
      WHERE endpoint_id = 'ep_bench_storage'`,
  );
}

function sizeRows(sizes: readonly TableSize[], per: number): (string | number)[][] {
  return sizes.map((t) => [
    t.name,
    t.rows.toLocaleString("en-US"),
    fmt(t.data / 2 ** 20, 1),
    fmt(t.index / 2 ** 20, 1),
    fmt((t.data + t.index) / per, 1),
  ]);
}

export async function runStorageBench(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      wagers: { type: "string", default: "5000000" },
      deliveries: { type: "string", default: "100000" },
      "wager-days": { type: "string", default: "90" },
      "hourly-days": { type: "string", default: "30" },
    },
  });
  const wagers = Number(values.wagers);
  const deliveries = Number(values.deliveries);
  const url = databaseUrl(wagers).replace("/topwagers_bench_", "/topwagers_storage_");
  await ensureSeeded(url, wagers);
  const db = await openDatabase({ url, poolSize: 2, queryTimeoutMs: 3_600_000 });
  try {
    await migrate(db.write);
    const [count] = await db.write.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM wagers");
    const [pruned] = await db.write.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM pruned_wagers");
    const exact = Number(count[0]?.n) + Number(pruned[0]?.n);
    process.stdout.write(`${await machineDescription(url)}\n${exact.toLocaleString("en-US")} wagers (exact count)\n\n`);
    const wagerTable = async (title: string) => {
      const sizes = (await tableSizes(db)).filter((t) => !t.name.startsWith("webhook_"));
      const headers = ["table", "rows (estimate)", "data MiB", "index MiB", "bytes per wager"];
      const total = sizes.reduce((sum, t) => sum + t.data + t.index, 0);
      process.stdout.write(`${title}\n${table(headers, sizeRows(sizes, exact))}\n`);
      process.stdout.write(`total ${fmt(total / 2 ** 20, 1)} MiB, ${fmt(total / exact, 1)} bytes per wager\n\n`);
    };
    if (Number(pruned[0]?.n) > 0) {
      process.stdout.write(`${url} was pruned by an earlier run: drop it to measure again from the seed\n`);
    } else {
      await wagerTable("as seeded:");
      const wagerDays = Number(values["wager-days"]);
      const hourlyDays = Number(values["hourly-days"]);
      process.stdout.write(await pruneAsTheServiceWould(db, { wagerDays, hourlyDays }));
      await wagerTable("after retention (InnoDB keeps the freed pages until reused):");
      const started = Date.now();
      for (const t of ["wagers", "wager_hourly", "pruned_wagers"]) await db.write.query(`OPTIMIZE TABLE ${t}`);
      await wagerTable(
        `after OPTIMIZE TABLE wagers, wager_hourly, pruned_wagers (${fmt((Date.now() - started) / 1000, 1)} s):`,
      );
    }
    if (deliveries > 0) await webhookSection(db, deliveries);
  } finally {
    await db.close();
  }
}

async function webhookSection(db: Database, deliveries: number): Promise<void> {
  const nowMs = Date.now();
  await db.write.query("DELETE FROM webhook_attempts");
  await db.write.query("DELETE FROM webhook_deliveries");
  await db.write.query("DELETE FROM webhook_events");
  await addWebhookHistory(db, deliveries, nowMs);
  const webhookTables = async () => (await tableSizes(db)).filter((t) => t.name.startsWith("webhook_"));
  const headers = ["table", "rows (estimate)", "data MiB", "index MiB", "bytes per delivery"];
  const before = await webhookTables();
  process.stdout.write(`webhook history: ${deliveries} delivered deliveries, 40 days old (1 KB events, one attempt)\n`);
  process.stdout.write(`${table(headers, sizeRows(before, deliveries))}\n`);
  const job = startRetention(
    { deliveredDays: 30, failedDays: 90, everySeconds: 0, wagerDays: 0, hourlyDays: 0 },
    db,
    new Registry(),
    createLogger("silent"),
  );
  let started = Date.now();
  let runs = 0;
  for (;;) {
    runs += 1;
    const pruned = await job.runOnce(nowMs);
    if (pruned === undefined || pruned.deliveries === 0) break;
  }
  const seconds = (Date.now() - started) / 1000;
  await job.stop();
  process.stdout.write(
    `retention (defaults): ${runs} runs, ${fmt(seconds, 1)} s, ${fmt(deliveries / seconds, 0)} deliveries/s\n`,
  );
  process.stdout.write(`${table(headers, sizeRows(await webhookTables(), deliveries))}\n`);
  started = Date.now();
  for (const t of ["webhook_events", "webhook_deliveries", "webhook_attempts"])
    await db.write.query(`OPTIMIZE TABLE ${t}`);
  process.stdout.write(`after OPTIMIZE TABLE (${fmt((Date.now() - started) / 1000, 1)} s):\n`);
  process.stdout.write(`${table(headers, sizeRows(await webhookTables(), deliveries))}\n`);
}
