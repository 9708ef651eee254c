/**
 * The public app's domain, built once per app: the key set, readiness, the change feed and what follows it (the
 * cached leaderboard, the fleet, the live boards), the races, the signing keys, the results log and the webhook
 * endpoints' management. No skin, route or wire format here: apps/public-skins.ts serves this domain, apps/public.ts wires it.
 */

import { ChangeFeed } from "../boards/core/change-feed.js";
import { ChangeSet } from "../boards/core/change-set.js";
import { FleetStandings } from "../boards/core/fleet-standings.js";
import { Leaderboard } from "../boards/core/leaderboard.js";
import { LiveBoards, type LiveObserver } from "../boards/core/live-boards.js";
import { MAX_NUM_USERS } from "../boards/core/period-request.js";
import { WatchedPeriods } from "../boards/core/watched-periods.js";
import { mariadbChanges } from "../boards/sql/change-store.js";
import { mariadbStandings } from "../boards/sql/standings-store.js";
import { HorizonWatch } from "../ingest/sql/retention-horizon.js";
import { webhookAdmin } from "../jobs/webhook-delivery.js";
import { KeyCatchUp } from "../keys/core/key-catch-up.js";
import { KeySet } from "../keys/core/key-set.js";
import { mariadbKeyRecords } from "../keys/sql/key-stores.js";
import type { Config } from "../platform/config.js";
import type { Database } from "../platform/database/database.js";
import type { Logger } from "../platform/logger.js";
import { databaseAvailability } from "../platform/observability/database-availability.js";
import { Readiness } from "../platform/observability/readiness.js";
import { packageInfo } from "../platform/package-info.js";
import type { DataChange } from "../ports/changes.js";
import type { FleetTransport } from "../ports/fleet.js";
import type { ResultsLogReader } from "../ports/results-log.js";
import type { PayloadSigner } from "../ports/signing.js";
import { RaceWatch } from "../races/core/race-watch.js";
import type { Races } from "../races/core/races.js";
import { mariadbSchema } from "../schema/schema-versions.js";
import { createRaces } from "../services/races.js";
import { buildResultsLog, type ResultsLog } from "../services/results-log.js";
import { buildSigning, type Signing } from "../services/signing.js";
import type { WebhookAdmin } from "../webhooks/core/endpoint-admin.js";

/** How often a watched race is read again: its changes reach viewers within this (and the change feed's second). */
const RACE_WATCH_POLL_MS = 1_000;

/** What the domain takes besides the configuration and the database (PublicAppOptions carries them). */
export interface PublicDomainOptions {
  /** Current Unix time in seconds; tests move the clock. */
  readonly now?: () => number;
  /** Webhook endpoint management (the server's, which wakes its delivery worker); one on this database when absent. */
  readonly webhooks?: WebhookAdmin;
  /** The fleet (platform/redis/fleet.ts, with REDIS_URL): each period's board computed by one instance. Absent: alone. */
  readonly fleet?: FleetTransport;
}

/**
 * The public app's domain: the key set, readiness, the change feed, the cached leaderboard, the live boards and
 * the races, and the webhook endpoints' management.
 */
export interface PublicDomain {
  readonly keys: KeySet;
  /** Makes a key issued elsewhere work here on its first call (keys/core/key-catch-up.ts). */
  readonly keyCatchUp: KeyCatchUp;
  readonly readiness: Readiness;
  readonly changeFeed: ChangeFeed;
  readonly leaderboard: Leaderboard;
  readonly live: LiveBoards;
  /** The periods the live boards show here. */
  readonly watched: WatchedPeriods;
  /** Present in a fleet: who computes which period's board. */
  readonly fleet: FleetStandings | undefined;
  readonly races: Races;
  readonly raceWatch: RaceWatch;
  readonly webhooks: WebhookAdmin;
  readonly keysLoaded: Promise<void>;
  /** The signer of final results and the published keys (services/signing.ts). */
  readonly signing: Signing;
  /** The results log: its reader (tiles, checkpoints, proofs) and the sequencer the server runs. */
  readonly resultsLog: ResultsLog;
  /** The retention horizons every board read here is guarded by (the server's heartbeat reads and reports them). */
  readonly horizons: HorizonWatch;
}

