/**
 * Pruning raw wagers and the hourly rollup (issue 38), off by default. The coarser rollups (daily, half-monthly,
 * monthly) already hold every wager (each wager is added to all four in its own transaction, ./wagers.ts), so
 * deleting the raw rows and the hourly rows of old days loses no total: boards of whole days, half-months and
 * months before the horizon answer exactly as before, and periods that need the deleted rows are refused
 * (../../values/retention-horizon.ts). Pruned wagers leave an 8-byte hash of their id (`pruned_wagers`), so a void of
 * one is refused instead of waiting forever as a void of a wager not yet seen (./voids.ts).
 *
 * A run first moves the horizons (recorded, never back), then deletes below a horizon only once it was recorded
 * PRUNE_GRACE_S before, so every instance has read it and refuses what the deletion would make wrong. A race not
 * final yet holds back only its own affiliate (`retention_holds`, planHorizons): one affiliate's race, however long,
 * never keeps another's rows.
 */
import type { PoolConnection, ResultSetHeader, RowDataPacket } from "mysql2/promise";
import { isMigrationApplied } from "../../platform/database/schema-record.js";
import { DAY, dayStart } from "../../values/calendar.js";
import type { HorizonKind, RetentionHorizons } from "../../values/retention-horizon.js";
import {
  GENERATION_ROW,
  horizonsOf,
  PRUNE_GRACE_S,
  RELEASED_HOLD,
  type RecordedHorizons,
  readHorizons,
} from "./retention-horizon.js";
import { WEIGHTED_SUM_MIGRATION } from "./weighted-backfill.js";

export interface WagerRetentionDays {
  /** WAGER_RETENTION_DAYS: raw wagers kept this many days; 0 forever. */
  readonly wagerDays: number;
  /** HOURLY_ROLLUP_RETENTION_DAYS: hourly rollup rows kept this many days; 0 forever. */
  readonly hourlyDays: number;
}

/** Why a run did not move a horizon as far as its setting asks (for everyone, or for some affiliates), if it did not. */
export type HeldBack = "weighted backfill not finished" | "race not final" | undefined;

export interface HorizonPlan {
  readonly target: RetentionHorizons;
  /** By affiliate (internal key): from which day its rows are kept, RELEASED_HOLD when no longer held. */
  readonly holds: ReadonlyMap<number, number>;
  readonly heldBack: HeldBack;
}

/**
 * Where the horizons may move at `now` (Unix seconds): each kind to the UTC day start `days` before now, never
 * back, and not at all before migration 12's backfill is recorded (until then boards read weights from the raw
 * wagers). A race not final yet (scheduled, live or in review: its freeze reads its period, whatever its times)
 * that started before them holds back its own affiliate alone: the affiliate keeps its rows from the day of its
 * earliest such race (never from before the horizon it had: a hold never brings back what may be gone). An
 * affiliate held before and held no more is released (RELEASED_HOLD). Read under the lock the caller's transaction
 * took on the horizons (lockHorizons), so no race is made meanwhile with a start the new horizons leave behind.
 */
export async function planHorizons(
  connection: PoolConnection,
  days: WagerRetentionDays,
  now: number,
  recorded: RecordedHorizons,
): Promise<HorizonPlan> {
  if (!(await isMigrationApplied(connection, WEIGHTED_SUM_MIGRATION))) {
    return { target: recorded, holds: new Map(), heldBack: "weighted backfill not finished" };
  }
  const wanted = (kind: HorizonKind, keptDays: number): number =>
    keptDays <= 0 ? recorded[kind] : Math.max(recorded[kind], dayStart(now - keptDays * DAY));
  const target = { wagers: wanted("wagers", days.wagerDays), hourly: wanted("hourly", days.hourlyDays) };
  const [open] = await connection.query<RowDataPacket[]>(
    `SELECT affiliate_id, MIN(start_ts) AS start FROM races WHERE cancelled_at IS NULL AND frozen_at IS NULL
      GROUP BY affiliate_id HAVING MIN(start_ts) < ?`,
    [Math.max(target.wagers, target.hourly)],
  );
  const holds = new Map<number, number>();
  for (const row of open) {
    const affiliate = Number(row.affiliate_id);
    const had = horizonsOf(recorded, affiliate);
    const from = Math.max(dayStart(Number(row.start)), had.wagers, had.hourly);
    if (from < target.wagers || from < target.hourly) holds.set(affiliate, from);
  }
  for (const affiliate of recorded.holds.keys()) if (!holds.has(affiliate)) holds.set(affiliate, RELEASED_HOLD);
  const holding = [...holds.values()].some((from) => from !== RELEASED_HOLD);
  return { target, holds, heldBack: holding ? "race not final" : undefined };
}

