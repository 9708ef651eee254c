/**
 * The MariaDB adapters of the storage ports (src/ports/): each binds a pool to the SQL modules
 * beside this file. The services take the ports, so the same services run on the in-memory
 * reference model in tests (test/support/reference-model.ts).
 */
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";
import type { ApiKeyStore, KeyStore } from "../ports/api-keys.js";
import type { ChangeStore } from "../ports/changes.js";
import type { IngestStore } from "../ports/ingest.js";
import type { RaceStore } from "../ports/races.js";
import type { SchemaVersions } from "../ports/schema.js";
import type { StandingsStore } from "../ports/standings.js";
import {
  affiliateHasUsers,
  findApiKeyById,
  findApiKeysByIds,
  insertApiKey,
  listApiKeys,
  listUsableApiKeys,
  revokeApiKey,
  rotateApiKey,
  setApiKeyRankBy,
  setApiKeyRateLimit,
} from "./api-keys.js";
import { changeIdsBetween, latestChangeId, pruneChanges, readChanges } from "./data-changes.js";
import { boardInOneSnapshot, totalsOfUsers, userKeysOf } from "./held-reads.js";
import { topUsersFromBuckets } from "./leaderboard-queries.js";
import { currentSchemaVersion } from "./migration-runner.js";
import { deferRaceStep, oldestDueStep } from "./race-clock.js";
import { deletedRaceOwner, raceCorrectedUsers, raceCorrectionCounts, readRaceHistory } from "./race-history.js";
import { deleteUnseenRace, insertNewRace } from "./race-slugs.js";
import { announceEnd, announceStart, freezeRace } from "./race-steps.js";
import {
  affiliateKey,
  cancelRace,
  dueRaces,
  findAffiliateKey,
  frozenEntries,
  listRaces,
  raceById,
  racesAroundNow,
  seriesRace,
  updateRace,
} from "./races.js";
import { isOlderThanFloor, readReleaseFloor, releaseTooOldMessage } from "./release-floor.js";
import { guardedPeriods } from "./retention-horizon.js";
import { LATEST_SCHEMA_VERSION } from "./schema-migrations.js";
import { signedResultOf } from "./signed-results.js";
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from "./transactions.js";
import { upsertUserBatch } from "./users.js";
import { voidWagerBatch } from "./voids.js";
import { recordWagerBatch } from "./wagers.js";
import { weightedColumnReader } from "./weighted-backfill.js";

/**
 * Periods answered from the rollups plus raw edges (./period-buckets.ts); a period needing rows the retention job
 * deleted is refused (./retention-horizon.ts).
 */
export function mariadbStandings(pool: Pool): StandingsStore {
  const weighted = weightedColumnReader(pool);
  const periods = guardedPeriods(pool);
  return {
    topUsers: async (affiliateId, start, end, limit, rankBy) =>
      topUsersFromBuckets(pool, affiliateId, await periods(start, end), limit, rankBy, await weighted()),
    keyed: {
      boardWithKeys: async (affiliateId, start, end, limit, rankBy) =>
        boardInOneSnapshot(pool, affiliateId, await periods(start, end), limit, rankBy, await weighted()),
      userKeys: (externalIds) => userKeysOf(pool, externalIds),
      totalsOf: async (affiliateId, start, end, userKeys) =>
        totalsOfUsers(pool, affiliateId, await periods(start, end), userKeys, await weighted()),
    },
  };
}

/**
 * The standings a race's freeze reads: on the primary, and on a Galera node only once the node has
 * applied every write the cluster committed before the read (`wsrep_sync_wait = 1` on the read's own
 * connection; without Galera the setting changes nothing), so a void confirmed on another node just
 * before the freeze is in the frozen result. MySQL has no such setting and no Galera.
 */
