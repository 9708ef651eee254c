/**
 * A long period's board without summing every user of every month: the three reads of the proof in
 * ../core/threshold-plan.ts over the monthly rollup's index by total (migration 25), then the
 * contenders' exact totals and order by the board's usual last statement (./leaderboard-queries.ts).
 * Where the reads would grow past what the usual plan reads, it gives up and says so (`fallback`): the
 * caller answers by the usual plan.
 */
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";
import type { MonthlyProfile } from "../core/small-board-plan.js";
import { decimalOfScaled, MonthLists, scaledDecimal, secondPhaseFloor } from "../core/threshold-plan.js";

/**
 * The ranking value's column of the monthly rollup and its scale. Both rankings read the months' rows in the order
 * of migration 25's index, by plain total: a row's weighted total never exceeds its plain one, so the rows below a
 * plain floor are below it in either value.
 */
export interface RankedColumn {
  readonly column: "total" | "weighted_sum";
  readonly scale: 8 | 12;
}

export const RANKED_COLUMNS: Readonly<Record<"total" | "weighted_sum", RankedColumn>> = {
  total: { column: "total", scale: 8 },
  weighted_sum: { column: "weighted_sum", scale: 12 },
};

/**
 * Rows the second read may return, all months together. The usual plan of a year of the largest affiliate at 50M
 * wagers sums 200,570 rows; past this the proof is not worth finishing.
 */
const SECOND_READ_ROWS = 40_000;

/** Contenders the last statement may read (one primary key lookup per contender and bucket). */
const MAX_CONTENDERS = 2_000;

export interface ThresholdQuery {
  readonly affiliateId: number;
  /** The period's whole months (bucket starts), each one list. */
  readonly months: readonly number[];
  readonly ranked: RankedColumn;
  /** The ranking value's sum per user over the ragged edges (`user_id`, `ranked`), or undefined without edges. */
  readonly edges: { readonly sql: string; readonly params: readonly number[] } | undefined;
  readonly limit: number;
}

/**
 * The users the board is among (every user that ranks at or above the k-th) and the months that hold rows of the
 * affiliate (the others add nothing), or why the proof was not finished.
 */
export type ThresholdAnswer =
  | { readonly ok: true; readonly users: number[]; readonly monthsWithRows: number[] }
  | { readonly ok: false; readonly reason: "too_many_rows" | "too_many_contenders" };

