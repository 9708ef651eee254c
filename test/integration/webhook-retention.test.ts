/**
 * Retention of the webhook history (issue 38): with the default windows (delivered 30 days, failed 90 days) one run
 * deletes the finished deliveries past their window with their attempts, and an event once none of its deliveries
 * is left; pending deliveries, recent ones and failed ones inside their longer window stay. Several batches in one
 * run; one instance at a time (the lock); a log line and the counter per run; each run counted by its result
 * (ok, skipped while another holds the lock, failed), what the RetentionStuck alert reads (deploy/monitoring/).
 */
import { Writable } from "node:stream";
import type { RowDataPacket } from "mysql2/promise";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { startRetention } from "../../src/jobs/retention.js";
import { createLogger } from "../../src/platform/logger.js";
import { useTestDatabase } from "../support/database.js";

const NOW_MS = 1_800_000_000_000;
const DAY_MS = 86_400_000;
const SETTINGS = { deliveredDays: 30, failedDays: 90, everySeconds: 0, wagerDays: 0, hourlyDays: 0 };

function capturedLogger(level: "info" | "debug" = "info") {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const text of chunk.toString("utf8").split("\n")) {
        if (text !== "") lines.push(JSON.parse(text) as Record<string, unknown>);
      }
      callback();
    },
  });
  return { logger: createLogger(level, sink), lines };
}

