/**
 * The retention horizons as the database records them (table `retention_horizons`, one row per kind: see
 * ../../values/retention-horizon.ts) and the guard every board read passes: a period is split into its pieces
 * (./period-buckets.ts) and refused when a piece needs rows the pruning run deleted.
 *
 * Instances read the horizons at most every HORIZON_READ_EVERY_MS; the pruning run (./wager-retention.ts) deletes
 * below a horizon only once it was recorded PRUNE_GRACE_S before, so every instance refuses a period before any
 * row it needs is gone. An affiliate with a race not final yet may be held back (`retention_holds`): its own
 * horizon is then earlier than everyone's, and it alone keeps the rows its races need.
 */
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";
import { errnoOf } from "../../platform/database/database-errors.js";
import type { BucketRange } from "../../values/bucket-range.js";
import { NOTHING_PRUNED, periodRefusal, type RetentionHorizons } from "../../values/retention-horizon.js";
import { bucketRanges } from "./period-buckets.js";

/** How long an instance keeps the horizons it read. */
export const HORIZON_READ_EVERY_MS = 5_000;
/** A horizon recorded this long ago is one every instance has read: rows below it may go. */
export const PRUNE_GRACE_S = 60;

const ER_NO_SUCH_TABLE = 1146;

/** An affiliate whose rows are kept from an earlier day than the horizons (migration 22, ./wager-retention.ts). */
export interface RetentionHold {
  /** Its raw wagers and hourly rows from this UTC day start on are kept; RELEASED_HOLD when no longer held. */
  readonly heldFrom: number;
  /** When the hold last changed (Unix seconds). */
  readonly movedAt: number;
}

/** `held_from` of a hold released (its race is final), kept until every instance has read the release. */
export const RELEASED_HOLD = 4_294_967_295;

export interface RecordedHorizons extends RetentionHorizons {
  /** When each horizon was last moved (Unix seconds; 0 when never). */
  readonly movedAt: RetentionHorizons;
  /** The affiliates (by internal key) held back by a race of theirs that is not final. */
  readonly holds: ReadonlyMap<number, RetentionHold>;
}

/**
 * The horizons that hold for one affiliate: the fleet's, or earlier where a race of the affiliate that is not final
 * holds its rows back (never later than the fleet's).
 */
export function horizonsOf(recorded: RecordedHorizons, affiliateId: number | undefined): RetentionHorizons {
  const held = affiliateId === undefined ? undefined : recorded.holds.get(affiliateId)?.heldFrom;
  if (held === undefined) return { wagers: recorded.wagers, hourly: recorded.hourly };
  return { wagers: Math.min(recorded.wagers, held), hourly: Math.min(recorded.hourly, held) };
}

/**
 * The recorded horizons and holds; nothing pruned when the tables do not exist yet (a schema before the migrations
 * that made them). `lock`: read with a shared lock inside the caller's transaction, so the pruning run's move waits
 * for it (ingest, voids and a race's create read them so). The horizons are read before the holds: read apart, a
 * hold written with a horizon's move is either seen with the new horizon or the old horizon is seen without it,
 * and either gives an affiliate no earlier horizon than the one recorded (a hold is never below what it replaced).
 */
export async function readHorizons(
  pool: Pool | PoolConnection,
  lock: "shared" | "none" = "none",
): Promise<RecordedHorizons> {
  const locking = lock === "shared" ? " LOCK IN SHARE MODE" : "";
  try {
    const [rows] = await pool.query<RowDataPacket[]>(
      `SELECT kind, horizon, moved_at FROM retention_horizons${locking}`,
    );
    const of = (kind: string, column: string) => Number(rows.find((r) => r.kind === kind)?.[column] ?? 0);
    return {
      wagers: of("wagers", "horizon"),
      hourly: of("hourly", "horizon"),
      movedAt: { wagers: of("wagers", "moved_at"), hourly: of("hourly", "moved_at") },
      holds: await readHolds(pool, locking),
    };
  } catch (error) {
    if (errnoOf(error) === ER_NO_SUCH_TABLE) return { ...NOTHING_PRUNED, movedAt: NOTHING_PRUNED, holds: new Map() };
    throw error;
  }
}

async function readHolds(pool: Pool | PoolConnection, locking: string): Promise<Map<number, RetentionHold>> {
  try {
    const [rows] = await pool.query<RowDataPacket[]>(
      `SELECT affiliate_id, held_from, moved_at FROM retention_holds${locking}`,
    );
    return new Map(
      rows.map((r) => [Number(r.affiliate_id), { heldFrom: Number(r.held_from), movedAt: Number(r.moved_at) }]),
    );
  } catch (error) {
    // Migration 22 not applied yet: nobody is held, the horizons are everyone's.
    if (errnoOf(error) === ER_NO_SUCH_TABLE) return new Map();
    throw error;
  }
}

/**
 * The pieces of the inclusive period [start, end] of one affiliate under the horizons this instance last read (at
 * most HORIZON_READ_EVERY_MS ago, with the affiliate's hold), or a BeyondRetentionError naming the horizon when a
 * piece was pruned.
 */
export function guardedPeriods(
  pool: Pool,
): (affiliateId: number, start: number, end: number) => Promise<BucketRange[]> {
  let recorded: RecordedHorizons = { ...NOTHING_PRUNED, movedAt: NOTHING_PRUNED, holds: new Map() };
  let readAt = Number.NEGATIVE_INFINITY;
  let reading: Promise<void> | undefined;
  const read = async () => {
    try {
      recorded = await readHorizons(pool);
      readAt = Date.now();
    } finally {
      reading = undefined;
    }
  };
  return async (affiliateId, start, end) => {
    if (Date.now() - readAt >= HORIZON_READ_EVERY_MS) {
      reading ??= read();
      await reading;
    }
    const ranges = bucketRanges(start, end);
    const refusal = periodRefusal(ranges, horizonsOf(recorded, affiliateId));
    if (refusal !== undefined) throw refusal;
    return ranges;
  };
}
