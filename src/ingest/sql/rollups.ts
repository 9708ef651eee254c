/**
 * The rollup tables (migrations 2 and 3; weights from migrations 7 and 12) and how a
 * wager's bucket and weighted amount are computed for each. One definition, used by every writer (ingest, seed's bulk path) and by
 * `verify`, so they can never disagree about which bucket a wager belongs to.
 *
 * bucket = the Unix second at which the wager's UTC hour, day, half-month (1st
 * or 16th) or month starts: the SQL twin of `bucketStart` in
 * ../../values/calendar.ts. Half-months are the periods leaderboard sites use
 * most; with their own rollup they read one row per active user, like months.
 * The half-month and month expressions use only date arithmetic on whole days
 * since 1970-01-01 (no FROM_UNIXTIME / UNIX_TIMESTAMP), so they do not depend
 * on the session's time_zone.
 */
import { DAY, GRANULARITIES, type Granularity, HOUR } from "../../values/calendar.js";

/** Table name of a rollup; a constant, never input. */
export type RollupTable = `wager_${Granularity}`;

export function rollupTable(level: Granularity): RollupTable {
  return `wager_${level}`;
}

export interface Rollup {
  readonly table: RollupTable;
  readonly level: Granularity;
  /**
   * SQL expression of the bucket of a time column (INT UNSIGNED Unix seconds): `placed_at` of a
   * wager, or the bucket of a finer rollup (an hour lies in one day and one month).
   */
  readonly bucketOf: (column: "placed_at" | "bucket") => string;
}

const BUCKET_OF: Readonly<Record<Granularity, Rollup["bucketOf"]>> = {
  hourly: (t) => `${t} - ${t} % ${HOUR}`,
  daily: (t) => `${t} - ${t} % ${DAY}`,
  // The 1st (days 1–15) or the 16th (days 16 to the end): the month's first day plus 15 days in the second half.
  halfmonthly: (t) =>
    `(${t} DIV ${DAY} + 1 - DAYOFMONTH(DATE '1970-01-01' + INTERVAL ${t} DIV ${DAY} DAY)` +
    ` + IF(DAYOFMONTH(DATE '1970-01-01' + INTERVAL ${t} DIV ${DAY} DAY) >= 16, 15, 0)) * ${DAY}`,
  // Day number of the first of the month = day number + 1 - day of month. Written in that
  // order so the unsigned arithmetic never goes below zero.
  monthly: (t) => `(${t} DIV ${DAY} + 1 - DAYOFMONTH(DATE '1970-01-01' + INTERVAL ${t} DIV ${DAY} DAY)) * ${DAY}`,
};

/**
 * Per wager (a row of `wagers` or a stage with its columns): the part of `amount` its weight leaves
 * out, amount × (10000 − weight_bps) / 10000, and the weighted amount, amount × weight_bps / 10000.
 * Multiplying by 0.0001 (not dividing by 10000) keeps them exact whatever div_precision_increment
 * says: DECIMAL(20,8) × integer × 0.0001 has 12 fraction digits. Rollups store the sum of the first
 * (`weight_discount`, so rows written before weights existed are right as they are) and, from
 * migration 12, the sum of the second (`weighted_sum`), which always equals total − weight_discount
 * exactly (DECIMAL sums of exact products), so a board ranks by a stored column instead of the
 * virtual `weighted_total`.
 */
export const WEIGHT_DISCOUNT_OF_WAGER = "amount * (10000 - weight_bps) * 0.0001";
export const WEIGHTED_AMOUNT_OF_WAGER = "amount * weight_bps * 0.0001";

/** The columns every rollup writer fills, in this order (the values: sums and the count). */
export const ROLLUP_VALUE_COLUMNS = "total, weight_discount, weighted_sum, wagers";

/** The sums of ROLLUP_VALUE_COLUMNS over raw wagers (a row of `wagers` or a stage with its columns). */
export const ROLLUP_SUMS_OF_WAGERS = `SUM(amount), SUM(${WEIGHT_DISCOUNT_OF_WAGER}), SUM(${WEIGHTED_AMOUNT_OF_WAGER}), COUNT(*)`;

/** The sums of ROLLUP_VALUE_COLUMNS over rows of a finer rollup (or a stage with its columns). */
export const ROLLUP_SUMS_OF_ROLLUP = "SUM(total), SUM(weight_discount), SUM(weighted_sum), SUM(wagers)";

/**
 * The tail of an INSERT … SELECT into a rollup (ROLLUP_VALUE_COLUMNS): an existing row grows by the
 * new rows' sums and count, by exact DECIMAL addition. A row whose `weighted_sum` is still NULL (written
 * before migration 12 and not yet backfilled) stays NULL here; the backfill sets it (and on a database
 * where migration 12 ran, its triggers set it on every write anyway: ../../schema/schema-migrations.ts).
 */
export function upsertAdding(table: RollupTable): string {
  return (
    `ON DUPLICATE KEY UPDATE total = ${table}.total + VALUES(total), ` +
    `weight_discount = ${table}.weight_discount + VALUES(weight_discount), ` +
    `weighted_sum = ${table}.weighted_sum + VALUES(weighted_sum), wagers = ${table}.wagers + VALUES(wagers)`
  );
}

/**
 * Adds the rows of `source` (a table or stage of wagers, or of a finer rollup: `from` names its time column and
 * `sums` its ROLLUP_SUMS_OF_WAGERS or ROLLUP_SUMS_OF_ROLLUP) into `rollup`, summed per (affiliate, bucket, user)
 * and touching the rollup's keys in primary key order.
 */
export function addIntoRollup(rollup: Rollup, source: string, from: "placed_at" | "bucket", sums: string): string {
  return `INSERT INTO ${rollup.table} (affiliate_id, bucket, user_id, ${ROLLUP_VALUE_COLUMNS})
       SELECT affiliate_id, ${rollup.bucketOf(from)} AS b, user_id, ${sums}
         FROM ${source}
        GROUP BY affiliate_id, b, user_id
        ORDER BY affiliate_id, b, user_id
       ${upsertAdding(rollup.table)}`;
}

/** Finest first: each level can be grouped from the one before it. */
export const ROLLUPS: readonly Rollup[] = GRANULARITIES.map((level) => ({
  table: rollupTable(level),
  level,
  bucketOf: BUCKET_OF[level],
}));
