/**
 * Where a small affiliate's board is read from (../sql/leaderboard-queries.ts answers it in one statement): its raw
 * wagers over the whole period, or the period's pieces (rollup buckets plus raw edges), whichever reads fewer rows.
 *
 * A board of an affiliate with few users costs mostly its statements, not its rows: the usual two steps (rank, then
 * read the chosen users' totals) took twice one GROUP BY over the raw wagers (0.5–1.2 ms against 0.25–0.5 ms on the
 * bench seed). One statement summing both totals over the cheaper source takes what one GROUP BY takes, or less.
 *
 * The estimate comes from the affiliate's monthly rollup (its rows and wagers per month, read at most every few
 * minutes: ../sql/threshold-board.ts AffiliateSizes): a period's raw wagers are each month's wagers in proportion to
 * the part of the month it covers; a rollup piece reads at most one row per user and bucket, and never more rows than
 * it holds wagers. Each piece beyond the first adds a subquery to the statement (PIECE_COST rows' worth, measured).
 * The estimate picks a source, never an answer: both read the same totals.
 */
import type { BucketRange } from "../../values/bucket-range.js";
import { bucketCeil, monthStart, nextMonthStart } from "../../values/calendar.js";

/** One month of an affiliate: its rows in the monthly rollup (users who wagered) and their wagers. */
export interface MonthOfAffiliate {
  readonly users: number;
  readonly wagers: number;
}

/** An affiliate's months by bucket start (months without a row are absent). */
export type MonthlyProfile = ReadonlyMap<number, MonthOfAffiliate>;

/**
 * What one more piece of a statement costs, in rows read: on the 5M bench seed a period of three pieces with almost
 * no rows took 0.03–0.06 ms more than one of one piece, what reading some 40–80 wagers takes.
 */
export const PIECE_COST = 40;

/** Seconds per bucket of each rollup level, to count the buckets a piece spans within one month. */
const BUCKET_SECONDS: Readonly<Record<Exclude<BucketRange["source"], "raw">, number>> = {
  hourly: 3_600,
  daily: 86_400,
  halfmonthly: 15 * 86_400,
  monthly: 31 * 86_400,
};

/**
 * The half-open span [from, to) the pieces add up to: subtracted pieces lie inside added ones, so it is where
 * the running count of covering pieces first rises above 0 and where it last falls back to 0. Empty: [0, 0).
 */
export function spanOfPieces(ranges: readonly BucketRange[]): { readonly from: number; readonly to: number } {
  const steps = new Map<number, number>();
  for (const range of ranges) {
    if (range.from >= range.to) continue;
    steps.set(range.from, (steps.get(range.from) ?? 0) + range.sign);
    steps.set(range.to, (steps.get(range.to) ?? 0) - range.sign);
  }
  let covered = 0;
  let from: number | undefined;
  let to = 0;
  for (const at of [...steps.keys()].sort((a, b) => a - b)) {
    const before = covered;
    covered += steps.get(at) ?? 0;
    if (before <= 0 && covered > 0 && from === undefined) from = at;
    if (before > 0 && covered <= 0) to = at;
  }
  return from === undefined ? { from: 0, to: 0 } : { from, to };
}

/** The wagers of [from, to) by the profile: each month's in proportion to the part of it the span covers. */
function wagersIn(profile: MonthlyProfile, from: number, to: number): number {
  let wagers = 0;
  for (let month = monthStart(from); month < to; month = nextMonthStart(month)) {
    const held = profile.get(month);
    if (held === undefined) continue;
    const end = nextMonthStart(month);
    const covered = Math.min(to, end) - Math.max(from, month);
    wagers += (held.wagers * covered) / (end - month);
  }
  return wagers;
}

/** Rows a piece reads: raw wagers, or at most a row per user and bucket and never more than the wagers in it. */
function rowsOf(profile: MonthlyProfile, range: BucketRange): number {
  if (range.source === "raw") return wagersIn(profile, range.from, range.to);
  const from = bucketCeil(range.source, range.from);
  let rows = 0;
  for (let month = monthStart(from); month < range.to; month = nextMonthStart(month)) {
    const held = profile.get(month);
    if (held === undefined) continue;
    const start = Math.max(from, month);
    const end = Math.min(range.to, nextMonthStart(month));
    if (start >= end) continue;
    const buckets =
      range.source === "monthly" ? 1 : Math.max(1, Math.ceil((end - start) / BUCKET_SECONDS[range.source]));
    rows += Math.min(wagersIn(profile, start, end), held.users * buckets);
  }
  return rows;
}

export interface SmallBoardReads {
  /** Rows the period's pieces would read, with PIECE_COST for each piece after the first. */
  readonly pieces: number;
  /** Raw wagers of the whole period. */
  readonly raw: number;
}

/** What each source would read for the period the pieces make up. */
export function smallBoardReads(profile: MonthlyProfile, ranges: readonly BucketRange[]): SmallBoardReads {
  const span = spanOfPieces(ranges);
  let pieces = PIECE_COST * Math.max(0, ranges.length - 1);
  for (const range of ranges) pieces += rowsOf(profile, range);
  return { pieces, raw: wagersIn(profile, span.from, span.to) };
}

/**
 * The one piece to read instead of `ranges` (the whole period from raw wagers) when that reads fewer rows and every
 * raw wager of the period is still held (`rawHeldFrom`: the affiliate's wager retention horizon); else `ranges`.
 */
export function smallBoardPieces(
  profile: MonthlyProfile,
  ranges: readonly BucketRange[],
  rawHeldFrom: number,
): { readonly source: "raw" | "pieces"; readonly ranges: readonly BucketRange[] } {
  const span = spanOfPieces(ranges);
  if (span.from >= span.to) return { source: "pieces", ranges };
  const single = ranges.length === 1 && ranges[0]?.source === "raw";
  if (single || span.from < rawHeldFrom) return { source: single ? "raw" : "pieces", ranges };
  const reads = smallBoardReads(profile, ranges);
  return reads.raw <= reads.pieces
    ? { source: "raw", ranges: [{ source: "raw", sign: 1, from: span.from, to: span.to }] }
    : { source: "pieces", ranges };
}
