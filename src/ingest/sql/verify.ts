/**
 * `verify`: recomputes every rollup row from the raw wagers and reports each row that differs, is missing, or should
 * not exist. How it screens and re-checks without locks: docs/architecture.md, "Verifying the rollups". Once the
 * retention job pruned raw wagers (or hourly rows), only the buckets that start at or after the horizon are checked
 * (`checkedFrom`): the rows before it have nothing left to be checked against.
 */
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";
import { bucketCeil } from "../../values/calendar.js";
import type { RetentionHorizons } from "../../values/retention-horizon.js";
import { readHorizons } from "./retention-horizon.js";
import {
  ROLLUP_SUMS_OF_ROLLUP,
  ROLLUP_SUMS_OF_WAGERS,
  ROLLUP_VALUE_COLUMNS,
  ROLLUPS,
  type Rollup,
  rollupTable,
  WEIGHT_DISCOUNT_OF_WAGER,
  WEIGHTED_AMOUNT_OF_WAGER,
} from "./rollups.js";

/** A rollup row's content: the plain total, the stored weighted total ("NULL" when not set) and the number of wagers. */
export interface RollupContent {
  readonly total: string;
  readonly weightedTotal: string;
  readonly wagers: number;
}

export interface Mismatch {
  readonly level: Rollup["level"];
  readonly affiliateId: string;
  readonly bucket: number;
  readonly userId: string;
  /** From the raw wagers; null when there are none for this key (the rollup row should not exist). */
  readonly expected: RollupContent | null;
  /** In the rollup table; null when the row is missing. */
  readonly found: RollupContent | null;
}

export interface VerifyReport {
  readonly wagers: number;
  readonly rows: Readonly<Record<Rollup["level"], number>>;
  readonly mismatchCount: number;
  /** The first mismatches (up to the requested number), by range, level, affiliate, bucket, user. */
  readonly mismatches: readonly Mismatch[];
  /** The retention horizons: raw wagers and the buckets starting before them were not checked (0: all were). */
  readonly checkedFrom: RetentionHorizons;
}

export interface VerifyOptions {
  /** Keep at most this many mismatches in the report (all are counted). */
  readonly maxReported?: number;
  /** Wagers per range of affiliates (an estimate is used to plan the ranges). */
  readonly wagersPerRange?: number;
  /** Called after each range with the estimated wagers checked so far and the estimated total. */
  readonly onProgress?: (checked: number, total: number) => void;
}

const MAX_AFFILIATE_ID = 4_294_967_295;
const TEMP_BYTES = 1024 * 1024 * 1024;
/** Raw wagers grouped by hour for the current range, and the same grouped per day, half-month and month. */
const EXPECTED = Object.fromEntries(ROLLUPS.map(({ level }) => [level, `verify_expected_${level}`])) as Readonly<
  Record<Rollup["level"], string>
>;