export async function thresholdContenders(
  pool: Pool | PoolConnection,
  query: ThresholdQuery,
): Promise<ThresholdAnswer> {
  const { affiliateId, ranked, limit } = query;
  const months =
    query.months.length > UNTRIMMED_MONTHS ? await monthsUpToTheLastRow(pool, affiliateId, query.months) : query.months;
  // The edges' sums and the first read do not depend on each other: on a pool they go on two connections at once
  // (on one connection, mysql2 sends them one after the other).
  const [edgeRows, first] = await Promise.all([
    query.edges === undefined
      ? []
      : pool.query<RowDataPacket[]>(query.edges.sql, [...query.edges.params]).then(([rows]) => rows),
    months.length === 0 ? [] : bestRowsOfEachMonth(pool, affiliateId, months, ranked, limit),
  ]);
  const edge = new Map<number, bigint>();
  for (const row of edgeRows) edge.set(Number(row.user_id), scaledDecimal(String(row.ranked), ranked.scale));
  const lists = new MonthLists(months.length, edge);
  // No month holds a row of the affiliate (the period's months all lie after its last): the edges say it all.
  if (months.length === 0) return contendersOrNot(lists.everyUser(), []);
  for (const row of first) lists.add(Number(row.m), Number(row.user_id), scaledDecimal(String(row.v), ranked.scale));
  const open = months.map((_, m) => m).filter((m) => lists.rowsIn(m) >= limit);
  const monthsWithRows = months.filter((_, m) => lists.rowsIn(m) > 0);
  if (open.length === 0) return contendersOrNot(lists.everyUser(), monthsWithRows);
  const tau1 = lists.kthLowerBound(limit);
  // Fewer than k users above 0 in the best rows (weighted totals of 0 among them): the second read takes every row
  // of the open months (floor 0), and then every user of the period is known.
  // Second read: every row whose plain total is at or above the floor in each month not read to its end.
  const floor = tau1 === undefined ? 0n : secondPhaseFloor(tau1, months.length);
  // The weighted ranking reads the range of plain totals at or above the floor (the index's order) and keeps the
  // rows whose weighted total is at or above it too, from the index's own column: a row left out is below the floor
  // in the ranked value, as every unread row is (on the 50M seed's 24-month all time: 4,678 rows sent, now 3,485).
  const weightedFloor = ranked.column === "total" ? "" : ` AND ${ranked.column} >= CAST(? AS DECIMAL(65,12))`;
  const floorText = decimalOfScaled(floor, ranked.scale);
  const [second] = await pool.query<RowDataPacket[]>(
    `SELECT bucket, user_id, ${ranked.column} AS v FROM wager_monthly FORCE INDEX (ix_monthly_ranked)
      WHERE affiliate_id = ? AND bucket IN (?) AND total >= CAST(? AS DECIMAL(65,12))${weightedFloor} LIMIT ?`,
    [
      affiliateId,
      open.map((m) => months[m]),
      floorText,
      ...(weightedFloor === "" ? [] : [floorText]),
      SECOND_READ_ROWS + 1,
    ],
  );
  if (second.length > SECOND_READ_ROWS) return { ok: false, reason: "too_many_rows" };
  const monthOf = new Map(months.map((bucket, m) => [bucket, m]));
  for (const row of second) {
    lists.add(monthOf.get(Number(row.bucket)) ?? -1, Number(row.user_id), scaledDecimal(String(row.v), ranked.scale));
  }
  if (tau1 === undefined) return contendersOrNot(lists.everyUser(), monthsWithRows);
  return contendersOrNot(lists.contenders(lists.kthLowerBound(limit) ?? tau1, floor), monthsWithRows);
}

/** First read: the best `limit` rows of each month by plain total, from the index, in one statement. */
async function bestRowsOfEachMonth(
  pool: Pool | PoolConnection,
  affiliateId: number,
  months: readonly number[],
  ranked: RankedColumn,
  limit: number,
): Promise<RowDataPacket[]> {
  const best = months
    .map(
      () =>
        `(SELECT ? AS m, user_id, ${ranked.column} AS v FROM wager_monthly FORCE INDEX (ix_monthly_ranked)
           WHERE affiliate_id = ? AND bucket = ? ORDER BY total DESC LIMIT ?)`,
    )
    .join(" UNION ALL ");
  const [rows] = await pool.query<RowDataPacket[]>(
    best,
    months.flatMap((bucket, m) => [m, affiliateId, bucket, limit]),
  );
  return rows;
}

/**
 * Months a period may span before its months after the affiliate's last row are left out (monthsUpToTheLastRow):
 * up to this many, the months without rows cost an empty index probe each in the first read, less than the
 * statement that would find them (0.4–0.6 ms of a 24-month board's 10 ms on the 50M seed); an all-time board reaches
 * this in December 2028.
 */
const UNTRIMMED_MONTHS = 48;

/**
 * The period's whole months up to the affiliate's last monthly row: the months after it hold nothing, and a period
 * may end as late as 10^11 s (the year 5138), whose tens of thousands of months would otherwise each be a subquery of
 * the first read (one such board took 12 s and answered 503). One index probe, by the primary key's prefix.
 */
async function monthsUpToTheLastRow(
  pool: Pool | PoolConnection,
  affiliateId: number,
  months: readonly number[],
): Promise<readonly number[]> {
  const end = months.at(-1);
  if (end === undefined) return months;
  const [latest] = await pool.query<RowDataPacket[]>(
    "SELECT bucket FROM wager_monthly WHERE affiliate_id = ? AND bucket <= ? ORDER BY bucket DESC LIMIT 1",
    [affiliateId, end],
  );
  const last = latest[0] === undefined ? undefined : Number(latest[0].bucket);
  return last === undefined ? [] : months.filter((bucket) => bucket <= last);
}