describe("webhook history retention", () => {
  const database = useTestDatabase("webhook_retention");
  const pool = () => database.db.write;

  async function endpoint(): Promise<void> {
    await pool().query("INSERT INTO affiliates (external_id, created_at) VALUES ('aff-retention', 0)");
    await pool().query(
      `INSERT INTO webhook_endpoints (id, affiliate_id, url, event_types, secret, created_at, updated_at)
       SELECT 'ep_1', id, 'https://receiver.example/hook', '["race.ended"]', 'whsec', 0, 0 FROM affiliates`,
    );
  }

  /** An event with id `event` (made when first named) and a delivery `id` in `state`, finished `daysAgo`, with two attempts. */
  async function delivery(id: number, event: number, state: string, daysAgo: number): Promise<void> {
    await pool().query(
      `INSERT IGNORE INTO webhook_events (id, message_id, affiliate_id, type, body, created_at)
       SELECT ?, CONCAT('msg_', ?), id, 'race.ended', '{}', 0 FROM affiliates`,
      [event, event],
    );
    const at = NOW_MS - daysAgo * DAY_MS;
    await pool().query(
      `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, state, attempts, max_attempts, next_attempt_at_ms,
         delivered_at_ms, failed_at_ms, created_at)
       VALUES (?, ?, 'ep_1', ?, 2, 10, ?, ?, ?, 0)`,
      [
        id,
        event,
        state,
        state === "pending" ? at : null,
        state === "delivered" ? at : null,
        state === "failed" ? at : null,
      ],
    );
    await pool().query(
      `INSERT INTO webhook_attempts (delivery_id, attempt, started_at_ms, duration_ms, status) VALUES (?, 1, ?, 5, 500), (?, 2, ?, 5, 200)`,
      [id, at, id, at],
    );
  }

  async function ids(sql: string): Promise<number[]> {
    const [rows] = await pool().query<RowDataPacket[]>(sql);
    return rows.map((r) => Number(r.id));
  }

  it("deletes what is past its window, keeps the rest, logs one line and counts by table", async () => {
    await endpoint();
    await delivery(1, 1, "delivered", 31); // gone, with its event
    await delivery(2, 2, "delivered", 29);
    await delivery(3, 3, "failed", 31); // failed ones are kept 90 days
    await delivery(4, 4, "failed", 91); // gone, with its event
    await delivery(5, 5, "pending", 400); // never touched
    await delivery(6, 6, "delivered", 40); // gone; event 6 stays for delivery 7
    await delivery(7, 6, "failed", 10);
    const { logger, lines } = capturedLogger();
    const registry = new Registry();
    const job = startRetention(SETTINGS, database.db, registry, logger);
    expect(await job.runOnce(NOW_MS)).toEqual({ deliveries: 3, attempts: 6, events: 2 });
    await job.stop();
    expect(await ids("SELECT id FROM webhook_deliveries ORDER BY id")).toEqual([2, 3, 5, 7]);
    expect(await ids("SELECT id FROM webhook_events ORDER BY id")).toEqual([2, 3, 5, 6]);
    expect(await ids("SELECT DISTINCT delivery_id AS id FROM webhook_attempts ORDER BY id")).toEqual([2, 3, 5, 7]);
    expect(lines.map((l) => [l.level, l.msg, l.deliveries, l.attempts, l.events])).toEqual([
      [30, "retention: webhook history past its window deleted", 3, 6, 2],
    ]);
    const counted = (await registry.getSingleMetric("topwagers_retention_deleted_rows_total")?.get())?.values;
    expect(counted?.map((v) => [v.labels.table, v.value])).toEqual([
      ["webhook_deliveries", 3],
      ["webhook_attempts", 6],
      ["webhook_events", 2],
    ]);
  });

  it("a window of 0 keeps that kind forever; a run that deletes nothing says so at debug level only", async () => {
    const { logger, lines } = capturedLogger("debug");
    const job = startRetention({ ...SETTINGS, failedDays: 0 }, database.db, new Registry(), logger);
    await delivery(8, 8, "failed", 5_000);
    expect(await job.runOnce(NOW_MS)).toEqual({ deliveries: 0, attempts: 0, events: 0 });
    expect(await ids("SELECT id FROM webhook_deliveries WHERE id = 8")).toEqual([8]);
    expect(lines.map((l) => [l.level, l.msg, l.deliveries])).toEqual([
      [20, "retention: webhook history past its window deleted", 0],
    ]);
  });

  it("2,500 old deliveries go in one run (three batches); a second instance skips while the lock is held", async () => {
    const old = NOW_MS - 60 * DAY_MS;
    await pool().query(
      `INSERT INTO webhook_events (id, message_id, affiliate_id, type, body, created_at)
       SELECT 1000 + seq, CONCAT('msg_bulk_', seq), (SELECT id FROM affiliates), 'race.ended', '{}', 0 FROM seq_1_to_2500`,
    );
    await pool().query(
      `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, state, attempts, max_attempts, delivered_at_ms, created_at)
       SELECT 1000 + seq, 1000 + seq, 'ep_1', 'delivered', 1, 10, ?, 0 FROM seq_1_to_2500`,
      [old],
    );
    const registry = new Registry();
    const job = startRetention(SETTINGS, database.db, registry, createLogger("silent"));
    expect(await runs(registry)).toEqual({ ok: 0, failed: 0, skipped: 0 });
    const holder = await pool().getConnection();
    try {
      await holder.query("SELECT GET_LOCK(CONCAT('topwagers_retention:', DATABASE()), 0)");
      expect(await job.runOnce(NOW_MS)).toBeUndefined();
      await holder.query("SELECT RELEASE_LOCK(CONCAT('topwagers_retention:', DATABASE()))");
    } finally {
      holder.release();
    }
    // With delivery 8 (failed 5,000 days ago, kept by the run before with a window of 0) and its two attempts.
    expect(await job.runOnce(NOW_MS)).toEqual({ deliveries: 2_501, attempts: 2, events: 2_501 });
    expect(await ids("SELECT id FROM webhook_deliveries WHERE id >= 1000")).toEqual([]);
    expect(await runs(registry)).toEqual({ ok: 1, failed: 0, skipped: 1 });
  });

  it("a run the database refuses is counted as failed, and the lock is free for the next", async () => {
    await delivery(9, 9, "delivered", 40);
    await pool().query(
      "CREATE TRIGGER refuse_delivery_delete BEFORE DELETE ON webhook_deliveries FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused by the test'",
    );
    const registry = new Registry();
    const job = startRetention(SETTINGS, database.db, registry, createLogger("silent"));
    try {
      await expect(job.runOnce(NOW_MS)).rejects.toThrow("refused by the test");
    } finally {
      await pool().query("DROP TRIGGER refuse_delivery_delete");
    }
    expect(await runs(registry)).toEqual({ ok: 0, failed: 1, skipped: 0 });
    expect(await job.runOnce(NOW_MS)).toEqual({ deliveries: 1, attempts: 2, events: 1 });
    expect(await runs(registry)).toEqual({ ok: 1, failed: 1, skipped: 0 });
  });
});

/** topwagers_retention_runs_total by result. */
async function runs(registry: Registry): Promise<Record<string, number>> {
  const values = (await registry.getSingleMetric("topwagers_retention_runs_total")?.get())?.values ?? [];
  return Object.fromEntries(values.map((v) => [String(v.labels.result), v.value]));
}
