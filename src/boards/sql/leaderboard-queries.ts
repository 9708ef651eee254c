/**
 * SQL for the leaderboard: plain and weighted totals per user of one affiliate over an inclusive period.
 * The weighted total of a rollup row is read from the stored `weighted_sum` once migration 12 (its
 * backfill) is recorded, and from the virtual `weighted_total` before (../../ingest/sql/weighted-backfill.ts).
 */
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";
import { ROLLUPS, WEIGHTED_AMOUNT_OF_WAGER } from "../../ingest/sql/rollups.js";
import type { WeightedColumn } from "../../ingest/sql/weighted-backfill.js";
import type { KeyedRow, RankedRow } from "../../ports/standings.js";
import { countBoardPlan } from "../../values/board-plans.js";
import type { BucketRange, Source } from "../../values/bucket-range.js";
import { bucketCeil, nextBucketStart } from "../../values/calendar.js";
import type { RankBy } from "../../values/weights.js";
import { type MonthlyProfile, smallBoardPieces } from "../core/small-board-plan.js";
import { monthsAndEdges } from "../core/threshold-plan.js";
import { RANKED_COLUMNS, thresholdContenders } from "./threshold-board.js";

export type { RankedRow };

/** The column a board is ordered by; a constant, never input. */
const RANK_COLUMN: Readonly<Record<RankBy, "total" | "weighted">> = { wagered: "total", weighted: "weighted" };

const order = (rankBy: RankBy) => `ORDER BY t.${RANK_COLUMN[rankBy]} DESC, u.username, u.external_id`;

/** Where each piece of a period is read: table and column names are constants (../../ingest/sql/rollups.ts), never input. */
interface SourceColumns {
  readonly table: string;
  readonly time: "placed_at" | "bucket";
  readonly plain: string;
  readonly weighted: string;
}

function sources(weighted: WeightedColumn): Readonly<Record<Source, SourceColumns>> {
  return Object.fromEntries([
    ["raw", { table: "wagers", time: "placed_at", plain: "amount", weighted: WEIGHTED_AMOUNT_OF_WAGER }],
    ...ROLLUPS.map((r) => [r.level, { table: r.table, time: "bucket", plain: "total", weighted }]),
  ]) as Readonly<Record<Source, SourceColumns>>;
}

const SOURCES: Readonly<Record<WeightedColumn, Readonly<Record<Source, SourceColumns>>>> = {
  weighted_sum: sources("weighted_sum"),
  weighted_total: sources("weighted_total"),
};

type Sources = Readonly<Record<Source, SourceColumns>>;

const inPeriod = (c: SourceColumns) => `${c.time} >= ? AND ${c.time} < ?`;

/** A piece's rows with both values, v (plain) and w (weighted), negated for a subtracted piece. */
function bothValues(source: Sources, range: BucketRange): string {
  const c = source[range.source];
  const sign = range.sign === 1 ? "" : "-";
  return `SELECT user_id, ${sign}(${c.plain}) AS v, ${sign}(${c.weighted}) AS w FROM ${c.table} WHERE affiliate_id = ?`;
}

/** A piece summing only the ranking value, r (a second DECIMAL sum over every row costs a third more). */
function rankedPiece(source: Sources, range: BucketRange, rankBy: RankBy): string {
  const c = source[range.source];
  const sign = range.sign === 1 ? "" : "-";
  const value = rankBy === "weighted" ? c.weighted : c.plain;
  return `SELECT user_id, ${sign}(${value}) AS r FROM ${c.table} WHERE affiliate_id = ? AND ${inPeriod(c)}`;
}

/** The start of the one rollup bucket a period is, or null when it is more than one piece or bucket. */
function singleBucket(ranges: readonly BucketRange[]): number | null {
  const [range] = ranges;
  if (ranges.length !== 1 || range === undefined || range.source === "raw" || range.sign !== 1) return null;
  const first = bucketCeil(range.source, range.from);
  return first < range.to && nextBucketStart(range.source, first) >= range.to ? first : null;
}