/**
 * Every instance follows the change feed from the start: key changes reach the in-memory key set through it, and
 * committed data changes reach the cached answers and live boards within a second, whoever wrote them (see
 * boards/core/change-feed.ts).
 */
export function buildDomain(
  config: Config,
  database: Database,
  logger: Logger,
  observer: LiveObserver,
  options: PublicDomainOptions,
): PublicDomain {
  const { now } = options;
  const outcomes = databaseAvailability(logger);
  // Every usable key in memory (no database work per call), kept current by the change feed.
  const keys = new KeySet(mariadbKeyRecords(database.read), { logger });
  const readiness = new Readiness(mariadbSchema(database.read, packageInfo().version), outcomes);
  readiness.keysLoaded = () => keys.loaded;
  const changeFeed = new ChangeFeed(mariadbChanges(database.read), {
    logger,
    outcomes,
    intervalMs: config.changeFeedPollMs,
    freshWithinMs: config.changeFeedMaxLagMs,
  });
  const watched = new WatchedPeriods();
  const horizons = new HorizonWatch(database.write);
  const { leaderboard, fleet } = buildLeaderboard(config, database, changeFeed, watched, options, logger, horizons);
  const resultsLog = buildResultsLog(config, database, logger);
  const signing = buildSigning(config, database, logger, () => resultsLog.reader.verifierKey());
  // Ready for reads whatever the keys; /readyz names an active key this instance cannot open (issue 47).
  readiness.unopenedKeys = () => signing.health.check();
  const { races, raceWatch } = buildRaces(config, database, leaderboard, logger, {
    now,
    signer: signing.signer,
    log: resultsLog.reader,
    horizons,
  });
  const live = new LiveBoards({
    load: loadAfterFirstPoll(changeFeed, leaderboard, config.queryTimeoutMs),
    heartbeatMs: config.streams.heartbeatSeconds * 1000,
    limits: config.streams,
    observer,
    watched,
  });
  changeFeed.follow((changes) => applyChanges(changes, keys, leaderboard, live));
  // A key made by the CLI or another instance works here on its first call: the feed is read at once.
  const keyCatchUp = new KeyCatchUp({
    catchUp: async () => {
      await changeFeed.caughtUp();
      await keys.settled();
    },
  });
  changeFeed.start();
  // A revoked or expired key's open streams (boards' and races', every protocol) end at once, as its next call
  // would be refused; so do those needing a scope the key lost.
  keys.onChanged((keyId, scopes) => live.endKeyStreams(keyId, scopes));
  // The keys are loaded once the feed knows where it starts, so no change falls between the two.
  const keysLoaded = changeFeed.caughtUp().then(() => keys.start());
  const webhooks = options.webhooks ?? webhookAdmin(config.webhooks, database);
  return {
    ...{ keys, keyCatchUp, readiness, changeFeed, leaderboard, live, watched, fleet },
    ...{ races, raceWatch, webhooks, keysLoaded, signing, resultsLog, horizons },
  };
}

/**
 * The leaderboard: totals from the rollups (read replicas when DATABASE_READ_URL lists some), answers cached while
 * the change feed is current, watched periods' answers kept until a change touches them; in a fleet, a period led
 * by another instance is asked of it first, and this instance answers the periods it leads from the same cache.
 */
