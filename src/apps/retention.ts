/**
 * The retention job (issue 38): every RETENTION_EVERY_S one instance of the fleet (the one that takes the
 * database's retention lock) deletes the webhook history past its window in batches of 1,000 rows, pausing between
 * batches so the delivery worker and the API never wait long. One log line and the
 * `topwagers_retention_deleted_rows_total{table}` counter per run. Frozen race results and their signed copies
 * are never deleted (they are the record); wagers and the rollups are kept (docs/operations.md, "Retention").
 */
import { Counter, type Registry } from "prom-client";
import type { RetentionSettings } from "../config.js";
import type { Logger } from "../logger.js";
import type { Database } from "../storage/database.js";
import { type PrunedRows, pruneWebhookBatch, withRetentionLock } from "../storage/webhook-retention.js";

const BATCH = 1_000;
/** At most this many batches per run; the rest waits for the next run. */
const MAX_BATCHES = 500;
const PAUSE_BETWEEN_BATCHES_MS = 50;
const DAY_MS = 86_400_000;

export interface RetentionJob {
  /** One run now (what the timer does); undefined when another instance holds the lock. */
  runOnce(nowMs?: number): Promise<PrunedRows | undefined>;
  stop(): Promise<void>;
}

export function startRetention(
  settings: RetentionSettings,
  database: Database,
  registry: Registry,
  logger: Logger,
): RetentionJob {
  const deleted = new Counter({
    name: "topwagers_retention_deleted_rows_total",
    help: "Rows the retention job deleted on this instance, by table (webhook_deliveries, webhook_attempts, webhook_events).",
    labelNames: ["table"],
    registers: [registry],
  });
  for (const table of ["webhook_deliveries", "webhook_attempts", "webhook_events"]) deleted.inc({ table }, 0);
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;
  const runOnce = async (nowMs = Date.now()) => {
    const started = Date.now();
    const pruned = await withRetentionLock(database.write, (connection) =>
      pruneInBatches(
        (cutoffs) => pruneWebhookBatch(connection, cutoffs, BATCH),
        settings,
        nowMs,
        () => stopped,
      ),
    );
    if (pruned === undefined) return undefined;
    deleted.inc({ table: "webhook_deliveries" }, pruned.deliveries);
    deleted.inc({ table: "webhook_attempts" }, pruned.attempts);
    deleted.inc({ table: "webhook_events" }, pruned.events);
    logger.info({ ...pruned, ms: Date.now() - started }, "retention: webhook history past its window deleted");
    return pruned;
  };
  const tick = () => {
    running = runOnce().catch((error: unknown) => {
      logger.warn({ err: error }, "retention run failed; the next run tries again");
    });
  };
  const timer = settings.everySeconds > 0 ? setInterval(tick, settings.everySeconds * 1000) : undefined;
  timer?.unref();
  return {
    runOnce,
    async stop() {
      stopped = true;
      if (timer !== undefined) clearInterval(timer);
      await running;
    },
  };
}

async function pruneInBatches(
  batch: (cutoffs: {
    deliveredBeforeMs: number | undefined;
    failedBeforeMs: number | undefined;
  }) => Promise<PrunedRows>,
  settings: RetentionSettings,
  nowMs: number,
  stopped: () => boolean,
): Promise<PrunedRows> {
  const cutoffs = {
    deliveredBeforeMs: settings.deliveredDays > 0 ? nowMs - settings.deliveredDays * DAY_MS : undefined,
    failedBeforeMs: settings.failedDays > 0 ? nowMs - settings.failedDays * DAY_MS : undefined,
  };
  const total = { deliveries: 0, attempts: 0, events: 0 };
  for (let i = 0; i < MAX_BATCHES && !stopped(); i++) {
    const one = await batch(cutoffs);
    total.deliveries += one.deliveries;
    total.attempts += one.attempts;
    total.events += one.events;
    if (one.deliveries < BATCH) break;
    await new Promise((resolve) => setTimeout(resolve, PAUSE_BETWEEN_BATCHES_MS));
  }
  return total;
}