/**
 * Locks the recorded horizons for the run's plan and move (in the caller's transaction): a race's create reads them
 * with a shared lock in its own (races/sql/race-slugs.ts), so it waits for the move, or the plan sees its race.
 */
export async function lockHorizons(connection: PoolConnection): Promise<void> {
  await connection.query("SELECT kind FROM retention_horizons FOR UPDATE");
}

/**
 * Records the horizons that move forward (with `now` as their time; the others keep theirs) and the holds that
 * changed: a new or moved hold, a hold released, and a release every instance has read (PRUNE_GRACE_S) deleted.
 */
export async function moveHorizons(
  connection: PoolConnection,
  plan: HorizonPlan,
  recorded: RecordedHorizons,
  now: number,
): Promise<void> {
  let changed = false;
  for (const kind of ["wagers", "hourly"] as const) {
    changed ||= plan.target[kind] > recorded[kind];
    await connection.query(
      `INSERT INTO retention_horizons (kind, horizon, moved_at) VALUES (?, ?, ?)
       ON DUPLICATE KEY UPDATE moved_at = IF(VALUES(horizon) > horizon, VALUES(moved_at), moved_at),
                               horizon = GREATEST(horizon, VALUES(horizon))`,
      [kind, plan.target[kind], now],
    );
  }
  for (const [affiliate, heldFrom] of plan.holds) changed ||= recorded.holds.get(affiliate)?.heldFrom !== heldFrom;
  // A new generation for every change a server must read before rows below it go (../../jobs/wager-retention.ts).
  if (changed) {
    await connection.query(
      `INSERT INTO retention_horizons (kind, horizon, moved_at) VALUES (?, 1, ?)
       ON DUPLICATE KEY UPDATE horizon = horizon + 1, moved_at = VALUES(moved_at)`,
      [GENERATION_ROW, now],
    );
  }
  for (const [affiliate, heldFrom] of plan.holds) {
    const had = recorded.holds.get(affiliate);
    if (had?.heldFrom === RELEASED_HOLD && heldFrom === RELEASED_HOLD && now - had.movedAt >= PRUNE_GRACE_S) {
      await connection.query("DELETE FROM retention_holds WHERE affiliate_id = ? AND held_from = ?", [
        affiliate,
        RELEASED_HOLD,
      ]);
    } else if (had?.heldFrom !== heldFrom) {
      await connection.query(
        `INSERT INTO retention_holds (affiliate_id, held_from, moved_at) VALUES (?, ?, ?)
         ON DUPLICATE KEY UPDATE held_from = VALUES(held_from), moved_at = VALUES(moved_at)`,
        [affiliate, heldFrom, now],
      );
    }
  }
}

/** Below what each kind may be deleted at `now`: its horizon once recorded PRUNE_GRACE_S ago, else nothing. */
export function deletableBelow(recorded: RecordedHorizons, now: number): RetentionHorizons {
  const settled = (kind: HorizonKind) => (now - recorded.movedAt[kind] >= PRUNE_GRACE_S ? recorded[kind] : 0);
  return { wagers: settled("wagers"), hourly: settled("hourly") };
}

/**
 * Below what one affiliate's rows of `kind` may be deleted at `now`: the fleet's settled horizon, or its hold's day
 * when lower; nothing while its hold changed less than PRUNE_GRACE_S ago (an instance may still read the old one).
 */
