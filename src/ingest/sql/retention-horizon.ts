/**
 * The retention horizons as the database records them (table `retention_horizons`, one row per kind: see
 * ../../values/retention-horizon.ts) and the guard every board read passes: a period is split into its pieces
 * (./period-buckets.ts) and refused when a piece needs rows the pruning run deleted.
 *
 * Instances read the horizons at most every HORIZON_READ_EVERY_MS; the pruning run (./wager-retention.ts) deletes
 * below a horizon only once it was recorded PRUNE_GRACE_S before, so every instance refuses a period before any
 * row it needs is gone.
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

export interface RecordedHorizons extends RetentionHorizons {
  /** When each horizon was last moved (Unix seconds; 0 when never). */
  readonly movedAt: RetentionHorizons;
}

/**
 * The recorded horizons; nothing pruned when the table does not exist yet (a schema before the migration that
 * made it). `lock`: read with a shared lock inside the caller's transaction, so the pruning run's move waits
 * for it (ingest and voids read it so).
 */
export async function readHorizons(
  pool: Pool | PoolConnection,
  lock: "shared" | "none" = "none",
): Promise<RecordedHorizons> {
  try {
    const [rows] = await pool.query<RowDataPacket[]>(
      `SELECT kind, horizon, moved_at FROM retention_horizons${lock === "shared" ? " LOCK IN SHARE MODE" : ""}`,
    );
    const of = (kind: string, column: string) => Number(rows.find((r) => r.kind === kind)?.[column] ?? 0);
    return {
      wagers: of("wagers", "horizon"),
      hourly: of("hourly", "horizon"),
      movedAt: { wagers: of("wagers", "moved_at"), hourly: of("hourly", "moved_at") },
    };
  } catch (error) {
    if (errnoOf(error) === ER_NO_SUCH_TABLE) return { ...NOTHING_PRUNED, movedAt: NOTHING_PRUNED };
    throw error;
  }
}

/**
 * The pieces of the inclusive period [start, end] under the horizons this instance last read (at most
 * HORIZON_READ_EVERY_MS ago), or a BeyondRetentionError naming the horizon when a piece was pruned.
 */
export function guardedPeriods(pool: Pool): (start: number, end: number) => Promise<BucketRange[]> {
  let horizons: RetentionHorizons = NOTHING_PRUNED;
  let readAt = Number.NEGATIVE_INFINITY;
  let reading: Promise<void> | undefined;
  const read = async () => {
    try {
      horizons = await readHorizons(pool);
      readAt = Date.now();
    } finally {
      reading = undefined;
    }
  };
  return async (start, end) => {
    if (Date.now() - readAt >= HORIZON_READ_EVERY_MS) {
      reading ??= read();
      await reading;
    }
    const ranges = bucketRanges(start, end);
    const refusal = periodRefusal(ranges, horizons);
    if (refusal !== undefined) throw refusal;
    return ranges;
  };
}
