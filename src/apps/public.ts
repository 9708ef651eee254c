/**
 * The public app: the handler of the public port, built from its parts. A pure function of its dependencies: it
 * does not listen (server.ts does), so tests build it on any port and database. Read top to bottom,
 * `createPublicApp` builds the domain (public-domain.ts), the gate and the skins (public-skins.ts), then the one
 * routing table (public-routes.ts), and wires the observation (metrics, logs, traces) around them; this file holds
 * that wiring and what the app shows the server.
 *
 * A public request flows: transport (platform/transport/one-port-server.ts) → the routing table (public-routes.ts) →
 * admission (keys/gate/admission.ts: key, rate limit, CORS; run by the gate, keys/gate/request-gate.ts, for RPC and by the
 * skins for REST and the live streams) → decode (connect-es, or boards/wire/codecs/) → the operation
 * (boards/core/operation.ts: validate, query) → render (boards/wire/codecs/: the message, or the JSON envelope).
 */

import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { FleetStandings } from "../boards/core/fleet-standings.js";
import type { Leaderboard } from "../boards/core/leaderboard.js";
import type { LiveObserver } from "../boards/core/live-boards.js";
import type { HorizonWatch } from "../ingest/sql/retention-horizon.js";
import type { KeySet } from "../keys/core/key-set.js";
import type { Admission } from "../keys/gate/admission.js";
import type { Config } from "../platform/config.js";
import type { Database } from "../platform/database/database.js";
import { type Logger, silentLogger } from "../platform/logger.js";
import { observeCalls } from "../platform/observability/call-observation.js";
import { Metrics, type MetricsSources } from "../platform/observability/metrics.js";
import type { Readiness } from "../platform/observability/readiness.js";
import { registerSignatureMetrics } from "../platform/observability/signature-metrics.js";
import type { Tracing } from "../platform/observability/tracing.js";
import { clientAddressResolver } from "../platform/transport/client-address.js";
import type { RequestHandler, StreamHandler } from "../platform/transport/http.js";
import type { SigningFailure } from "../ports/signing.js";
import type { RaceWatch } from "../races/core/race-watch.js";
import type { Races } from "../races/core/races.js";
import { LogSkin } from "../results-log/wire/log-tiles.js";
import type { ResultsLog } from "../services/results-log.js";
import { VerifyPage } from "../signing/wire/verify-page.js";
import { buildDomain, type PublicDomain, type PublicDomainOptions } from "./public-domain.js";
import {
  directProcedurePaths,
  notFound,
  routingHandler,
  routingTable,
  streamHandler,
  tracedRoute,
} from "./public-routes.js";
import {
  type AdmissionOptions,
  buildAdmission,
  buildSkins,
  connectServices,
  gate,
  MAX_BODY_BYTES,
} from "./public-skins.js";

export { MAX_BODY_BYTES, PUBLIC_SERVICES } from "./public-skins.js";

/** What the app takes besides its configuration and database; the domain's and the gate's options included. */
export interface PublicAppOptions extends PublicDomainOptions, AdmissionOptions {
  readonly logger?: Logger;
  readonly metrics?: Metrics;
  /** Whether rate limits currently go to Redis, for the metrics (absent without REDIS_URL). */
  readonly redisConnected?: () => boolean;
  /** OpenTelemetry tracing (OTEL_TRACES_EXPORTER); absent, requests are not traced at all. */
  readonly tracing?: Tracing;
}

export interface PublicApp {
  readonly handler: RequestHandler;
  /** Answers REST streams over HTTP/2 directly (absent while tracing is on); other streams go to `handler`. */
  readonly streamHandler?: StreamHandler;
  readonly metrics: Metrics;
  readonly leaderboard: Leaderboard;
  /**
   * The races (RaceService and the REST reads on this port, RaceService on the internal listener);
   * server.ts runs its clock (`races.tick()` every RACE_CLOCK_MS).
   */
  readonly races: Races;
  /** The results log: server.ts runs its sequencer (jobs/results-log.ts); the log's skin serves its reader. */
  readonly resultsLog: ResultsLog;
  /** The live races' hub (the race SSE stream and WatchRace); the internal listener shares it. */
  readonly raceWatch: RaceWatch;
  /** What /readyz and gRPC health answer; shared with the internal listener. */
  readonly readiness: Readiness;
  /** The retention horizons this app answers under; the server's heartbeat reads and reports them. */
  readonly horizons: HorizonWatch;
  /** Every usable API key, in memory; the internal listener has it read a key again when it changes one. */
  readonly keys: KeySet;
  /** Key, rate limit and CORS of every public call (the skins call it; keys/gate/admission.ts). */
  readonly admission: Admission;
  /** Resolves once the keys are loaded (until then calls with a key get 503 and readiness says loading_keys). */
  readonly keysLoaded: Promise<void>;
  /**
   * A change was committed (by this instance, or another one said so through Redis): read the
   * change feed now instead of at the next poll.
   */
  changesCommitted(): void;
  /** Resolves once every change committed before the call is applied to this app's caches and key set. */
  caughtUp(): Promise<void>;
  /** Marks the app as shutting down: readiness and gRPC health turn to not serving; stops the change feed. */
  stopServing(): void;
}