export function causalStandings(pool: Pool, flavour: "mariadb" | "mysql"): StandingsStore {
  const weighted = weightedColumnReader(pool);
  const periods = guardedPeriods(pool);
  return {
    async topUsers(affiliateId, start, end, limit, rankBy) {
      const column = await weighted();
      const ranges = await periods(start, end);
      const connection = await pool.getConnection();
      let waiting = false;
      try {
        if (flavour === "mariadb") {
          await connection.query("SET SESSION wsrep_sync_wait = 1");
          waiting = true;
        }
        return await topUsersFromBuckets(connection, affiliateId, ranges, limit, rankBy, column);
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

/** Each batch one transaction, retried on deadlock and lock wait timeout by `retry`. */
export function mariadbIngest(pool: Pool, retry: RetryPolicy = DEFAULT_RETRY_POLICY): IngestStore {
  return {
    upsertUsers: (users) => upsertUserBatch(pool, users, retry),
    recordWagers: (wagers) => recordWagerBatch(pool, wagers, retry),
    voidWagers: (ids) => voidWagerBatch(pool, ids, retry),
  };
}

export function mariadbApiKeys(pool: Pool): ApiKeyStore {
  return {
    insert: (key) => insertApiKey(pool, key),
    findById: (id) => findApiKeyById(pool, id),
    list: (affiliateExternalId) => listApiKeys(pool, affiliateExternalId),
    revoke: (id) => revokeApiKey(pool, id),
    setRateLimit: (id, rateLimit) => setApiKeyRateLimit(pool, id, rateLimit),
    setRankBy: (id, rankBy) => setApiKeyRankBy(pool, id, rankBy),
    rotate: (oldId, fresh, oldExpiresAt) => rotateApiKey(pool, oldId, fresh, oldExpiresAt),
    affiliateHasUsers: (affiliateExternalId) => affiliateHasUsers(pool, affiliateExternalId),
  };
}

/** What the in-memory key set reads (auth/key-set.ts). */
export function mariadbKeyRecords(pool: Pool): KeyStore {
  return {
    usable: (nowSeconds) => listUsableApiKeys(pool, nowSeconds),
    byIds: (ids) => findApiKeysByIds(pool, ids),
  };
}

export function mariadbChanges(pool: Pool): ChangeStore {
  return {
    idStep: () => autoIncrementStep(pool),
    latestChangeId: () => latestChangeId(pool),
    changeIdsBetween: (from, to) => changeIdsBetween(pool, from, to),
    readChanges: (afterId, missingIds, limit) => readChanges(pool, afterId, missingIds, limit),
    prune: (olderThanSeconds) => pruneChanges(pool, olderThanSeconds),
  };
}

/** `release`: the running release, checked against the schema's release floor (./release-floor.ts). */
export function mariadbSchema(pool: Pool, release: string): SchemaVersions {
  return {
    expected: LATEST_SCHEMA_VERSION,
    current: () => currentSchemaVersion(pool),
    releaseRefusal: async () => {
      const floor = await readReleaseFloor(pool);
      return floor !== undefined && isOlderThanFloor(release, floor) ? releaseTooOldMessage(release, floor) : undefined;
    },
  };
}

/** `@@auto_increment_increment`: the change ids' step (the cluster size on Galera). */
async function autoIncrementStep(pool: Pool): Promise<number> {
  const [rows] = await pool.query<RowDataPacket[]>("SELECT @@auto_increment_increment AS step");
  const step = Number(rows[0]?.step ?? 1);
  return Number.isInteger(step) && step > 0 ? step : 1;
}

export function mariadbRaces(pool: Pool): RaceStore {
  const weighted = weightedColumnReader(pool);
  return {
    affiliateKey: (externalId) => affiliateKey(pool, externalId),
    findAffiliateKey: (externalId) => findAffiliateKey(pool, externalId),
    insert: (race, actor) => insertNewRace(pool, race, actor),
    byId: (id) => raceById(pool, id),
    seriesRace: (affiliateId, slug, index) => seriesRace(pool, affiliateId, slug, index),
    aroundNow: (affiliateId, slug, now) => racesAroundNow(pool, affiliateId, slug, now),
    list: (query) => listRaces(pool, query),
    update: (id, definition, at, change) => updateRace(pool, id, definition, at, change),
    cancel: (id, at, event, actor) => cancelRace(pool, id, at, event, actor),
    deleteUnseen: (id, at, actor) => deleteUnseenRace(pool, id, at, actor),
    frozenEntries: (id) => frozenEntries(pool, id),
    due: (now, limit) => dueRaces(pool, now, limit),
    announceStart: (id, event, next, at) => announceStart(pool, id, event, next, at),
    announceEnd: (id, event, at) => announceEnd(pool, id, event, at),
    freeze: (id, result, event, owed, history, seal) => freezeRace(pool, id, result, event, owed, history, seal),
    signedResult: (id) => signedResultOf(pool, id),
    history: (id) => readRaceHistory(pool, id),
    voidCounts: (id) => raceCorrectionCounts(pool, "race_voids", id),
    voidedUsers: (id) => raceCorrectedUsers(pool, "race_voids", id, weighted),
    lateWagerCounts: (id) => raceCorrectionCounts(pool, "race_late_wagers", id),
    lateWagerUsers: (id) => raceCorrectedUsers(pool, "race_late_wagers", id, weighted),
    deletedOwner: (id) => deletedRaceOwner(pool, id),
    deferStep: (id, until) => deferRaceStep(pool, id, until),
    oldestDueStep: (now, longestWait) => oldestDueStep(pool, now, longestWait),
  };
}
