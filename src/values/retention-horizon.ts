/**
 * The retention horizons (issue 38): raw wagers placed before `wagers`, and hourly rollup rows of hours before
 * `hourly`, may have been deleted by the retention job; 0 means nothing of that kind was. Both are UTC day starts,
 * recorded in the database and moved forward only by the pruning run (ingest/sql/wager-retention.ts), so every
 * instance of a fleet refuses the same periods. The coarser rollups (daily, half-monthly, monthly) are never
 * pruned: a period before a horizon is answered exactly when its pieces (ingest/sql/period-buckets.ts) need none of
 * the deleted rows, and refused otherwise, never answered short.
 */
import type { BucketRange } from "./bucket-range.js";

export interface RetentionHorizons {
  /** Raw wagers placed before this Unix second may be gone (0: none are). */
  readonly wagers: number;
  /** Hourly rollup rows of hours starting before this Unix second may be gone (0: none are). */
  readonly hourly: number;
}

export const NOTHING_PRUNED: RetentionHorizons = Object.freeze({ wagers: 0, hourly: 0 });

export type HorizonKind = keyof RetentionHorizons;

/**
 * A period, wager or void that needs rows the retention job deleted. Thrown by storage; the error catalogue maps
 * it to BEYOND_RETENTION (platform/errors/database.ts), whose message names the horizon. Messages avoid the characters
 * grpc-js mis-decodes (platform/errors/catalogue.ts).
 */
export class BeyondRetentionError extends Error {
  constructor(
    readonly kind: HorizonKind,
    readonly horizon: number,
    message: string,
  ) {
    super(message);
    this.name = "BeyondRetentionError";
  }
}

/** "2026-03-01 UTC (Unix time 1772323200)": a horizon as messages name it. */
export function describeHorizon(horizon: number): string {
  return `${new Date(horizon * 1000).toISOString().slice(0, 10)} UTC (Unix time ${horizon})`;
}

const WHAT_IS_DELETED: Readonly<Record<HorizonKind, string>> = {
  wagers: "raw wagers",
  hourly: "hourly totals",
};

/** "were deleted" once the pruning run has begun deleting below `from` (`pruned`), else "will be deleted". */
function deletedOrNot(kind: HorizonKind, from: number, pruned: RetentionHorizons): string {
  return from < pruned[kind] ? "were deleted" : "will be deleted";
}

/**
 * The refusal of a period whose pieces read deleted rows, or undefined when every piece is still held. A piece
 * of raw wagers before the wager horizon, or of hourly rows before the hourly horizon, would count nothing there.
 * `pruned`: below what the pruning run has deleted (or is deleting) each kind; the message says the rows "were
 * deleted" only then, "will be deleted" while they are still there (default: the horizons themselves).
 */
export function periodRefusal(
  ranges: readonly BucketRange[],
  horizons: RetentionHorizons,
  pruned: RetentionHorizons = horizons,
): BeyondRetentionError | undefined {
  for (const range of ranges) {
    const kind: HorizonKind | undefined =
      range.source === "raw" ? "wagers" : range.source === "hourly" ? "hourly" : undefined;
    if (kind === undefined || range.from >= horizons[kind]) continue;
    const horizon = horizons[kind];
    // Before the hourly horizon only whole days are held; before the wager horizon alone, whole hours.
    const unit = horizons.hourly > range.from ? "days" : "hours";
    return new BeyondRetentionError(
      kind,
      horizon,
      `this period needs ${WHAT_IS_DELETED[kind]} from before the retention horizon ${describeHorizon(horizon)} ` +
        `and those ${deletedOrNot(kind, range.from, pruned)}. Before the horizon a period must start and end on ` +
        `whole UTC ${unit}`,
    );
  }
  return undefined;
}

/**
 * The refusal of recording a wager placed at `placedAt` (Unix seconds), or undefined when it may be recorded
 * (`pruned` as for periodRefusal). Only the wager horizon counts: a wager after it but before the hourly horizon is recorded exactly in the raw
 * rows and the coarser rollups, and its hourly row is never read (periodRefusal) and is deleted again.
 */
export function wagerRefusal(
  wagerId: string,
  placedAt: number,
  horizons: RetentionHorizons,
  pruned: RetentionHorizons = horizons,
): BeyondRetentionError | undefined {
  if (placedAt >= horizons.wagers) return undefined;
  return new BeyondRetentionError(
    "wagers",
    horizons.wagers,
    `wager ${wagerId} was placed before the retention horizon ${describeHorizon(horizons.wagers)}. ` +
      `Raw wagers before it ${deletedOrNot("wagers", placedAt, pruned)} so a repeat could not be recognised and ` +
      "nothing was recorded",
  );
}

/** The refusal of voiding a wager the retention job deleted (nothing of the void is recorded). */
export function voidRefusal(wagerId: string, horizons: RetentionHorizons): BeyondRetentionError {
  return new BeyondRetentionError(
    "wagers",
    horizons.wagers,
    `wager ${wagerId} was placed before the retention horizon ${describeHorizon(horizons.wagers)} and deleted ` +
      "by retention. Its void cannot be applied and nothing was recorded",
  );
}