/**
 * The first step's statement without ORDER BY and LIMIT: user_id and `ranked` of every user with a
 * positive ranking value, and `value`, the expression to compare with a cut. A period that is one
 * bucket of one rollup (an aligned day, half-month or month) holds one row per user: its rows are
 * ranked as they are, with no GROUP BY (no temporary table: half the time of the grouped statement).
 */
function rankingStatement(
  source: Sources,
  affiliateId: number,
  ranges: readonly BucketRange[],
  rankBy: RankBy,
): { sql: string; params: number[]; value: string } {
  const bucket = singleBucket(ranges);
  const [range] = ranges;
  if (bucket !== null && range !== undefined) {
    const c = source[range.source];
    const value = rankBy === "weighted" ? c.weighted : c.plain;
    return {
      sql: `SELECT user_id, ${value} AS ranked FROM ${c.table} WHERE affiliate_id = ? AND bucket = ? AND ${value} > 0`,
      params: [affiliateId, bucket],
      value,
    };
  }
  const union = ranges.map((r) => rankedPiece(source, r, rankBy)).join(" UNION ALL ");
  // A user whose pieces cancel out (a subtracted edge held all their wagers) wagered nothing in the
  // period; a positive weighted total implies a positive plain one (weights are at most 1).
  // SQL_BIG_RESULT groups by sorting the rows instead of through a temporary table keyed by user:
  // a third faster on 12 months of the largest affiliate at 50M wagers (200,570 rows, 69,574 users).
  return {
    sql: `SELECT SQL_BIG_RESULT user_id, SUM(r) AS ranked FROM (${union}) x GROUP BY user_id HAVING ranked > 0`,
    params: ranges.flatMap((r) => [affiliateId, r.from, r.to]),
    value: "ranked",
  };
}

/** More bucket starts than this in one piece are read as a range (never with today's periods). */
const MAX_LISTED_BUCKETS = 400;

/**
 * A piece with both values for the listed users only. A rollup piece names its bucket starts, so
 * that MariaDB reads each (affiliate, bucket, user) by its primary key instead of scanning the range.
 * Sent as text with escaped values (`IN (?)` takes an array): its shape varies with the number of
 * users and buckets, and a prepared statement per shape would fill the server's statement cache.
 */
function chosenPiece(
  source: Sources,
  range: BucketRange,
  affiliateId: number,
  users: readonly number[],
): { sql: string; params: unknown[] } {
  const head = bothValues(source, range);
  if (range.source !== "raw") {
    const starts: number[] = [];
    for (let b = bucketCeil(range.source, range.from); b < range.to; b = nextBucketStart(range.source, b)) {
      starts.push(b);
      if (starts.length > MAX_LISTED_BUCKETS) break;
    }
    if (starts.length === 0) return { sql: `${head} AND FALSE`, params: [affiliateId] };
    if (starts.length <= MAX_LISTED_BUCKETS) {
      return { sql: `${head} AND bucket IN (?) AND user_id IN (?)`, params: [affiliateId, starts, users] };
    }
  }
  return {
    sql: `${head} AND ${inPeriod(source[range.source])} AND user_id IN (?)`,
    params: [affiliateId, range.from, range.to, users],
  };
}

/**
 * Both totals and the profile of each user the chosen pieces list (`having`: the sums a user must have to be
 * kept, "" for every user), in no order: the last step of a board, and the read of listed users' totals.
 */
function listedUsersTotals(parts: readonly { sql: string }[], having: string): string {
  return `SELECT u.id AS user_key, u.external_id, u.username, u.avatar_url, t.total, t.weighted
       FROM (SELECT user_id, SUM(v) AS total, SUM(w) AS weighted
               FROM (${parts.map((p) => p.sql).join(" UNION ALL ")}) x GROUP BY user_id${having}) t
       JOIN users u ON u.id = t.user_id`;
}

/** The board's rows with each user's internal key (`u.id AS user_key` in every board query). */
function toRows(rows: RowDataPacket[]): KeyedRow[] {
  return rows.map((row) => ({
    userKey: Number(row.user_key),
    userExternalId: String(row.external_id),
    username: String(row.username),
    avatarUrl: row.avatar_url === null ? null : String(row.avatar_url),
    total: String(row.total),
    weightedTotal: String(row.weighted),
  }));
}