export function affiliateDeletableBelow(
  recorded: RecordedHorizons,
  kind: HorizonKind,
  affiliateId: number,
  now: number,
): number {
  const below = deletableBelow(recorded, now)[kind];
  const hold = recorded.holds.get(affiliateId);
  if (hold === undefined) return below;
  return now - hold.movedAt >= PRUNE_GRACE_S ? Math.min(below, hold.heldFrom) : 0;
}

/**
 * Records that rows of `kind` below `below` are being deleted from now on (`pruned_below`, never lowered), before
 * the first batch deletes any: a refusal of them then says they "were deleted", before it "will be deleted".
 */
export async function markPruning(connection: PoolConnection, kind: HorizonKind, below: number): Promise<void> {
  await connection.query(
    "UPDATE retention_horizons SET pruned_below = GREATEST(pruned_below, ?) WHERE kind = ? AND horizon >= ?",
    [below, kind, below],
  );
}

/** The affiliates with rows of `table` older than `below` (read once per run: the batches go affiliate by affiliate). */
export async function affiliatesWithRowsBelow(
  connection: PoolConnection,
  kind: HorizonKind,
  below: number,
): Promise<number[]> {
  if (below <= 0) return [];
  const [rows] = await connection.query<RowDataPacket[]>(
    kind === "wagers"
      ? "SELECT id FROM affiliates a WHERE EXISTS (SELECT 1 FROM wagers w WHERE w.affiliate_id = a.id AND w.placed_at < ?) ORDER BY id"
      : "SELECT id FROM affiliates a WHERE EXISTS (SELECT 1 FROM wager_hourly h WHERE h.affiliate_id = a.id AND h.bucket < ?) ORDER BY id",
    [below],
  );
  return rows.map((r) => Number(r.id));
}

/**
 * Deletes up to `batch` rows of one affiliate below the horizon, in one short transaction (by the (affiliate, time)
 * index of each table, so it reads only what it deletes); returns how many. Wagers leave the hash of their id.
 * The horizon is read again under a shared lock: a row is deleted only below what is recorded for the affiliate.
 */
export async function pruneBatch(
  connection: PoolConnection,
  kind: HorizonKind,
  affiliateId: number,
  below: number,
  batch: number,
): Promise<number> {
  await connection.beginTransaction();
  try {
    const recorded = await readHorizons(connection, "shared");
    // Never below what is recorded as being pruned (markPruning), so every refusal of these rows says "were deleted".
    const limit = Math.min(below, horizonsOf(recorded, affiliateId)[kind], recorded.pruned[kind]);
    let deleted: number;
    if (kind === "hourly") {
      const [result] = await connection.query<ResultSetHeader>(
        "DELETE FROM wager_hourly WHERE affiliate_id = ? AND bucket < ? ORDER BY bucket LIMIT ?",
        [affiliateId, limit, batch],
      );
      deleted = result.affectedRows;
    } else {
      const [rows] = await connection.query<RowDataPacket[]>(
        "SELECT id FROM wagers WHERE affiliate_id = ? AND placed_at < ? ORDER BY placed_at LIMIT ? FOR UPDATE",
        [affiliateId, limit, batch],
      );
      const ids = rows.map((r) => String(r.id));
      deleted = 0;
      if (ids.length > 0) {
        await connection.query(
          `INSERT IGNORE INTO pruned_wagers (id_hash)
           SELECT ${PRUNED_ID_HASH} FROM wagers WHERE id IN (?)`,
          [ids],
        );
        const [result] = await connection.query<ResultSetHeader>("DELETE FROM wagers WHERE id IN (?)", [ids]);
        deleted = result.affectedRows;
      }
    }
    await connection.commit();
    return deleted;
  } catch (error) {
    await connection.rollback().catch(() => undefined);
    throw error;
  }
}

/** The 8 bytes kept of a pruned wager's platform id (the first 64 bits of its SHA-256): SQL of `external_id`. */
export const PRUNED_ID_HASH = "UNHEX(LEFT(SHA2(external_id, 256), 16))";
