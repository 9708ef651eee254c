/**
 * The retention horizons as the database records them (table `retention_horizons`, one row per kind: see
 * ../../values/retention-horizon.ts) and the guard every board read passes: a period is split into its pieces
 * (./period-buckets.ts) and refused when a piece needs rows the pruning run deleted.
 *
 * Instances read the horizons at most every HORIZON_READ_EVERY_MS (a server's heartbeat every 5 s, through its one
 * HorizonWatch); the pruning run (./wager-retention.ts) deletes below a horizon only once it was recorded
 * PRUNE_GRACE_S before and every live server has reported reading its generation (issue 47), so every instance
 * refuses a period before any row it needs is gone. An affiliate with a race not final yet may be held back
 * (`retention_holds`): its own horizon is then earlier than everyone's, and it alone keeps the rows its races need.
 */
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";
import { errnoOf } from "../../platform/database/database-errors.js";
import type { BucketRange } from "../../values/bucket-range.js";
import {
  type BeyondRetentionError,
  NOTHING_PRUNED,
  periodRefusal,
  type RetentionHorizons,
} from "../../values/retention-horizon.js";
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
  /** Below what the pruning run has deleted (or is deleting) each kind (0 before migration 23 or any deletion). */
  readonly pruned: RetentionHorizons;
  /**
   * Counts every change of the horizons and holds (the `generation` row: 0 before the first): a server reports the
   * one it has read, and the pruning run deletes only once every live server has read the current one.
   */
  readonly generation: number;
}

/** The row of `retention_horizons` that counts their changes (releases before this one read only the two kinds). */
export const GENERATION_ROW = "generation";

const NOTHING_RECORDED: RecordedHorizons = {
  ...NOTHING_PRUNED,
  movedAt: NOTHING_PRUNED,
  holds: new Map(),
  pruned: NOTHING_PRUNED,
  generation: 0,
};

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
    // Every column: `pruned_below` is migration 23's, absent on a schema before it.
    const [rows] = await pool.query<RowDataPacket[]>(`SELECT * FROM retention_horizons${locking}`);
    const of = (kind: string, column: string) => Number(rows.find((r) => r.kind === kind)?.[column] ?? 0);
    return {
      wagers: of("wagers", "horizon"),
      hourly: of("hourly", "horizon"),
      movedAt: { wagers: of("wagers", "moved_at"), hourly: of("hourly", "moved_at") },
      holds: await readHolds(pool, locking),
      pruned: { wagers: of("wagers", "pruned_below"), hourly: of("hourly", "pruned_below") },
      generation: of(GENERATION_ROW, "horizon"),
    };
  } catch (error) {
    if (errnoOf(error) === ER_NO_SUCH_TABLE) return NOTHING_RECORDED;
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

/** Below what one affiliate's rows of each kind were deleted (or are being): the pruned marks, never past its horizons. */
export function prunedOf(recorded: RecordedHorizons, affiliateId: number | undefined): RetentionHorizons {
  const own = horizonsOf(recorded, affiliateId);
  return { wagers: Math.min(recorded.pruned.wagers, own.wagers), hourly: Math.min(recorded.pruned.hourly, own.hourly) };
}

/** Told when the horizons or holds this instance answers under change: the new ones and the ones before. */
export type HorizonListener = (now: RecordedHorizons, before: RecordedHorizons) => void;

/**
 * The horizons this instance answers under, one copy for the whole process: read by the instance's heartbeat every
 * 5 s (../../jobs/instance-heartbeat.ts), which then reports their generation as read, and by a board read that
 * finds them older than HORIZON_READ_EVERY_MS (no heartbeat, or one that fails). When they change, the listeners are
 * told before the read returns (the caches drop what the new horizons refuse), so a reported generation is one
 * nothing here answers across.
 */
export class HorizonWatch {
  private recorded: RecordedHorizons = NOTHING_RECORDED;
  private readAt = Number.NEGATIVE_INFINITY;
  private reading: Promise<RecordedHorizons> | undefined;
  private readonly listeners: HorizonListener[] = [];

  constructor(private readonly pool: Pool) {}

  /** The horizons as last read (nothing pruned before the first read). */
  get current(): RecordedHorizons {
    return this.recorded;
  }

  onChange(listener: HorizonListener): void {
    this.listeners.push(listener);
  }

  /** Reads them now (one read at a time); the listeners hear of a change before this resolves. */
  refresh(): Promise<RecordedHorizons> {
    this.reading ??= readHorizons(this.pool)
      .then((read) => {
        const before = this.recorded;
        this.recorded = read;
        this.readAt = Date.now();
        if (read.generation !== before.generation || read.wagers !== before.wagers || read.hourly !== before.hourly) {
          for (const listener of this.listeners) listener(read, before);
        }
        return read;
      })
      .finally(() => {
        this.reading = undefined;
      });
    return this.reading;
  }

  /** The horizons, read again first when the last read is HORIZON_READ_EVERY_MS old. */
  async fresh(): Promise<RecordedHorizons> {
    return Date.now() - this.readAt >= HORIZON_READ_EVERY_MS ? this.refresh() : this.recorded;
  }

  /** The refusal of one affiliate's inclusive period [start, end] under the horizons as last read, if they refuse it. */
  refusal(affiliateId: number, start: number, end: number): BeyondRetentionError | undefined {
    return refusalUnder(this.recorded, affiliateId, start, end);
  }
}

/**
 * Every piece of a period (./period-buckets.ts) lies within the UTC months its start and end are in, and a month
 * starts less than this long before any second of it.
 */
const LONGEST_MONTH_S = 31 * 86_400;

/** The refusal of one affiliate's inclusive period [start, end] under `recorded`, if they refuse it. */
export function refusalUnder(
  recorded: RecordedHorizons,
  affiliateId: number,
  start: number,
  end: number,
): BeyondRetentionError | undefined {
  // A period whose month starts at or after both horizons reads nothing they refuse: an affiliate's own horizons
  // are never later than the fleet's (horizonsOf). This is every board read of a recent period, so the hot path
  // (a cache hit) splits no period into pieces and makes no date (docs/benchmarks.md, issue 49 part 2).
  if (start - LONGEST_MONTH_S >= recorded.wagers && start - LONGEST_MONTH_S >= recorded.hourly) return undefined;
  return periodRefusal(bucketRanges(start, end), horizonsOf(recorded, affiliateId), prunedOf(recorded, affiliateId));
}

/**
 * The pieces of the inclusive period [start, end] of one affiliate under the horizons `watch` holds (read again
 * when HORIZON_READ_EVERY_MS old, with the affiliate's hold), or a BeyondRetentionError naming the horizon when a
 * piece was pruned.
 */
export function guardedPeriods(
  watch: HorizonWatch,
): (affiliateId: number, start: number, end: number) => Promise<BucketRange[]> {
  return async (affiliateId, start, end) => {
    const refusal = refusalUnder(await watch.fresh(), affiliateId, start, end);
    if (refusal !== undefined) throw refusal;
    return bucketRanges(start, end);
  };
}
