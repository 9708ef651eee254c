/**
 * The rollup tables (migrations 2 and 3) and how a wager's bucket is computed for
 * each. One definition, used by every writer (ingest, seed's bulk path) and by
 * `verify`, so they can never disagree about which bucket a wager belongs to.
 *
 * bucket = the Unix second at which the wager's UTC hour, day, half-month (1st
 * or 16th) or month starts. Half-months are the periods leaderboard sites use
 * most; with their own rollup they read one row per active user, like months.
 * The month expression uses only date arithmetic on whole days since
 * 1970-01-01 (no FROM_UNIXTIME / UNIX_TIMESTAMP), so it does not depend on the
 * session's time_zone.
 */

export interface Rollup {
  /** Table name; a constant, never input. */
  readonly table: "wager_hourly" | "wager_daily" | "wager_halfmonthly" | "wager_monthly";
  readonly level: "hourly" | "daily" | "halfmonthly" | "monthly";
  /**
   * SQL expression of the bucket of a time column (INT UNSIGNED Unix seconds): `placed_at` of a
   * wager, or the bucket of a finer rollup (an hour lies in one day and one month).
   */
  readonly bucketOf: (column: "placed_at" | "bucket") => string;
}

export const ROLLUPS: readonly Rollup[] = [
  { table: "wager_hourly", level: "hourly", bucketOf: (t) => `${t} - ${t} % 3600` },
  { table: "wager_daily", level: "daily", bucketOf: (t) => `${t} - ${t} % 86400` },
  {
    table: "wager_halfmonthly",
    level: "halfmonthly",
    // The 1st (days 1–15) or the 16th (days 16 to the end): the month's first day plus 15 days in the second half.
    bucketOf: (t) =>
      `(${t} DIV 86400 + 1 - DAYOFMONTH(DATE '1970-01-01' + INTERVAL ${t} DIV 86400 DAY)` +
      ` + IF(DAYOFMONTH(DATE '1970-01-01' + INTERVAL ${t} DIV 86400 DAY) >= 16, 15, 0)) * 86400`,
  },
  {
    table: "wager_monthly",
    level: "monthly",
    // Day number of the first of the month = day number + 1 - day of month. Written in that
    // order so the unsigned arithmetic never goes below zero.
    bucketOf: (t) => `(${t} DIV 86400 + 1 - DAYOFMONTH(DATE '1970-01-01' + INTERVAL ${t} DIV 86400 DAY)) * 86400`,
  },
];

/** The same buckets in TypeScript, for tests and tools. */
export function bucketStart(level: Rollup["level"], placedAt: number): number {
  switch (level) {
    case "hourly":
      return placedAt - (placedAt % 3600);
    case "daily":
      return placedAt - (placedAt % 86_400);
    case "halfmonthly": {
      const d = new Date(placedAt * 1000);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() >= 16 ? 16 : 1) / 1000;
    }
    case "monthly": {
      const d = new Date(placedAt * 1000);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) / 1000;
    }
  }
}