function buildLeaderboard(
  config: Config,
  database: Database,
  changeFeed: ChangeFeed,
  watched: WatchedPeriods,
  options: PublicDomainOptions,
  logger: Logger,
  horizons: HorizonWatch,
): Pick<PublicDomain, "leaderboard" | "fleet"> {
  const { now } = options;
  const shared = options.fleet !== undefined && config.cacheTtlMs > 0;
  const fleet =
    shared && options.fleet !== undefined
      ? new FleetStandings({ transport: options.fleet, feed: changeFeed, watched })
      : undefined;
  const leaderboard = new Leaderboard({
    // Keys, the change feed and readiness stay on the primary side.
    standings: mariadbStandings(database.leaderboard, horizons),
    defaultAvatarUrl: config.defaultAvatarUrl,
    cacheTtlMs: config.cacheTtlMs,
    ...(now === undefined ? {} : { now }),
    ...(config.cacheTtlMs > 0 ? { freshness: changeFeed } : {}),
    ...(fleet === undefined ? {} : { fleet }),
    isWatched: (period) => watched.has(period),
    retention: horizons,
    incremental: {
      onMismatch: (key, detail) => logger.warn({ board: key, detail }, "held board differed from its full computation"),
    },
  });
  // When the horizons move, what they refuse goes from the caches before the heartbeat reports them as read.
  horizons.onChange(() => leaderboard.dropRefused());
  fleet?.serveWith(async (period) => {
    const query = { start: period.start, end: period.end, numUsers: MAX_NUM_USERS, rankBy: period.rankBy };
    return (await leaderboard.topWagersForPeriod(period.affiliateId, query, true)).ranked;
  });
  return { leaderboard, fleet };
}

/**
 * Races: definitions on the primary; live standings from the leaderboard (cached and fresh like any board); the
 * freeze reads the primary's totals directly, never a cache or a replica. Each watched race is read once a second,
 * whatever its viewers (races/core/race-watch.ts).
 */
function buildRaces(
  config: Config,
  database: Database,
  leaderboard: Leaderboard,
  logger: Logger,
  {
    now,
    signer,
    log,
    horizons,
  }: { now: (() => number) | undefined; signer: PayloadSigner; log: ResultsLogReader; horizons: HorizonWatch },
): Pick<PublicDomain, "races" | "raceWatch"> {
  const races = createRaces({ database, config, signer, leaderboard, now, log, horizons });
  const raceWatch = new RaceWatch({
    races,
    pollMs: RACE_WATCH_POLL_MS,
    heartbeatMs: config.streams.heartbeatSeconds * 1000,
    onError: (error) => logger.warn({ err: error }, "a watched race could not be read; trying again"),
  });
  return { races, raceWatch };
}

/** Committed changes reach the key set, then the cache, then the live boards. */
function applyChanges(changes: readonly DataChange[], keys: KeySet, leaderboard: Leaderboard, live: LiveBoards): void {
  const keyIds = changes.flatMap((change) => (change.apiKeyId === undefined ? [] : [change.apiKeyId]));
  if (keyIds.length > 0) keys.changed(keyIds);
  const changed = new ChangeSet(changes);
  // The cache first: a board recomputed now must not be answered from a dropped entry.
  leaderboard.applyChanges(changed);
  live.applyChanges(changed);
}

/**
 * A live board's load. The first board after start waits for the feed's first poll, so no change committed after
 * its load can be missed.
 */
function loadAfterFirstPoll(changeFeed: ChangeFeed, leaderboard: Leaderboard, waitMs: number): LiveBoardsLoad {
  let feedReady: Promise<void> | undefined;
  return async (board) => {
    feedReady ??= startFeed(changeFeed, waitMs);
    await feedReady;
    return (await leaderboard.topWagersForPeriod(board.affiliateId, board)).ranked;
  };
}

type LiveBoardsLoad = ConstructorParameters<typeof LiveBoards>[0]["load"];

/**
 * Starts the change feed if it is not running and resolves after its first poll, or after
 * `waitMs` when the database does not answer (the board's own load then reports the outage).
 */
function startFeed(feed: ChangeFeed, waitMs: number): Promise<void> {
  feed.start();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, waitMs);
    timer.unref();
    void feed.caughtUp().then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
