/**
 * Pruning raw wagers and the hourly rollup (issue 38), off by default. The coarser rollups (daily, half-monthly,
 * monthly) already hold every wager (each wager is added to all four in its own transaction, ./wagers.ts), so
 * deleting the raw rows and the hourly rows of old days loses no total: boards of whole days, half-months and
 * months before the horizon answer exactly as before, and periods that need the deleted rows are refused
 * (../../values/retention-horizon.ts). Pruned wagers leave an 8-byte hash of their id (`pruned_wagers`), so a void of
 * one is refused instead of waiting forever as a void of a wager not yet seen (./voids.ts).
 *
 * A run first moves the horizons (recorded, never back), then deletes below a horizon only once it was recorded
 * PRUNE_GRACE_S before, so every instance has read it and refuses what the deletion would make wrong.
 */
import type { PoolConnection, ResultSetHeader, RowDataPacket } from "mysql2/promise";
import { DAY, dayStart } from "../../values/calendar.js";
import type { HorizonKind, RetentionHorizons } from "../../values/retention-horizon.js";
import { PRUNE_GRACE_S, type RecordedHorizons, readHorizons } from "./retention-horizon.js";
import { WEIGHTED_SUM_MIGRATION } from "./weighted-backfill.js";

export interface WagerRetentionDays {
  /** WAGER_RETENTION_DAYS: raw wagers kept this many days; 0 forever. */
  readonly wagerDays: number;
  /** HOURLY_ROLLUP_RETENTION_DAYS: hourly rollup rows kept this many days; 0 forever. */
  readonly hourlyDays: number;
}

/** Why a run did not move a horizon as far as its setting asks, if it did not. */
export type HeldBack = "weighted backfill not finished" | "race not final" | undefined;

export interface HorizonPlan {
  readonly target: RetentionHorizons;
  readonly heldBack: HeldBack;
}

/**
 * Where the horizons may move at `now` (Unix seconds): each kind to the UTC day start `days` before now, but never
 * past the day of the earliest start of a race not final yet (scheduled, live or in review: its freeze reads its
 * period, whatever its times), never back, and not at all before migration 12's backfill is recorded (until then
 * boards read weights from the raw wagers).
 */
export async function planHorizons(
  connection: PoolConnection,
  days: WagerRetentionDays,
  now: number,
  recorded: RetentionHorizons,
): Promise<HorizonPlan> {
  const [backfill] = await connection.query<RowDataPacket[]>("SELECT 1 FROM schema_migrations WHERE version = ?", [
    WEIGHTED_SUM_MIGRATION,
  ]);
  if (backfill.length === 0) return { target: recorded, heldBack: "weighted backfill not finished" };
  const [open] = await connection.query<RowDataPacket[]>(
    "SELECT MIN(start_ts) AS start FROM races WHERE cancelled_at IS NULL AND frozen_at IS NULL",
  );
  const openStart = open[0]?.start === null || open[0]?.start === undefined ? Infinity : Number(open[0].start);
  let heldBack: HeldBack;
  const target = (kind: HorizonKind, keptDays: number): number => {
    if (keptDays <= 0) return recorded[kind];
    let wanted = dayStart(now - keptDays * DAY);
    if (openStart < wanted) {
      wanted = dayStart(openStart);
      heldBack = "race not final";
    }
    return Math.max(recorded[kind], wanted);
  };
  return { target: { wagers: target("wagers", days.wagerDays), hourly: target("hourly", days.hourlyDays) }, heldBack };
}

/** Records the horizons that move forward (with `now` as their time); the others keep theirs. */
export async function moveHorizons(connection: PoolConnection, target: RetentionHorizons, now: number): Promise<void> {
  for (const kind of ["wagers", "hourly"] as const) {
    await connection.query(
      `INSERT INTO retention_horizons (kind, horizon, moved_at) VALUES (?, ?, ?)
       ON DUPLICATE KEY UPDATE moved_at = IF(VALUES(horizon) > horizon, VALUES(moved_at), moved_at),
                               horizon = GREATEST(horizon, VALUES(horizon))`,
      [kind, target[kind], now],
    );
  }
}

/** Below what each kind may be deleted at `now`: its horizon once recorded PRUNE_GRACE_S ago, else nothing. */
export function deletableBelow(recorded: RecordedHorizons, now: number): RetentionHorizons {
  const settled = (kind: HorizonKind) => (now - recorded.movedAt[kind] >= PRUNE_GRACE_S ? recorded[kind] : 0);
  return { wagers: settled("wagers"), hourly: settled("hourly") };
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
 * The horizon is read again under a shared lock: a row is deleted only below what is recorded.
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
    const limit = Math.min(below, recorded[kind]);
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
