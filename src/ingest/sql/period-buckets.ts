/**
 * Splits a period into pieces the rollup tables can answer: whole UTC months,
 * half-months, days and hours, and raw wagers only for partial hours. The cost of a query
 * then follows the number of (user, bucket) rows read, not the number of
 * wagers.
 *
 * A piece may also be subtracted: a period that covers most of a month is
 * answered as that month minus the part it leaves out (one monthly row per
 * user plus a few edge rows, instead of a daily row per user and day). Every
 * second of the period is then counted exactly once and every second outside
 * it zero times; a user whose remaining total is zero wagered nothing in the
 * period and is left out by the query.
 *
 * Ranges are half-open [from, to) in Unix seconds; an inclusive period
 * [start, end] is [start, end + 1).
 */

import type { BucketRange } from "../../values/bucket-range.js";
import { bucketCeil, bucketStart, type Granularity } from "../../values/calendar.js";

interface Level {
  readonly source: Granularity;
  floor(t: number): number;
  ceil(t: number): number;
}

const levelOf = (source: Granularity): Level => ({
  source,
  floor: (t) => bucketStart(source, t),
  ceil: (t) => bucketCeil(source, t),
});

/** Coarsest first. */
const LEVELS: readonly Level[] = [levelOf("monthly"), levelOf("halfmonthly"), levelOf("daily"), levelOf("hourly")];

/** The pieces of the inclusive period [start, end]. */
export function bucketRanges(start: number, end: number): BucketRange[] {
  return cover(start, end + 1, 0);
}

function cover(from: number, to: number, levelIndex: number): BucketRange[] {
  if (from >= to) return [];
  const level = LEVELS[levelIndex];
  if (level === undefined) return [{ source: "raw", sign: 1, from, to }];
  const unitStart = level.floor(from);
  const unitEnd = level.ceil(to);
  if (level.floor(from) === level.floor(to - 1) && !(from === unitStart && to === unitEnd)) {
    // Part of a single unit: the whole unit minus what lies outside the period
    // when the period covers most of it, else finer pieces.
    if (!coversMost(to - from, unitEnd - unitStart)) return cover(from, to, levelIndex + 1);
    return [
      { source: level.source, sign: 1, from: unitStart, to: unitEnd },
      ...negate(cover(unitStart, from, levelIndex + 1)),
      ...negate(cover(to, unitEnd, levelIndex + 1)),
    ];
  }
  const innerFrom = level.ceil(from);
  const innerTo = level.floor(to);
  return [
    ...edge(unitStart, from, innerFrom, levelIndex, "leading"),
    ...(innerFrom < innerTo ? [{ source: level.source, sign: 1 as const, from: innerFrom, to: innerTo }] : []),
    ...edge(innerTo, to, unitEnd, levelIndex, "trailing"),
  ];
}

/**
 * A partial unit at one end of the period: [from, unitEnd) when leading,
 * [unitStart, to) when trailing. Counted from finer pieces, or as the whole
 * unit minus the rest when the part covers most of it.
 */
function edge(unitStart: number, inner: number, unitEnd: number, levelIndex: number, side: "leading" | "trailing") {
  const level = LEVELS[levelIndex] as Level;
  const [from, to] = side === "leading" ? [inner, unitEnd] : [unitStart, inner];
  if (from >= to) return [];
  if (!coversMost(to - from, unitEnd - unitStart)) return cover(from, to, levelIndex + 1);
  const outside = side === "leading" ? cover(unitStart, inner, levelIndex + 1) : cover(inner, unitEnd, levelIndex + 1);
  return [{ source: level.source, sign: 1 as const, from: unitStart, to: unitEnd }, ...negate(outside)];
}

/**
 * Subtracting pays when what is left out is small: above two thirds, one
 * coarse row plus the rows of the remaining third beat the finer rows of the
 * two thirds (a half-month is cheaper as 15 or 16 daily rows per user than as a
 * month minus the other half).
 */
function coversMost(part: number, unit: number): boolean {
  return 3 * part > 2 * unit;
}

function negate(ranges: readonly BucketRange[]): BucketRange[] {
  return ranges.map((r) => ({ ...r, sign: r.sign === 1 ? -1 : 1 }));
}
