/**
 * The retention job's second part (issue 38), run by ./retention.ts under the same lock when WAGER_RETENTION_DAYS
 * or HOURLY_ROLLUP_RETENTION_DAYS is set: move the horizons (../ingest/sql/wager-retention.ts says how far, and which
 * affiliates a race holds back), then delete below the horizons every instance has read, affiliate by affiliate in
 * batches of PRUNE_BATCH rows, each its own short transaction, pausing between batches so ingest and the API never
 * wait long.
 *
 * Version safety (issue 47): nothing moves and nothing goes while a connection to this database belongs to no live
 * registered process (../schema/instance-registry.ts): an older release registers nothing and cannot read the
 * horizons, so it would answer the pruned periods short. Rows go only once every live server has reported reading
 * the generation of the horizons they were settled in (its caches dropped what they refuse) and the change is
 * PRUNE_GRACE_S old. The first recorded horizon raises the release floor to this release and closes the schema record older
 * releases read (../platform/database/schema-record.ts), so that none of them starts on this database afterwards.
 */
import type { PoolConnection } from "mysql2/promise";
import { type Counter, Gauge, type Registry } from "prom-client";
import semver from "semver";
import { type RecordedHorizons, readHorizons } from "../ingest/sql/retention-horizon.js";
import {
  affiliateDeletableBelow,
  affiliatesWithRowsBelow,
  deletableBelow,
  type HeldBack,
  type HorizonPlan,
  lockHorizons,
  markPruning,
  moveHorizons,
  planHorizons,
  pruneBatch,
  type WagerRetentionDays,
} from "../ingest/sql/wager-retention.js";
import { closeLegacyRecord } from "../platform/database/schema-record.js";
import { packageInfo } from "../platform/package-info.js";
import {
  type ClientConnection,
  type LiveInstance,
  liveInstances,
  unregisteredConnections,
} from "../schema/instance-registry.js";
import { raiseReleaseFloor } from "../schema/release-floor.js";
import type { HorizonKind, RetentionHorizons } from "../values/retention-horizon.js";
import { HEARTBEAT_MS } from "./instance-heartbeat.js";

/** Rows per batch (one transaction). */
export const PRUNE_BATCH = 5_000;
/** At most this many batches per kind and run; the rest waits for the next run. */
const MAX_BATCHES = 1_000;
const PAUSE_BETWEEN_BATCHES_MS = 20;
/** The migration that made the horizons (named as the floor's setter, ../schema/schema-migrations.ts). */
const RETENTION_HORIZONS_MIGRATION = 17;
const KINDS = ["wagers", "hourly"] as const;

/** Why a run moved or deleted nothing it otherwise would have. */
export type RetentionWait =
  | { readonly reason: "unregistered_clients"; readonly clients: readonly ClientConnection[] }
  | { readonly reason: "horizon_not_seen"; readonly instances: readonly LiveInstance[] };

export const RETENTION_WAIT_REASONS = ["unregistered_clients", "horizon_not_seen"] as const;

export interface PrunedWagers {
  /** Raw wagers deleted by this run. */
  readonly wagers: number;
  /** Hourly rollup rows deleted by this run. */
  readonly hourly: number;
  /** The horizons recorded after this run (Unix seconds; 0: nothing of that kind pruned). */
  readonly horizons: RetentionHorizons;
  /** Why a horizon stayed behind its setting, if it did. */
  readonly heldBack: HeldBack;
  /** Who kept this run from moving the horizons or deleting below them, if anyone did. */
  readonly waiting?: RetentionWait;
  /** Whether this run closed the schema record older releases read (the first recorded horizon). */
  readonly lockedOut?: boolean;
}

/** The other users of the database, as the run sees them. */
export interface FleetView {
  /** This process's own connections (it is not in the way of itself). */
  ownConnections(): readonly number[];
  /** How long to wait before looking again at connections no row names; default a heartbeat and a second. */
  readonly recheckAfterMs?: number;
}

const TABLE_OF: Readonly<Record<HorizonKind, string>> = { wagers: "wagers", hourly: "wager_hourly" };

