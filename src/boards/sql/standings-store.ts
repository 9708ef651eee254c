/**
 * The MariaDB adapters of the standings port (src/ports/standings.ts): the boards' statements
 * (./leaderboard-queries.ts, ./held-reads.ts) bound to a pool. The services take the port, so the same
 * services run on the in-memory reference model in tests (test/support/reference-model.ts).
 */
import type { Pool, PoolConnection } from "mysql2/promise";
import { guardedPeriods, HorizonWatch, horizonsOf } from "../../ingest/sql/retention-horizon.js";
import { weightedColumnReader } from "../../ingest/sql/weighted-backfill.js";
import { migrationRecordedReader } from "../../platform/database/schema-record.js";
import type { StandingsStore } from "../../ports/standings.js";
import type { RankBy } from "../../values/weights.js";
import { boardInOneSnapshot, totalsOfUsers, userKeysOf } from "./held-reads.js";
import { type BoardRead, type BoardScope, topUsersFromBuckets } from "./leaderboard-queries.js";
import { AffiliateSizes, THRESHOLD_MIN_USERS } from "./threshold-board.js";

/** The migration whose index the threshold plan reads (../../schema/schema-migrations.ts). */
const MONTHLY_RANKING_INDEX_MIGRATION = 25;

export interface StandingsOptions {
  /**
   * `auto` (the default): the plan by the affiliate's size (BoardScope in ./leaderboard-queries.ts: one statement for
   * an affiliate of fewer than THRESHOLD_MIN_USERS users, the threshold plan for a long period of a larger one once
   * migration 25 is recorded); `rollup`: always the usual two statements over the rollups (benches compare them).
   */
  readonly plans?: "auto" | "rollup";
}

const USUAL: BoardScope = { kind: "usual" };
const LARGE: BoardScope = { kind: "large" };

/**
 * How each affiliate's boards may be read: its size (AffiliateSizes: read at most every 10 minutes, a small
 * affiliate's every minute), whether migration 25 is recorded (asked of the schema record, like the weighted
 * column), and for a small affiliate the wager horizon that holds for it (raw wagers from it on are all there).
 */
function boardScopes(
  pool: Pool,
  horizons: HorizonWatch,
  options: StandingsOptions,
): (affiliateId: number) => Promise<BoardScope> {
  if (options.plans === "rollup") return async () => USUAL;
  const recorded = migrationRecordedReader(pool, MONTHLY_RANKING_INDEX_MIGRATION);
  const sizes = new AffiliateSizes(pool);
  return async (affiliateId) => {
    const size = await sizes.of(affiliateId);
    if (size.months !== undefined) {
      const rawHeldFrom = horizonsOf(await horizons.fresh(), affiliateId).wagers;
      return { kind: "small", months: size.months, rawHeldFrom };
    }
    return size.users >= THRESHOLD_MIN_USERS && (await recorded()) ? LARGE : USUAL;
  };
}

/**
 * The board to read for a period (its pieces under the retention guard, the weighted column in use, the plan its
 * affiliate's size allows), as the standings below ask for them.
 */
function boardReads(
  pool: Pool,
  horizons: HorizonWatch,
  options: StandingsOptions,
): (affiliateId: number, start: number, end: number, limit: number, rankBy: RankBy) => Promise<BoardRead> {
  const weighted = weightedColumnReader(pool);
  const scopes = boardScopes(pool, horizons, options);
  const periods = guardedPeriods(horizons);
  return async (affiliateId, start, end, limit, rankBy) => {
    const ranges = await periods(affiliateId, start, end);
    // The plan is settled here, on the pool, before the board's statements take a connection (BoardRead.scope).
    const scope = ranges.length === 0 ? USUAL : await scopes(affiliateId);
    return { affiliateId, ranges, limit, rankBy, weighted: await weighted(), scope };
  };
}

/**
 * Periods answered from the rollups plus raw edges (../../ingest/sql/period-buckets.ts); a period needing rows the retention job
 * deleted is refused (../../ingest/sql/retention-horizon.ts), under the horizons `horizons` holds (the process's one
 * watch; a watch of its own on `pool` by default).
 */
export function mariadbStandings(
  pool: Pool,
  horizons: HorizonWatch = new HorizonWatch(pool),
  options: StandingsOptions = {},
): StandingsStore {
  const weighted = weightedColumnReader(pool);
  const periods = guardedPeriods(horizons);
  const board = boardReads(pool, horizons, options);
  return {
    topUsers: async (...query) => topUsersFromBuckets(pool, await board(...query)),
    keyed: {
      boardWithKeys: async (...query) => boardInOneSnapshot(pool, await board(...query)),
      userKeys: (externalIds) => userKeysOf(pool, externalIds),
      totalsOf: async (affiliateId, start, end, userKeys) =>
        totalsOfUsers(pool, affiliateId, await periods(affiliateId, start, end), userKeys, await weighted()),
    },
  };
}

/**
 * The standings a race's freeze reads: on the primary, and on a Galera node only once the node has
 * applied every write the cluster committed before the read (`wsrep_sync_wait = 1` on the read's own
 * connection; without Galera the setting changes nothing), so a void confirmed on another node just
 * before the freeze is in the frozen result. MySQL has no such setting and no Galera.
 */
export function causalStandings(
  pool: Pool,
  flavour: "mariadb" | "mysql",
  horizons: HorizonWatch = new HorizonWatch(pool),
): StandingsStore {
  const boardOf = boardReads(pool, horizons, {});
  return {
    async topUsers(affiliateId, start, end, limit, rankBy) {
      const board = await boardOf(affiliateId, start, end, limit, rankBy);
      const connection = await pool.getConnection();
      let waiting = false;
      try {
        if (flavour === "mariadb") {
          await connection.query("SET SESSION wsrep_sync_wait = 1");
          waiting = true;
        }
        return await topUsersFromBuckets(connection, board);
      } finally {
        await releaseAfter(connection, waiting ? "SET SESSION wsrep_sync_wait = 0" : undefined);
      }
    },
  };
}

/** Returns a connection to its pool after `reset`; one that cannot be reset is closed instead. */
async function releaseAfter(connection: PoolConnection, reset: string | undefined): Promise<void> {
  if (reset === undefined) return connection.release();
  try {
    await connection.query(reset);
    connection.release();
  } catch {
    connection.destroy();
  }
}
