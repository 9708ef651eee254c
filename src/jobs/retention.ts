/**
 * The retention job (issue 38): every RETENTION_EVERY_S one instance of the fleet (the one that takes the
 * database's retention lock) deletes the webhook history past its window in batches of 1,000 rows, pausing between
 * batches so the delivery worker and the API never wait long. One info line when a run deleted something (a debug
 * line when it did not) and the `topwagers_retention_deleted_rows_total{table}` counter per run; `topwagers_retention_runs_total{result}` counts
 * each run this instance began (ok, failed, or skipped because another instance held the lock). Frozen race results and their signed copies
 * are never deleted (they are the record). Raw wagers and the hourly rollup are pruned only when their settings ask
 * (./wager-retention.ts); the other rollups are kept (docs/operations.md, "Retention").
 */
import { Counter, type Registry } from "prom-client";
import type { RetentionSettings } from "../platform/config.js";
import type { Database } from "../platform/database/database.js";
import type { Logger } from "../platform/logger.js";
import { describeConnection } from "../schema/instance-registry.js";
import { describeHorizon } from "../values/retention-horizon.js";
import { type PrunedRows, pruneWebhookBatch, withRetentionLock } from "../webhooks/sql/webhook-retention.js";
import { every } from "./every.js";
import { type PrunedWagers, pruneWagers, wagerRetentionMetrics } from "./wager-retention.js";

const BATCH = 1_000;
/** At most this many batches per run; the rest waits for the next run. */
const MAX_BATCHES = 500;
const PAUSE_BETWEEN_BATCHES_MS = 50;
const DAY_MS = 86_400_000;

/** What one run deleted: the webhook history, and (when WAGER_ or HOURLY_ROLLUP_RETENTION_DAYS is set) wagers. */
export type RetentionRun = PrunedRows & { readonly wagers?: PrunedWagers };

export interface RetentionJob {
  /** One run now (what the timer does); undefined when another instance holds the lock. */
  runOnce(nowMs?: number): Promise<RetentionRun | undefined>;
  stop(): Promise<void>;
}

export function startRetention(
  settings: RetentionSettings,
  database: Database,
  registry: Registry,
  logger: Logger,
  options: { readonly recheckAfterMs?: number } = {},
): RetentionJob {
  const deleted = new Counter({
    name: "topwagers_retention_deleted_rows_total",
    help: "Rows the retention job deleted on this instance, by table (webhook_deliveries, webhook_attempts, webhook_events).",
    labelNames: ["table"],
    registers: [registry],
  });
  for (const table of ["webhook_deliveries", "webhook_attempts", "webhook_events"]) deleted.inc({ table }, 0);
  const runs = retentionRuns(registry);
  const pruningWagers = settings.wagerDays > 0 || settings.hourlyDays > 0;
  const wagerMetrics = pruningWagers ? wagerRetentionMetrics(registry, deleted) : undefined;
  let stopped = false;
  const prune = async (nowMs: number): Promise<RetentionRun | undefined> =>
    withRetentionLock(database.write, async (connection) => {
      let started = Date.now();
      const pruned = await pruneInBatches(
        (cutoffs) => pruneWebhookBatch(connection, cutoffs, BATCH),
        settings,
        nowMs,
        () => stopped,
      );
      deleted.inc({ table: "webhook_deliveries" }, pruned.deliveries);
      deleted.inc({ table: "webhook_attempts" }, pruned.attempts);
      deleted.inc({ table: "webhook_events" }, pruned.events);
      // A line when something went; a run that found nothing is a debug line (one every RETENTION_EVERY_S).
      const said = pruned.deliveries + pruned.attempts + pruned.events > 0 ? "info" : "debug";
      logger[said]({ ...pruned, ms: Date.now() - started }, "retention: webhook history past its window deleted");
      if (wagerMetrics === undefined) return pruned;
      started = Date.now();
      const fleet = { ownConnections: () => database.connectionIds(), ...options };
      const wagers = await pruneWagers(connection, settings, Math.floor(nowMs / 1000), () => stopped, fleet);
      wagerMetrics.record(wagers);
      logWagerRun(logger, wagers, Date.now() - started);
      return { ...pruned, wagers };
    });
  const runOnce = (nowMs = Date.now()) => runs.counted(prune(nowMs));
  const job =
    settings.everySeconds > 0
      ? every(settings.everySeconds * 1000, () => runOnce(), {
          first: "after",
          onError: (error) => logger.warn({ err: error }, "retention run failed; the next run tries again"),
        })
      : undefined;
  return {
    runOnce,
    async stop() {
      stopped = true;
      await job?.stop();
    },
  };
}

/**
 * A wager run's lines: what it deleted (info, or debug when nothing), and why it waited, if it did (warn: while an
 * older release is connected, nothing is pruned at all).
 */
function logWagerRun(logger: Logger, run: PrunedWagers, ms: number): void {
  const { waiting, ...deleted } = run;
  logger[run.wagers + run.hourly > 0 ? "info" : "debug"](
    { ...deleted, ms },
    "retention: raw wagers and hourly rows before the horizon deleted",
  );
  if (run.lockedOut === true) {
    logger.info(
      { horizons: run.horizons },
      "retention: the first horizon is recorded; releases that cannot read it (before this one) can no longer start " +
        'on this database (docs/operations.md, "Version safety")',
    );
  }
  if (waiting?.reason === "unregistered_clients") {
    logger.warn(
      { reason: waiting.reason, connections: waiting.clients.map(describeConnection) },
      `retention: nothing pruned: ${waiting.clients.length} connection(s) to this database belong to no registered ` +
        "instance (an older release, which cannot read the retention horizon, or another client): " +
        `${waiting.clients.map(describeConnection).join("; ")}. Stop or upgrade them; \`topwagers instances\` lists ` +
        'them (docs/operations.md, "Version safety")',
    );
  } else if (waiting?.reason === "horizon_not_seen") {
    const who = waiting.instances.map((i) => `${i.id} (${i.release} on ${i.host}, pid ${i.pid})`);
    logger.warn(
      { reason: waiting.reason, instances: who },
      `retention: rows before the horizon ${describeHorizon(run.horizons.wagers || run.horizons.hourly)} are kept ` +
        `until every live instance has read it; not yet: ${who.join(", ")}`,
    );
  }
}

/** `topwagers_retention_runs_total{result}`: each run this instance began, counted once it ends. */
function retentionRuns(registry: Registry) {
  const runs = new Counter({
    name: "topwagers_retention_runs_total",
    help: "Retention runs this instance began, by result: ok, failed, or skipped (another instance held the lock).",
    labelNames: ["result"],
    registers: [registry],
  });
  for (const result of ["ok", "failed", "skipped"]) runs.inc({ result }, 0);
  return {
    /** The run's answer, counted: ok, skipped (undefined: the lock was another's), or failed (it threw). */
    async counted<T>(run: Promise<T | undefined>): Promise<T | undefined> {
      try {
        const answer = await run;
        runs.inc({ result: answer === undefined ? "skipped" : "ok" });
        return answer;
      } catch (error) {
        runs.inc({ result: "failed" });
        throw error;
      }
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
