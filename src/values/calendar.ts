/**
 * The UTC calendar the service counts in, on Unix seconds: hours, days,
 * half-months (the 1st to the 15th and the 16th to the end of the month) and
 * months. Pure functions; every module that needs a bucket boundary asks here,
 * so the leaderboard's pieces (period-buckets.ts), the rollup writers and
 * `verify` (ingest/sql/rollups.ts) and the demo's period agree.
 */

export const HOUR = 3_600;
export const DAY = 86_400;

/**
 * The largest value taken for Unix seconds: above it a "seconds" value is almost surely
 * milliseconds (10^11 s is in the year 5138; 10^11 ms is in 1973).
 */
export const MAX_PLAUSIBLE_UNIX_SECONDS = 100_000_000_000;

/** 2024-12-02T05:00:00Z: the earliest start of a period the API accepts (boards and races). */
export const EARLIEST_PERIOD_START = 1_733_115_600;

/** The calendar units totals are kept in (one rollup table each), finest first. */
export const GRANULARITIES = ["hourly", "daily", "halfmonthly", "monthly"] as const;
export type Granularity = (typeof GRANULARITIES)[number];

/** Start of the UTC month `offset` months after the one holding `t` (0: that month). */
function monthStartFrom(t: number, offset: number): number {
  const d = new Date(t * 1000);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + offset, 1) / 1000;
}

/** Start of the UTC hour holding `t`. */
export function hourStart(t: number): number {
  return Math.floor(t / HOUR) * HOUR;
}

/** Start of the UTC day holding `t`. */
export function dayStart(t: number): number {
  return Math.floor(t / DAY) * DAY;
}

/** Start of the UTC half-month holding `t`: 00:00 on the 1st (days 1–15) or on the 16th. */
export function halfMonthStart(t: number): number {
  const d = new Date(t * 1000);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() >= 16 ? 16 : 1) / 1000;
}

/** Start of the UTC month holding `t`. */
export function monthStart(t: number): number {
  return monthStartFrom(t, 0);
}

/** Start of the UTC half-month after the one holding `t`: the 16th, or the 1st of the next month. */
export function nextHalfMonthStart(t: number): number {
  const start = halfMonthStart(t);
  return new Date(start * 1000).getUTCDate() === 1 ? start + 15 * DAY : monthStartFrom(t, 1);
}

/** Start of the UTC month after the one holding `t`. */
export function nextMonthStart(t: number): number {
  return monthStartFrom(t, 1);
}

const BUCKETS: Readonly<Record<Granularity, { start(t: number): number; next(t: number): number }>> = {
  hourly: { start: hourStart, next: (t) => hourStart(t) + HOUR },
  daily: { start: dayStart, next: (t) => dayStart(t) + DAY },
  halfmonthly: { start: halfMonthStart, next: nextHalfMonthStart },
  monthly: { start: monthStart, next: nextMonthStart },
};

/** Start of the bucket of this granularity that holds `t`. */
export function bucketStart(granularity: Granularity, t: number): number {
  return BUCKETS[granularity].start(t);
}

/** Start of the bucket of this granularity after the one that holds `t`. */
export function nextBucketStart(granularity: Granularity, t: number): number {
  return BUCKETS[granularity].next(t);
}

/** `t` when it starts a bucket of this granularity, else the start of the next bucket. */
export function bucketCeil(granularity: Granularity, t: number): number {
  return bucketStart(granularity, t) === t ? t : nextBucketStart(granularity, t);
}

/** The UTC half-month holding `t`, both ends inclusive: [1st, 15th 23:59:59] or [16th, last day 23:59:59]. */
export function halfMonthOf(t: number): { start: number; end: number } {
  return { start: halfMonthStart(t), end: nextHalfMonthStart(t) - 1 };
}