export async function verifyRollups(pool: Pool, options: VerifyOptions = {}): Promise<VerifyReport> {
  const maxReported = options.maxReported ?? 100;
  const connection = await pool.getConnection();
  try {
    await connection.query("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
    // A range's groups must stay in memory: on disk, grouping is several times slower.
    await connection.query("SET SESSION tmp_table_size = ?, max_heap_table_size = ?", [TEMP_BYTES, TEMP_BYTES]);
    for (const table of Object.values(EXPECTED)) {
      await connection.query(`DROP TEMPORARY TABLE IF EXISTS ${table}`);
      await connection.query(
        `CREATE TEMPORARY TABLE ${table} (
          affiliate_id INT UNSIGNED NOT NULL, bucket INT UNSIGNED NOT NULL, user_id INT UNSIGNED NOT NULL,
          total DECIMAL(30,8) NOT NULL, weight_discount DECIMAL(34,12) NOT NULL,
          weighted_sum DECIMAL(34,12) NOT NULL, wagers INT UNSIGNED NOT NULL,
          PRIMARY KEY USING BTREE (affiliate_id, bucket, user_id)) ENGINE=MEMORY`,
      );
    }
    const horizons = await readHorizons(connection);
    const checkedFrom = { wagers: horizons.wagers, hourly: horizons.hourly };
    const from = firstCheckedBuckets(checkedFrom);
    const ranges = await planRanges(connection, options.wagersPerRange ?? 1_000_000);
    const estimatedTotal = ranges.reduce((sum, r) => sum + r.estimate, 0);
    let checked = 0;
    let wagers = 0;
    const rows = { hourly: 0, daily: 0, halfmonthly: 0, monthly: 0 };
    let mismatchCount = 0;
    const mismatches: Mismatch[] = [];
    for (const range of ranges) {
      wagers += await groupRawByHour(connection, range, checkedFrom.wagers);
      for (const rollup of ROLLUPS) {
        const [size] = await connection.query<RowDataPacket[]>(
          `SELECT COUNT(*) AS n FROM ${rollup.table} WHERE affiliate_id BETWEEN ? AND ?`,
          [range.from, range.to],
        );
        rows[rollup.level] += Number(size[0]?.n ?? 0);
        if (!(await screenLooksWrong(connection, rollup, range, from[rollup.level]))) continue;
        const found = await exactMismatches(connection, rollup, range, from[rollup.level]);
        mismatchCount += found.length;
        if (mismatches.length < maxReported && found.length > 0) {
          mismatches.push(
            ...(await describe(connection, rollup.level, found.slice(0, maxReported - mismatches.length))),
          );
        }
      }
      checked += range.estimate;
      options.onProgress?.(checked, estimatedTotal);
    }
    for (const table of Object.values(EXPECTED)) await connection.query(`DROP TEMPORARY TABLE IF EXISTS ${table}`);
    return { wagers, rows, mismatchCount, mismatches, checkedFrom };
  } finally {
    // The connection goes back to the pool: restore the session defaults.
    await connection.query("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ").catch(() => undefined);
    await connection
      .query("SET SESSION tmp_table_size = DEFAULT, max_heap_table_size = DEFAULT")
      .catch(() => undefined);
    connection.release();
  }
}

/**
 * The first bucket of each level checked under the horizons: the first that starts at or after the wager horizon
 * (a bucket straddling it lost some of its raw wagers), and for the hourly level not before the hourly horizon.
 */
function firstCheckedBuckets(horizons: RetentionHorizons): Readonly<Record<Rollup["level"], number>> {
  const first = (level: Rollup["level"]) => (horizons.wagers === 0 ? 0 : bucketCeil(level, horizons.wagers));
  return {
    hourly: Math.max(first("hourly"), horizons.hourly),
    daily: first("daily"),
    halfmonthly: first("halfmonthly"),
    monthly: first("monthly"),
  };
}

/** Fills the expected tables for a range from the wagers placed at or after `since`; returns how many there are. */
async function groupRawByHour(connection: PoolConnection, range: Range, since: number): Promise<number> {
  for (const table of Object.values(EXPECTED)) await connection.query(`DELETE FROM ${table}`);
  const [hourly, ...coarser] = ROLLUPS as [Rollup, ...Rollup[]];
  await connection.query(
    `INSERT INTO ${EXPECTED.hourly} (affiliate_id, bucket, user_id, ${ROLLUP_VALUE_COLUMNS})
     SELECT affiliate_id, ${hourly.bucketOf("placed_at")} AS b, user_id, ${ROLLUP_SUMS_OF_WAGERS}
       FROM wagers WHERE affiliate_id BETWEEN ? AND ? AND placed_at >= ?
      GROUP BY affiliate_id, b, user_id`,
    [range.from, range.to, since],
  );
  for (const rollup of coarser) {
    await connection.query(
      `INSERT INTO ${EXPECTED[rollup.level]} (affiliate_id, bucket, user_id, ${ROLLUP_VALUE_COLUMNS})
       SELECT affiliate_id, ${rollup.bucketOf("bucket")} AS b, user_id, ${ROLLUP_SUMS_OF_ROLLUP}
         FROM ${EXPECTED.hourly} GROUP BY affiliate_id, b, user_id`,
    );
  }
  const [count] = await connection.query<RowDataPacket[]>(
    `SELECT COALESCE(SUM(wagers), 0) AS n FROM ${EXPECTED.hourly}`,
  );
  return Number(count[0]?.n ?? 0);
}

/** The cheap screen: does any rollup row of this range (from bucket `from`) differ from, lack or exceed the expected rows? */
async function screenLooksWrong(
  connection: PoolConnection,
  rollup: Rollup,
  range: Range,
  from: number,
): Promise<boolean> {
  const expected = EXPECTED[rollup.level];
  const [wrong] = await connection.query<RowDataPacket[]>(
    `SELECT 1 FROM ${expected} e
       LEFT JOIN ${rollup.table} r ON r.affiliate_id = e.affiliate_id AND r.bucket = e.bucket AND r.user_id = e.user_id
      WHERE e.bucket >= ? AND (r.user_id IS NULL OR r.total <> e.total OR r.weight_discount <> e.weight_discount
         OR r.wagers <> e.wagers OR NOT (r.weighted_sum <=> e.weighted_sum))
      LIMIT 1`,
    [from],
  );
  if (wrong.length > 0) return true;
  const [extra] = await connection.query<RowDataPacket[]>(
    `SELECT 1 FROM ${rollup.table} r
       LEFT JOIN ${expected} e ON e.affiliate_id = r.affiliate_id AND e.bucket = r.bucket AND e.user_id = r.user_id
      WHERE r.affiliate_id BETWEEN ? AND ? AND r.bucket >= ? AND e.user_id IS NULL
      LIMIT 1`,
    [range.from, range.to, from],
  );
  return extra.length > 0;
}

/** The authoritative check of one range and level: raw wagers and rollup rows in a single read. */
async function exactMismatches(
  connection: PoolConnection,
  rollup: Rollup,
  range: Range,
  from: number,
): Promise<RowDataPacket[]> {
  // The stored weighted total (migration 12) is checked against the raw wagers' weighted amounts, and
  // the discount as well (the virtual `weighted_total` that earlier versions read is derived from it).
  const [found] = await connection.query<RowDataPacket[]>(
    `SELECT affiliate_id, bucket, user_id,
            SUM(raw_total) AS expected_total, SUM(raw_discount) AS expected_discount, SUM(raw_wagers) AS expected_wagers,
            SUM(raw_weighted) AS expected_weighted, SUM(rollup_total) AS found_total,
            SUM(rollup_discount) AS found_discount, SUM(rollup_wagers) AS found_wagers,
            IF(MAX(weighted_missing) = 1, NULL, SUM(rollup_weighted)) AS found_weighted, MAX(in_rollup) AS in_rollup
       FROM (SELECT affiliate_id, ${rollup.bucketOf("placed_at")} AS bucket, user_id,
                    SUM(amount) AS raw_total, SUM(${WEIGHT_DISCOUNT_OF_WAGER}) AS raw_discount, COUNT(*) AS raw_wagers,
                    SUM(${WEIGHTED_AMOUNT_OF_WAGER}) AS raw_weighted,
                    0 AS rollup_total, 0 AS rollup_discount, 0 AS rollup_wagers, 0 AS rollup_weighted,
                    0 AS weighted_missing, 0 AS in_rollup
               FROM wagers WHERE affiliate_id BETWEEN ? AND ? AND placed_at >= ?
              GROUP BY affiliate_id, bucket, user_id
             UNION ALL
             SELECT affiliate_id, bucket, user_id, 0, 0, 0, 0, total, weight_discount, wagers,
                    COALESCE(weighted_sum, 0), weighted_sum IS NULL, 1
               FROM ${rollup.table} WHERE affiliate_id BETWEEN ? AND ? AND bucket >= ?) x
      GROUP BY affiliate_id, bucket, user_id
     HAVING in_rollup = 0 OR expected_wagers = 0 OR found_weighted IS NULL
         OR expected_total <> found_total OR expected_discount <> found_discount OR expected_wagers <> found_wagers
         OR expected_weighted <> found_weighted
      ORDER BY affiliate_id, bucket, user_id`,
    [range.from, range.to, from, range.from, range.to, from],
  );
  return found;
}

interface Range {
  readonly from: number;
  readonly to: number;
  readonly estimate: number;
}

/**
 * Contiguous affiliate id ranges covering every possible id, sized by the
 * wagers the monthly totals claim (an estimate: if those are wrong, the
 * ranges are merely uneven; the check itself reads the raw wagers).
 */
async function planRanges(connection: PoolConnection, wagersPerRange: number): Promise<Range[]> {
  const [rows] = await connection.query<RowDataPacket[]>(
    `SELECT a.id, COALESCE(SUM(m.wagers), 0) AS n
       FROM affiliates a LEFT JOIN ${rollupTable("monthly")} m ON m.affiliate_id = a.id
      GROUP BY a.id ORDER BY a.id`,
  );
  const ranges: Range[] = [];
  let from = 0;
  let estimate = 0;
  for (const row of rows) {
    estimate += Number(row.n);
    if (estimate >= wagersPerRange) {
      ranges.push({ from, to: Number(row.id), estimate });
      from = Number(row.id) + 1;
      estimate = 0;
    }
  }
  ranges.push({ from, to: MAX_AFFILIATE_ID, estimate });
  return ranges;
}

async function describe(
  connection: PoolConnection,
  level: Rollup["level"],
  rows: RowDataPacket[],
): Promise<Mismatch[]> {
  const [names] = await connection.query<RowDataPacket[]>(
    `SELECT 'a' AS kind, id, external_id FROM affiliates WHERE id IN (?)
     UNION ALL SELECT 'u', id, external_id FROM users WHERE id IN (?)`,
    [rows.map((r) => Number(r.affiliate_id)), rows.map((r) => Number(r.user_id))],
  );
  const name = (kind: string, id: number) =>
    String(names.find((n) => n.kind === kind && Number(n.id) === id)?.external_id ?? `#${id}`);
  return rows.map((r) => ({
    level,
    affiliateId: name("a", Number(r.affiliate_id)),
    bucket: Number(r.bucket),
    userId: name("u", Number(r.user_id)),
    expected:
      Number(r.expected_wagers) === 0 ? null : content(r.expected_total, r.expected_weighted, r.expected_wagers),
    found: Number(r.in_rollup) === 0 ? null : content(r.found_total, r.found_weighted, r.found_wagers),
  }));
}

/** As the database writes the sums (e.g. "12.50000000", "6.250000000000"). */
function content(total: unknown, weighted: unknown, wagers: unknown): RollupContent {
  return { total: String(total), weightedTotal: weighted === null ? "NULL" : String(weighted), wagers: Number(wagers) };
}
