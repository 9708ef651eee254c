/**
 * The MariaDB adapters of the standings port (src/ports/standings.ts): the boards' statements
 * (./leaderboard-queries.ts, ./held-reads.ts) bound to a pool. The services take the port, so the same
 * services run on the in-memory reference model in tests (test/support/reference-model.ts).
 */
import type { Pool, PoolConnection } from "mysql2/promise";
import { guardedPeriods, HorizonWatch } from "../../ingest/sql/retention-horizon.js";
import { weightedColumnReader } from "../../ingest/sql/weighted-backfill.js";
import { migrationRecordedReader } from "../../platform/database/schema-record.js";
import type { StandingsStore } from "../../ports/standings.js";
import { boardInOneSnapshot, totalsOfUsers, userKeysOf } from "./held-reads.js";
import { topUsersFromBuckets } from "./leaderboard-queries.js";
import { AffiliateUsers, THRESHOLD_MIN_USERS } from "./threshold-board.js";

/** The migration whose index the threshold plan reads (../../schema/schema-migrations.ts). */
const MONTHLY_RANKING_INDEX_MIGRATION = 25;

export interface StandingsOptions {
  /**
   * `auto` (the default): a long period of an affiliate of THRESHOLD_MIN_USERS users or more is answered by the
   * threshold plan once migration 25 is recorded (./threshold-board.ts); `rollup`: always by summing the period's
   * rollup rows (benches compare the two).
   */
  readonly plans?: "auto" | "rollup";
}

/**
 * Whether a long period of an affiliate may use the threshold plan: migration 25 is recorded (asked of the schema
 * record, like the weighted column) and the affiliate is large enough; asked only of long periods.
 */
function thresholdGate(pool: Pool, options: StandingsOptions): (affiliateId: number) => () => Promise<boolean> {
  if (options.plans === "rollup") return () => async () => false;
  const recorded = migrationRecordedReader(pool, MONTHLY_RANKING_INDEX_MIGRATION);
  const users = new AffiliateUsers(pool);
  return (affiliateId) => async () => (await recorded()) && (await users.count(affiliateId)) >= THRESHOLD_MIN_USERS;
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
  const threshold = thresholdGate(pool, options);
  const periods = guardedPeriods(horizons);
  return {
    topUsers: async (affiliateId, start, end, limit, rankBy) =>
      topUsersFromBuckets(
        pool,
        affiliateId,
        await periods(affiliateId, start, end),
        limit,
        rankBy,
        await weighted(),
        threshold(affiliateId),
      ),
    keyed: {
      boardWithKeys: async (affiliateId, start, end, limit, rankBy) =>
        boardInOneSnapshot(
          pool,
          affiliateId,
          await periods(affiliateId, start, end),
          limit,
          rankBy,
          await weighted(),
          threshold(affiliateId),
        ),
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
  const weighted = weightedColumnReader(pool);
  const threshold = thresholdGate(pool, {});
  const periods = guardedPeriods(horizons);
  return {
    async topUsers(affiliateId, start, end, limit, rankBy) {
      const column = await weighted();
      const thresholdPlan = threshold(affiliateId);
      const ranges = await periods(affiliateId, start, end);
      const connection = await pool.getConnection();
      let waiting = false;
      try {
        if (flavour === "mariadb") {
          await connection.query("SET SESSION wsrep_sync_wait = 1");
          waiting = true;
        }
        return await topUsersFromBuckets(connection, affiliateId, ranges, limit, rankBy, column, thresholdPlan);
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
