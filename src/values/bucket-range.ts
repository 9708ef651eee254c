/**
 * A piece of a period that one table answers (ingest/sql/period-buckets.ts makes them, the
 * leaderboard query of storage sums them). Half-open [from, to) in Unix seconds.
 */
import type { Granularity } from "./calendar.js";

/** Raw wagers, or one of the rollup tables. */
export type Source = "raw" | Granularity;

export interface BucketRange {
  readonly source: Source;
  /** +1 adds the piece, -1 subtracts it. */
  readonly sign: 1 | -1;
  /** First second (raw) or bucket start (rollups) included. */
  readonly from: number;
  /** First second or bucket start not included. */
  readonly to: number;
}