/**
 * How an affiliate's boards may be read, by its size (./standings-store.ts asks it of the affiliate): `usual`,
 * every period ranked, then its chosen users' totals read (two statements); `large`, a long period by the threshold
 * plan (./threshold-board.ts); `small`, every period in one statement over its pieces or over the raw wagers,
 * whichever reads fewer rows by the affiliate's monthly profile (../core/small-board-plan.ts; raw only where the
 * retention job keeps every raw wager of the period: from `rawHeldFrom` on).
 */
export type BoardScope =
  | { readonly kind: "usual" }
  | { readonly kind: "large" }
  | { readonly kind: "small"; readonly months: MonthlyProfile; readonly rawHeldFrom: number };

/** One board to read: the affiliate (internal key), the period's pieces, its size and order. */
export interface BoardRead {
  readonly affiliateId: number;
  readonly ranges: readonly BucketRange[];
  readonly limit: number;
  /** By the plain total (the default) or the weighted one. */
  readonly rankBy?: RankBy;
  /** The rollups' weighted column: `weighted_sum` only once migration 12 is recorded (the default: `weighted_total`). */
  readonly weighted?: WeightedColumn;
  /**
   * `usual` when absent. Settled before the board is read, never asked for on the way: a board read on one
   * connection held from a pool (a snapshot, a causal read) must not need a second one from the same pool, or
   * as many such reads as the pool has connections wait for each other for ever.
   */
  readonly scope?: BoardScope;
}

/**
 * The top `limit` users from the rollups plus raw edges, ordered by the plain or the weighted
 * total descending, then username and user id in binary (code point) order, each with both totals.
 *
 * The usual plan is two steps, so that a board costs one DECIMAL sum per row, as before weights existed: the
 * ranking value alone is summed over the period's rows for the leading `limit + 1` users (the extra
 * one shows whether a tie crosses the cut; when it does, every user at or above the cut's value is
 * taken, so the username tie-break decides who is in, exactly as a full sort would); then both
 * totals of just those users are read by primary key, joined with users and ordered. Weighted
 * boards with fewer users of a positive weighted total than the limit may also list users whose
 * wagers all had weight 0 (weighted 0): those are read in one pass with both sums (small boards),
 * as is every board of a small affiliate (BoardScope).
 * The two statements read two snapshots, as the tie query always did: a write between them can
 * change a chosen user's totals (shown as read by the second) but not who was chosen; the change
 * feed then drops the cached answer and the next read takes the new order.
 */
export async function topUsersFromBuckets(pool: Pool | PoolConnection, board: BoardRead): Promise<RankedRow[]> {
  const rows = await keyedTopUsersFromBuckets(pool, board);
  return rows.map(({ userKey: _key, ...row }) => row);
}

/**
 * Whole months from which a period may be answered by the threshold plan (./threshold-board.ts): a shorter
 * period reads few rows per user already, and the plan's extra statements would cost more than they save.
 */
const THRESHOLD_MIN_MONTHS = 3;

/**
 * topUsersFromBuckets with each user's internal key (what boards kept current from the change feed hold). A `large`
 * affiliate's long period is answered by the threshold plan: the same board (the same users, totals and order)
 * reading a few rows per month instead of all.
 */
