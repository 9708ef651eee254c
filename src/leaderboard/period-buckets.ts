/**
 * Splits a period into the coarsest aligned pieces the rollup tables can
 * answer: whole UTC months, then whole days, then whole hours, and raw wagers
 * only for the partial hours at either edge. The cost of a query then follows
 * the number of (user, bucket) rows read, not the number of wagers.
 *
 * Ranges are half-open [from, to) in Unix seconds; an inclusive period
 * [start, end] is [start, end + 1).
 */

export type Source = "raw" | "hourly" | "daily" | "monthly";

export interface BucketRange {
  readonly source: Source;
  /** First second (raw) or bucket start (rollups) included. */
  readonly from: number;
  /** First second or bucket start not included. */
  readonly to: number;
}

const HOUR = 3_600;
const DAY = 86_400;

const floorTo = (t: number, unit: number) => Math.floor(t / unit) * unit;
const ceilTo = (t: number, unit: number) => Math.ceil(t / unit) * unit;

function monthStart(t: number, offset: number): number {
  const d = new Date(t * 1000);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + offset, 1) / 1000;
}
const floorMonth = (t: number) => monthStart(t, 0);
const ceilMonth = (t: number) => (floorMonth(t) === t ? t : monthStart(t, 1));

/** The pieces of the inclusive period [start, end], in time order. */
export function bucketRanges(start: number, end: number): BucketRange[] {
  const from = start;
  const to = end + 1;
  const hoursFrom = ceilTo(from, HOUR);
  const hoursTo = floorTo(to, HOUR);
  if (hoursFrom >= hoursTo) return nonEmpty([{ source: "raw", from, to }]);
  return nonEmpty([
    { source: "raw", from, to: hoursFrom },
    ...hours(hoursFrom, hoursTo),
    { source: "raw", from: hoursTo, to },
  ]);
}

function hours(from: number, to: number): BucketRange[] {
  const daysFrom = ceilTo(from, DAY);
  const daysTo = floorTo(to, DAY);
  if (daysFrom >= daysTo) return [{ source: "hourly", from, to }];
  return [{ source: "hourly", from, to: daysFrom }, ...days(daysFrom, daysTo), { source: "hourly", from: daysTo, to }];
}

function days(from: number, to: number): BucketRange[] {
  const monthsFrom = ceilMonth(from);
  const monthsTo = floorMonth(to);
  if (monthsFrom >= monthsTo) return [{ source: "daily", from, to }];
  return [
    { source: "daily", from, to: monthsFrom },
    { source: "monthly", from: monthsFrom, to: monthsTo },
    { source: "daily", from: monthsTo, to },
  ];
}

function nonEmpty(ranges: BucketRange[]): BucketRange[] {
  return ranges.filter((r) => r.from < r.to);
}