function contendersOrNot(users: number[], monthsWithRows: number[]): ThresholdAnswer {
  return users.length > MAX_CONTENDERS
    ? { ok: false, reason: "too_many_contenders" }
    : { ok: true, users, monthsWithRows };
}

/**
 * Users an affiliate must have for its long periods to be worth the threshold plan: below, summing every user's
 * monthly rows reads a few thousand rows at most and takes fewer statements (on the bench seeds, an affiliate of
 * 23 or 50 users answered 12 months and all time 0.2-0.7 ms faster by the rollup plan; one of 100,000 users 10 to
 * 25 times slower). Below it, every board of the affiliate is one statement (../core/small-board-plan.ts).
 */
export const THRESHOLD_MIN_USERS = 500;

/** How long a large affiliate's count of users is used before it is counted again (one index range of `users`). */
const USERS_COUNTED_FOR_MS = 10 * 60_000;

/**
 * How long a small affiliate's size and monthly profile are used: a minute, not USERS_COUNTED_FOR_MS. The profile
 * sends its boards to the raw wagers when they are few; an import of many wagers (a bulk load, a bot) can make them
 * many at once, and until the profile is read again every board of it sums them all. Both reads are ranges of fewer
 * than THRESHOLD_MIN_USERS rows a month (well under a millisecond), once a minute per small affiliate read.
 */
const SMALL_COUNTED_FOR_MS = 60_000;

/**
 * How long a small affiliate with no monthly row yet is used before it is read again: its first board often comes
 * just before its history is imported, and its empty profile estimates no raw wager for any period, so for
 * SMALL_COUNTED_FOR_MS every board of it would sum its raw wagers, however many the import brought.
 */
const EMPTY_COUNTED_FOR_MS = 10_000;

/** Affiliates counted at most; past it the counts start over (a count is one index range of `users`). */
const MAX_COUNTED = 100_000;

/**
 * What picks the plan of an affiliate's boards, never what they answer: its users (those whose affiliate it is now:
 * a measure of the rows its periods hold, never exact, as a user who moved keeps their wagers with the old affiliate)
 * and, for an affiliate of fewer than THRESHOLD_MIN_USERS users, its monthly rollup's rows and wagers per month
 * (../core/small-board-plan.ts). Read at most once every 10 minutes per large affiliate, every minute per small one
 * (every 10 s while it has no monthly row).
 */
export interface AffiliateSize {
  readonly users: number;
  /** Only for a small affiliate (fewer than THRESHOLD_MIN_USERS users). */
  readonly months: MonthlyProfile | undefined;
}

export class AffiliateSizes {
  private readonly counted = new Map<number, { readonly size: AffiliateSize; readonly until: number }>();

  constructor(
    private readonly pool: Pool | PoolConnection,
    private readonly now: () => number = Date.now,
  ) {}

  async of(affiliateId: number): Promise<AffiliateSize> {
    const held = this.counted.get(affiliateId);
    if (held !== undefined && held.until > this.now()) return held.size;
    const [rows] = await this.pool.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM users WHERE affiliate_id = ?", [
      affiliateId,
    ]);
    const users = Number(rows[0]?.n ?? 0);
    const size = { users, months: users < THRESHOLD_MIN_USERS ? await this.monthsOf(affiliateId) : undefined };
    if (this.counted.size >= MAX_COUNTED) this.counted.clear();
    const heldFor =
      size.months === undefined
        ? USERS_COUNTED_FOR_MS
        : size.months.size === 0
          ? EMPTY_COUNTED_FOR_MS
          : SMALL_COUNTED_FOR_MS;
    this.counted.set(affiliateId, { size, until: this.now() + heldFor });
    return size;
  }

  /** One range of the monthly rollup's primary key: fewer than THRESHOLD_MIN_USERS rows a month. */
  private async monthsOf(affiliateId: number): Promise<MonthlyProfile> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT bucket, COUNT(*) AS users, SUM(wagers) AS wagers FROM wager_monthly
        WHERE affiliate_id = ? GROUP BY bucket`,
      [affiliateId],
    );
    return new Map(rows.map((row) => [Number(row.bucket), { users: Number(row.users), wagers: Number(row.wagers) }]));
  }
}