export async function keyedTopUsersFromBuckets(pool: Pool | PoolConnection, board: BoardRead): Promise<KeyedRow[]> {
  const { affiliateId, ranges, limit, rankBy = "wagered" } = board;
  if (ranges.length === 0) return [];
  const source = SOURCES[board.weighted ?? "weighted_total"];
  const scope = board.scope ?? { kind: "usual" };
  if (scope.kind === "small") {
    const read = smallBoardPieces(scope.months, ranges, scope.rawHeldFrom);
    countBoardPlan(read.source === "raw" ? "raw" : "small");
    return topUsersSummingBoth(pool, source, affiliateId, read.ranges, limit, rankBy);
  }
  const { months, edges } = monthsAndEdges(ranges);
  // A weighted board of one whole month too: migration 25's index orders a month by plain total, so the month's
  // weighted board would sort every row of the month; read by plain total, it stops after a few.
  const oneWeightedMonth = rankBy === "weighted" && months.length === 1 && edges.length === 0;
  const long =
    (months.length >= THRESHOLD_MIN_MONTHS || oneWeightedMonth) &&
    (rankBy === "wagered" || board.weighted === "weighted_sum");
  if (long && scope.kind === "large") {
    const rows = await thresholdBoard(pool, source, { ...board, rankBy }, months, edges);
    if (rows !== undefined) return rows;
  } else countBoardPlan("rollup");
  const ranking = rankingStatement(source, affiliateId, ranges, rankBy);
  const [leading] = await pool.execute<RowDataPacket[]>(`${ranking.sql} ORDER BY ranked DESC LIMIT ?`, [
    ...ranking.params,
    String(limit + 1),
  ]);
  if (rankBy === "weighted" && leading.length <= limit) {
    return topUsersSummingBoth(pool, source, affiliateId, ranges, limit, rankBy);
  }
  let chosen = leading;
  if (leading.length > limit) {
    const cut = String(leading[limit]?.ranked);
    if (String(leading[limit - 1]?.ranked) !== cut) chosen = leading.slice(0, limit);
    else
      [chosen] = await pool.execute<RowDataPacket[]>(
        `${ranking.sql} AND ${ranking.value} >= CAST(? AS DECIMAL(65,12))`,
        [...ranking.params, cut],
      );
  }
  return boardOfUsers(
    pool,
    source,
    affiliateId,
    ranges,
    chosen.map((row) => Number(row.user_id)),
    limit,
    rankBy,
  );
}

/**
 * A large affiliate's long period by the threshold plan (./threshold-board.ts), or undefined when the plan gave up
 * (counted as `fallback`: the caller answers by the usual plan).
 */
async function thresholdBoard(
  pool: Pool | PoolConnection,
  source: Sources,
  board: BoardRead & { readonly rankBy: RankBy },
  months: readonly number[],
  edges: readonly BucketRange[],
): Promise<KeyedRow[] | undefined> {
  const { affiliateId, limit, rankBy } = board;
  const ranked = RANKED_COLUMNS[rankBy === "weighted" ? "weighted_sum" : "total"];
  const answer = await thresholdContenders(pool, {
    affiliateId,
    months,
    ranked,
    edges:
      edges.length === 0
        ? undefined
        : {
            sql: `SELECT user_id, SUM(r) AS ranked FROM (${edges.map((r) => rankedPiece(source, r, rankBy)).join(" UNION ALL ")}) x GROUP BY user_id`,
            params: edges.flatMap((r) => [affiliateId, r.from, r.to]),
          },
    limit,
  });
  countBoardPlan(answer.ok ? "threshold" : "fallback");
  if (answer.ok) {
    // The months that hold no row of the affiliate add nothing (before its first users, or the future): the
    // last statement reads only the others, each run of adjacent months as one piece.
    const withRows: BucketRange[] = [];
    for (const month of answer.monthsWithRows) {
      const previous = withRows.at(-1);
      const to = nextBucketStart("monthly", month);
      if (previous?.to === month) withRows[withRows.length - 1] = { ...previous, to };
      else withRows.push({ source: "monthly", sign: 1, from: month, to });
    }
    return boardOfUsers(pool, source, affiliateId, [...withRows, ...edges], answer.users, limit, rankBy);
  }
  return undefined;
}

/**
 * The board among `users` (every user at or above the board's cut must be listed): their totals over the
 * period, read by primary key, ordered by the board's order, the first `limit` with a positive total.
 */
async function boardOfUsers(
  pool: Pool | PoolConnection,
  source: Sources,
  affiliateId: number,
  ranges: readonly BucketRange[],
  users: readonly number[],
  limit: number,
  rankBy: RankBy,
): Promise<KeyedRow[]> {
  if (users.length === 0) return [];
  const parts = ranges.map((r) => chosenPiece(source, r, affiliateId, users));
  const [rows] = await pool.query<RowDataPacket[]>(
    `${listedUsersTotals(parts, " HAVING total > 0")}
      ${order(rankBy)}
      LIMIT ?`,
    [...parts.flatMap((p) => p.params), limit],
  );
  return toRows(rows);
}

