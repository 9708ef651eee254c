/**
 * The retention job's second part (issue 38), run by ./retention.ts under the same lock when WAGER_RETENTION_DAYS
 * or HOURLY_ROLLUP_RETENTION_DAYS is set: move the horizons (../ingest/sql/wager-retention.ts says how far), then
 * delete below the horizons every instance has had time to read, affiliate by affiliate in batches of
 * PRUNE_BATCH rows, each its own short transaction, pausing between batches so ingest and the API never wait long.
 */
import type { PoolConnection } from "mysql2/promise";
import { type Counter, Gauge, type Registry } from "prom-client";
import semver from "semver";
import { readHorizons } from "../ingest/sql/retention-horizon.js";
import {
  affiliateDeletableBelow,
  affiliatesWithRowsBelow,
  deletableBelow,
  type HeldBack,
  type HorizonPlan,
  lockHorizons,
  moveHorizons,
  planHorizons,
  pruneBatch,
  type WagerRetentionDays,
} from "../ingest/sql/wager-retention.js";
import { packageInfo } from "../platform/package-info.js";
import { raiseReleaseFloor } from "../schema/release-floor.js";
import type { HorizonKind, RetentionHorizons } from "../values/retention-horizon.js";

/** Rows per batch (one transaction). */
export const PRUNE_BATCH = 5_000;
/** At most this many batches per kind and run; the rest waits for the next run. */
const MAX_BATCHES = 1_000;
const PAUSE_BETWEEN_BATCHES_MS = 20;
/** The migration that made the horizons (named as the floor's setter, ../schema/schema-migrations.ts). */
const RETENTION_HORIZONS_MIGRATION = 17;

export interface PrunedWagers {
  /** Raw wagers deleted by this run. */
  readonly wagers: number;
  /** Hourly rollup rows deleted by this run. */
  readonly hourly: number;
  /** The horizons recorded after this run (Unix seconds; 0: nothing of that kind pruned). */
  readonly horizons: RetentionHorizons;
  /** Why a horizon stayed behind its setting, if it did. */
  readonly heldBack: HeldBack;
}

const TABLE_OF: Readonly<Record<HorizonKind, string>> = { wagers: "wagers", hourly: "wager_hourly" };

export function wagerRetentionMetrics(registry: Registry, deleted: Counter<"table">) {
  const horizon = new Gauge({
    name: "topwagers_retention_horizon_seconds",
    help: "The retention horizon by kind (wagers, hourly): rows before this Unix time may be deleted; 0 none are.",
    labelNames: ["kind"],
    registers: [registry],
  });
  for (const kind of ["wagers", "hourly"] as const) {
    deleted.inc({ table: TABLE_OF[kind] }, 0);
    horizon.set({ kind }, 0);
  }
  return {
    record(run: PrunedWagers): void {
      deleted.inc({ table: "wagers" }, run.wagers);
      deleted.inc({ table: "wager_hourly" }, run.hourly);
      horizon.set({ kind: "wagers" }, run.horizons.wagers);
      horizon.set({ kind: "hourly" }, run.horizons.hourly);
    },
  };
}

/**
 * The run's plan and the horizons' move, in one transaction that first locks the horizons: a race created
 * meanwhile either waits for the move (and is then refused a start before it) or is seen by the plan.
 */
async function planAndMove(connection: PoolConnection, days: WagerRetentionDays, now: number): Promise<HorizonPlan> {
  await connection.beginTransaction();
  try {
    await lockHorizons(connection);
    const before = await readHorizons(connection, "shared");
    const plan = await planHorizons(connection, days, now, before);
    await moveHorizons(connection, plan, before, now);
    await connection.commit();
    return plan;
  } catch (error) {
    await connection.rollback().catch(() => undefined);
    throw error;
  }
}

/** One run at `now` (Unix seconds): moves the horizons, then deletes what is settled below them for each affiliate. */
export async function pruneWagers(
  connection: PoolConnection,
  days: WagerRetentionDays,
  now: number,
  stopped: () => boolean,
): Promise<PrunedWagers> {
  const plan = await planAndMove(connection, days, now);
  const recorded = await readHorizons(connection);
  const release = packageInfo().version;
  if ((recorded.wagers > 0 || recorded.hourly > 0) && semver.valid(release) !== null) {
    // Releases before this one know no horizons and would answer the pruned periods short: they may no longer start.
    await raiseReleaseFloor(connection, release, RETENTION_HORIZONS_MIGRATION);
  }
  const below = deletableBelow(recorded, now);
  const deleted = { wagers: 0, hourly: 0 };
  for (const kind of ["wagers", "hourly"] as const) {
    let batches = 0;
    for (const affiliate of await affiliatesWithRowsBelow(connection, kind, below[kind])) {
      const affiliateBelow = affiliateDeletableBelow(recorded, kind, affiliate, now);
      for (;;) {
        if (stopped() || batches >= MAX_BATCHES || affiliateBelow <= 0) break;
        batches += 1;
        const n = await pruneBatch(connection, kind, affiliate, affiliateBelow, PRUNE_BATCH);
        deleted[kind] += n;
        await new Promise((resolve) => setTimeout(resolve, PAUSE_BETWEEN_BATCHES_MS));
        if (n < PRUNE_BATCH) break;
      }
    }
  }
  return { ...deleted, horizons: { wagers: recorded.wagers, hourly: recorded.hourly }, heldBack: plan.heldBack };
}