export function createPublicApp(config: Config, database: Database, options: PublicAppOptions = {}): PublicApp {
  const logger = options.logger ?? silentLogger;
  const metrics = options.metrics ?? new Metrics();
  const domain = buildDomain(config, database, logger, liveObserver(metrics), options);
  // A registry handed in (a test's, or one shared between apps) reads no gauges of this app.
  if (options.metrics === undefined) {
    metrics.readFrom(readingsOf(domain, database, options.redisConnected));
    const { boards, races, signer, liveSigner, health } = domain.signing;
    // A signer's last attempt, or the keys' check (a key that does not open fails before anything is signed).
    const failing = (purpose: "result" | "live" | "log", last?: { readonly failing: SigningFailure | undefined }) => ({
      purpose,
      get failing() {
        return last?.failing ?? health.failing(purpose);
      },
    });
    registerSignatureMetrics(metrics.registry, boards, races, [
      failing("result", signer),
      failing("live", liveSigner),
      failing("log"),
    ]);
  }
  const admission = buildAdmission(config, domain, options, logger);
  const calls = observeCalls({ metrics, logger, accessLog: config.accessLog });
  const skins = buildSkins(config, domain, admission, calls, logger);
  const { reader } = domain.resultsLog;
  const verify = new VerifyPage(
    (raceId) => domain.races.signedResult(raceId),
    (raceId) => reader.inclusionOf(raceId),
  );
  const log = new LogSkin(reader, logger);
  const routes = routingTable({ ...skins, jwks: domain.signing.skin, verify, log }, domain.readiness);
  const procedurePaths: string[] = [];
  const connect = connectNodeAdapter({
    routes: (router) => {
      connectServices(domain)(router);
      for (const { requestPath } of router.handlers) procedurePaths.push(requestPath);
    },
    fallback: (req, res) => notFound(req, res, skins.rest.path, logger),
    readMaxBytes: MAX_BODY_BYTES,
    requestGate: gate(admission, calls),
    ...calls.adapterOptions,
  }) as RequestHandler;
  const clientAddress = clientAddressResolver(config.trustedProxies);
  const procedures = directProcedurePaths(routes, procedurePaths);
  const handler = routingHandler(routes, connect, clientAddress, procedures);
  return {
    handler: options.tracing === undefined ? handler : options.tracing.wrapHandler(handler, tracedRoute(routes)),
    // Traces wrap (req, res) handlers: while tracing is on, HTTP/2 streams go through `handler` too.
    ...(options.tracing === undefined ? { streamHandler: streamHandler(routes, clientAddress, procedures) } : {}),
    ...publicFace(domain, metrics, admission),
  };
}

/** The live boards' events, counted. */
function liveObserver(metrics: Metrics): LiveObserver {
  return {
    delivered: (protocol, n) => metrics.streamMessages.inc({ protocol }, n),
    disconnected: (reason) => metrics.streamDisconnects.inc({ reason }),
    recomputed: () => metrics.boardRecomputes.inc(),
  };
}

/** What the metrics read from the domain and the pools when scraped. */
function readingsOf(
  domain: PublicDomain,
  database: Database,
  redisConnected: (() => boolean) | undefined,
): MetricsSources {
  const { leaderboard, changeFeed, keys, keyCatchUp, live, fleet } = domain;
  return {
    cacheStats: () => leaderboard.cacheStats,
    changeFeed: () => ({
      ...changeFeed.stats,
      invalidations: leaderboard.invalidations,
      lagSeconds: changeFeed.lagMs() / 1000,
    }),
    pools: { read: database.read, write: database.write, leaderboard: database.leaderboard },
    apiKeys: () => keys.counts(),
    keyCatchUp: () => keyCatchUp.stats,
    live: () => ({ streams: live.streams(), boards: live.boards }),
    computations: () => ({ incremental: 0, ...leaderboard.computations }),
    ...(fleet === undefined ? {} : { fleet: () => fleetReadings(fleet) }),
    ...(redisConnected === undefined ? {} : { redisConnected }),
    readiness: () => readinessForScrape(domain.readiness),
  };
}

/** How long a scrape waits for a readiness probe before it shows the last answer (a database that hangs). */
const READINESS_SCRAPE_WAIT_MS = 500;

/** Readiness as a scrape shows it: a probe (shared with those under way), or the last answer if it takes long. */
async function readinessForScrape(readiness: PublicDomain["readiness"]): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    readiness.check().catch(() => undefined),
    new Promise((resolve) => {
      timer = setTimeout(resolve, READINESS_SCRAPE_WAIT_MS);
    }),
  ]);
  clearTimeout(timer);
  return readiness.lastStatus;
}

function fleetReadings(fleet: FleetStandings) {
  const { handovers, fallbacks, behind } = fleet.stats;
  return {
    members: fleet.memberCount,
    led: fleet.led(),
    handovers,
    fallbacks: { no_answer: fallbacks - behind, behind },
  };
}

/** What the server and the internal app use of the public app besides its handlers. */
function publicFace(domain: PublicDomain, metrics: Metrics, admission: Admission) {
  const { changeFeed, keys, keysLoaded, live, readiness, leaderboard, races, raceWatch, resultsLog, horizons } = domain;
  return {
    metrics,
    horizons,
    leaderboard,
    races,
    resultsLog,
    raceWatch,
    readiness,
    keys,
    admission,
    keysLoaded,
    changesCommitted() {
      changeFeed.pollSoon();
    },
    async caughtUp() {
      await keysLoaded;
      await changeFeed.caughtUp();
      await keys.settled();
    },
    stopServing() {
      readiness.stopServing();
      live.shutdown();
      raceWatch.shutdown();
      keys.stop();
      void changeFeed.stop();
    },
  };
}