/**
 * The same board in one pass summing both totals over every row of the period (what
 * topUsersFromBuckets did before it ranked first): used for weighted boards that may have to list
 * users with a weighted total of 0.
 */
async function topUsersSummingBoth(
  pool: Pool | PoolConnection,
  source: Sources,
  affiliateId: number,
  ranges: readonly BucketRange[],
  limit: number,
  rankBy: RankBy,
): Promise<KeyedRow[]> {
  const rank = RANK_COLUMN[rankBy];
  const params = ranges.flatMap((r) => [affiliateId, r.from, r.to]);
  // A user whose pieces cancel out (a subtracted edge held all their wagers) wagered nothing in the
  // period. A user whose wagers all had weight 0 did wager: listed, with a weighted total of 0.
  const [only] = ranges;
  let aggregate: string;
  if (ranges.length === 1 && only?.sign === 1) {
    // One piece (a small affiliate's raw wagers, or one rollup range): summed straight from its table, without the
    // derived table of the union, which cost 30 µs of a 300 µs board (bench/query-layers.ts' board, 9 rounds).
    const c = source[only.source];
    aggregate = `SELECT user_id, SUM(${c.plain}) AS total, SUM(${c.weighted}) AS weighted FROM ${c.table}
                  WHERE affiliate_id = ? AND ${inPeriod(c)} GROUP BY user_id HAVING total > 0`;
  } else {
    const union = ranges.map((r) => `${bothValues(source, r)} AND ${inPeriod(source[r.source])}`).join(" UNION ALL ");
    aggregate = `SELECT user_id, SUM(v) AS total, SUM(w) AS weighted FROM (${union}) x GROUP BY user_id HAVING total > 0`;
  }
  const [rows] = await pool.execute<RowDataPacket[]>(
    `SELECT u.id AS user_key, u.external_id, u.username, u.avatar_url, t.total, t.weighted
       FROM (${aggregate} ORDER BY ${rank} DESC LIMIT ?) t
       JOIN users u ON u.id = t.user_id
      ${order(rankBy)}`,
    [...params, String(limit + 1)],
  );
  const leading = toRows(rows);
  if (leading.length <= limit) return leading;
  const value = (row: KeyedRow | undefined) => (rankBy === "weighted" ? row?.weightedTotal : row?.total);
  const cut = value(leading[limit]) ?? "0";
  if (value(leading[limit - 1]) !== cut) return leading.slice(0, limit);
  const [tied] = await pool.execute<RowDataPacket[]>(
    `SELECT u.id AS user_key, u.external_id, u.username, u.avatar_url, t.total, t.weighted
       FROM (${aggregate} AND ${rank} >= CAST(? AS DECIMAL(65,12))) t
       JOIN users u ON u.id = t.user_id
      ${order(rankBy)}
      LIMIT ?`,
    [...params, cut, String(limit)],
  );
  return toRows(tied);
}

/**
 * Both totals and the profile of the listed users (internal keys) over the period's pieces, in no order:
 * each rollup piece names its buckets and users, so MariaDB reads one primary key per (bucket, user)
 * instead of the affiliate's rows. A user without rows in the period is absent; one whose pieces
 * cancel has total 0.
 */
export async function totalsOfListedUsers(
  pool: Pool | PoolConnection,
  affiliateId: number,
  ranges: readonly BucketRange[],
  users: readonly number[],
  weighted: WeightedColumn = "weighted_total",
): Promise<KeyedRow[]> {
  if (ranges.length === 0 || users.length === 0) return [];
  const parts = ranges.map((r) => chosenPiece(SOURCES[weighted], r, affiliateId, users));
  const [rows] = await pool.query<RowDataPacket[]>(
    listedUsersTotals(parts, ""),
    parts.flatMap((p) => p.params),
  );
  return toRows(rows);
}