export function wagerRetentionMetrics(registry: Registry, deleted: Counter<"table">) {
  const horizon = new Gauge({
    name: "topwagers_retention_horizon_seconds",
    help: "The retention horizon by kind (wagers, hourly): rows before this Unix time may be deleted; 0 none are.",
    labelNames: ["kind"],
    registers: [registry],
  });
  const blocked = new Gauge({
    name: "topwagers_retention_blocked",
    help:
      "1 while this instance's last retention run could not prune because of the reason: unregistered_clients " +
      "(a connection of a client that did not register, an older release) or horizon_not_seen (a live instance has " +
      "not read the horizons yet).",
    labelNames: ["reason"],
    registers: [registry],
  });
  for (const kind of KINDS) {
    deleted.inc({ table: TABLE_OF[kind] }, 0);
    horizon.set({ kind }, 0);
  }
  for (const reason of RETENTION_WAIT_REASONS) blocked.set({ reason }, 0);
  return {
    record(run: PrunedWagers): void {
      deleted.inc({ table: "wagers" }, run.wagers);
      deleted.inc({ table: "wager_hourly" }, run.hourly);
      horizon.set({ kind: "wagers" }, run.horizons.wagers);
      horizon.set({ kind: "hourly" }, run.horizons.hourly);
      for (const reason of RETENTION_WAIT_REASONS) blocked.set({ reason }, run.waiting?.reason === reason ? 1 : 0);
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
  fleet: FleetView,
): Promise<PrunedWagers> {
  const clients = await clientsInTheWay(connection, fleet);
  if (clients.length > 0) {
    const before = await readHorizons(connection);
    const waiting = { reason: "unregistered_clients", clients } as const;
    return { wagers: 0, hourly: 0, horizons: horizonsOf(before), heldBack: undefined, waiting };
  }
  // Whatever this run may delete was settled before it: every server must have read the generation it starts on.
  const { generation } = await readHorizons(connection);
  const plan = await planAndMove(connection, days, now);
  const recorded = await readHorizons(connection);
  const lockedOut = recorded.wagers > 0 || recorded.hourly > 0 ? await lockOutOlderReleases(connection, now) : false;
  const behind = await serversBehind(connection, generation);
  const deleted = { wagers: 0, hourly: 0 };
  if (behind.length === 0) {
    for (const kind of KINDS) deleted[kind] = await deleteBelow(connection, kind, recorded, now, stopped);
  }
  return {
    ...deleted,
    horizons: horizonsOf(recorded),
    heldBack: plan.heldBack,
    ...(behind.length > 0 ? { waiting: { reason: "horizon_not_seen", instances: behind } } : {}),
    ...(lockedOut ? { lockedOut } : {}),
  };
}

function horizonsOf(recorded: RecordedHorizons): RetentionHorizons {
  return { wagers: recorded.wagers, hourly: recorded.hourly };
}

/**
 * The connections to this database that belong to no live registered process, and still do not a heartbeat later
 * (a process that just opened one reports it at its next beat): clients that cannot read the horizons.
 */
async function clientsInTheWay(connection: PoolConnection, fleet: FleetView): Promise<ClientConnection[]> {
  const first = await unregisteredConnections(connection, fleet.ownConnections());
  if (first.length === 0) return [];
  await new Promise((resolve) => setTimeout(resolve, fleet.recheckAfterMs ?? HEARTBEAT_MS + 1_000));
  const seen = new Set(first.map((c) => c.id));
  return (await unregisteredConnections(connection, fleet.ownConnections())).filter((c) => seen.has(c.id));
}

/**
 * Releases before this one know no horizons and would answer the pruned periods short: the floor rises to this
 * release (those that read it refuse to start) and the record those before the floor read is closed (they find no
 * schema). Answers whether the record was closed by this call.
 */
async function lockOutOlderReleases(connection: PoolConnection, now: number): Promise<boolean> {
  const release = packageInfo().version;
  if (semver.valid(release) !== null) await raiseReleaseFloor(connection, release, RETENTION_HORIZONS_MIGRATION);
  const day = new Date(now * 1000).toISOString().slice(0, 10);
  return closeLegacyRecord(
    connection,
    `closed by retention on ${day}: a release that reads this table cannot read the retention horizon ` +
      '(docs/operations.md, "Version safety")',
  );
}

/**
 * The live servers that have not reported reading the horizons' generation `generation` (none before any change).
 * What a run deletes is settled (PRUNE_GRACE_S old), so it was in the generation the run started on; the run's own
 * changes are read by the servers before the next run may delete below them.
 */
async function serversBehind(connection: PoolConnection, generation: number): Promise<LiveInstance[]> {
  if (generation === 0) return [];
  return (await liveInstances(connection)).filter(
    (i) => i.horizons !== undefined && i.horizons.generation < generation,
  );
}

/**
 * Deletes rows of `kind` below what is settled for each affiliate (its horizon or its hold, changed PRUNE_GRACE_S
 * ago), at most MAX_BATCHES batches; first records that rows below the fleet's settled horizon are going.
 */
async function deleteBelow(
  connection: PoolConnection,
  kind: HorizonKind,
  recorded: RecordedHorizons,
  now: number,
  stopped: () => boolean,
): Promise<number> {
  const below = deletableBelow(recorded, now)[kind];
  if (below <= 0) return 0;
  await markPruning(connection, kind, below);
  let deleted = 0;
  let batches = 0;
  for (const affiliate of await affiliatesWithRowsBelow(connection, kind, below)) {
    const affiliateBelow = affiliateDeletableBelow(recorded, kind, affiliate, now);
    for (;;) {
      if (stopped() || batches >= MAX_BATCHES) return deleted;
      if (affiliateBelow <= 0) break;
      batches += 1;
      const n = await pruneBatch(connection, kind, affiliate, affiliateBelow, PRUNE_BATCH);
      deleted += n;
      await new Promise((resolve) => setTimeout(resolve, PAUSE_BETWEEN_BATCHES_MS));
      if (n < PRUNE_BATCH) break;
    }
  }
  return deleted;
}
