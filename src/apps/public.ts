/**
 * The public app: the handler of the public port, wired from its parts. A pure
 * function of its dependencies: it does not listen (server.ts does), so tests
 * build it on any port and database.
 *
 * A public request flows: transport (transport/one-port-server) → route (here)
 * → admission (auth/admission: authenticate, rate limit; called by the gate,
 * auth/request-gate, for RPC and by the skins for REST and the live streams) → decode (Connect, or
 * handlers/rest) → operation (leaderboard/operation: validate, query) → render
 * (handlers/leaderboard-rpc's message, or handlers/rest's envelope).
 */

import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { RaceService } from "../../gen/topwagers/v1/races_pb.js";
import { TopWagersService } from "../../gen/topwagers/v1/top_wagers_pb.js";
import { WebhookService } from "../../gen/topwagers/v1/webhooks_pb.js";
import { Admission } from "../auth/admission.js";
import { KeyCatchUp } from "../auth/key-catch-up.js";
import { KeySet } from "../auth/key-set.js";
import { OPEN_SERVICES, requestGate } from "../auth/request-gate.js";
import { requireScope } from "../auth/scopes.js";
import type { Config } from "../config.js";
import { HttpRefusal } from "../errors/catalogue.js";
import { BoardEvents } from "../handlers/board-events.js";
import { BoardPage } from "../handlers/board-page.js";
import { CorsPreflight } from "../handlers/cors-preflight.js";
import { createDocsPage } from "../handlers/docs-page.js";
import { registerHealth, registerReflection } from "../handlers/health-and-reflection.js";
import { leaderboardRpc } from "../handlers/leaderboard-rpc.js";
import { callerKey } from "../handlers/parts/caller-key.js";
import { refuse } from "../handlers/parts/rest-reply.js";
import { RaceRest } from "../handlers/race-rest.js";
import { keyAffiliate, raceRpc } from "../handlers/race-rpc.js";
import { RestApi } from "../handlers/rest.js";
import { WATCH_PATH, WatchRpc } from "../handlers/watch-rpc.js";
import { keyOwner, webhookService } from "../handlers/webhook-service.js";
import { boardStandings } from "../leaderboard/board-standings.js";
import { ChangeFeed } from "../leaderboard/change-feed.js";
import { ChangeSet } from "../leaderboard/change-set.js";
import { Leaderboard } from "../leaderboard/leaderboard.js";
import { LiveBoards, type LiveObserver } from "../leaderboard/live-boards.js";
import { FailedAuthLimiter } from "../limits/failed-auth-limiter.js";
import { KeyRateLimiter, type LimiterFactory, memoryLimiters } from "../limits/rate-limiter.js";
import { type Logger, silentLogger } from "../logger.js";
import { observeCalls } from "../observability/call-observation.js";
import { databaseAvailability } from "../observability/database-availability.js";
import { Metrics } from "../observability/metrics.js";
import { Readiness } from "../observability/readiness.js";
import type { Tracing } from "../observability/tracing.js";
import { Races } from "../races/races.js";
import type { Database } from "../storage/database.js";
import { mariadbChanges, mariadbKeyRecords, mariadbRaces, mariadbSchema, mariadbStandings } from "../storage/stores.js";
import { clientAddressOf, clientAddressResolver, stampClientAddress } from "../transport/client-address.js";
import { nodeExchange, streamExchange } from "../transport/exchange.js";
import {
  type NodeRequest,
  type NodeResponse,
  normalizePath,
  type RequestHandler,
  type StreamHandler,
  writeJson,
} from "../transport/http.js";
import type { WebhookAdmin } from "../webhooks/endpoint-admin.js";
import { webhookAdmin } from "./webhook-delivery.js";

export interface PublicAppOptions {
  readonly limiterFactory?: LimiterFactory;
  /** Current Unix time in seconds; tests move the clock. */
  readonly now?: () => number;
  readonly logger?: Logger;
  readonly metrics?: Metrics;
  /** Failed authentications per client address and window; more than that get 429. Default 30 per 60 s. */
  readonly failedAuthPolicy?: { points: number; windowSeconds: number };
  /** Whether rate limits currently go to Redis, for the metrics (absent without REDIS_URL). */
  readonly redisConnected?: () => boolean;
  /** OpenTelemetry tracing (OTEL_TRACES_EXPORTER); absent, requests are not traced at all. */
  readonly tracing?: Tracing;
  /** Webhook endpoint management (the server's, which wakes its delivery worker); one on this database when absent. */
  readonly webhooks?: WebhookAdmin;
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
  /** What /readyz and gRPC health answer; shared with the internal listener. */
  readonly readiness: Readiness;
  /** Every usable API key, in memory; the internal listener has it read a key again when it changes one. */
  readonly keys: KeySet;
  /** Key, rate limit and CORS of every public call (the skins call it; auth/admission.ts). */
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

/** The largest request body the public port reads, on every protocol; larger ones are refused unread. */
export const MAX_BODY_BYTES = 64 * 1024;

/** Services served on the public port, as reflection and health list them. */
export const PUBLIC_SERVICES = [
  TopWagersService.typeName,
  RaceService.typeName,
  WebhookService.typeName,
  ...OPEN_SERVICES,
] as const;

export function createPublicApp(config: Config, database: Database, options: PublicAppOptions = {}): PublicApp {
  const logger = options.logger ?? silentLogger;
  const outcomes = databaseAvailability(logger);
  const readiness = new Readiness(mariadbSchema(database.read), outcomes);
  // Every usable key in memory (no database work per call), kept current by the change feed.
  const keys = new KeySet(mariadbKeyRecords(database.read), { logger });
  readiness.keysLoaded = () => keys.loaded;
  // A key made by the CLI or another instance works here on its first call: the feed is read at once.
  const keyCatchUp = new KeyCatchUp({
    catchUp: async () => {
      await changeFeed.caughtUp();
      await keys.settled();
    },
  });
  const admission = new Admission(
    keys,
    new KeyRateLimiter(config.rateLimit, options.limiterFactory ?? memoryLimiters, {
      points: config.publishableRatePoints,
      windowSeconds: config.rateLimit.windowSeconds,
    }),
    new FailedAuthLimiter(options.failedAuthPolicy, logger),
    keyCatchUp,
  );
  const clientAddress = clientAddressResolver(config.trustedProxies);
  // Every instance follows the change feed, from the start: key changes reach the in-memory key set
  // through it, and committed data changes reach the cached answers and live boards within a second,
  // whoever wrote them (see leaderboard/change-feed.ts).
  let leaderboard: Leaderboard | undefined;
  let live: LiveBoards | undefined;
  const changeFeed = new ChangeFeed(mariadbChanges(database.read), {
    logger,
    outcomes,
    onChanges(changes) {
      const keyIds = changes.flatMap((change) => (change.apiKeyId === undefined ? [] : [change.apiKeyId]));
      if (keyIds.length > 0) keys.changed(keyIds);
      const changed = new ChangeSet(changes);
      // The cache first: a board recomputed now must not be answered from a dropped entry.
      leaderboard?.applyChanges(changed);
      live?.applyChanges(changed);
    },
    intervalMs: config.changeFeedPollMs,
    freshWithinMs: config.changeFeedMaxLagMs,
  });
  leaderboard = new Leaderboard({
    // Read replicas when DATABASE_READ_URL lists some; keys, the change feed and readiness stay on the primary side.
    standings: mariadbStandings(database.leaderboard),
    defaultAvatarUrl: config.defaultAvatarUrl,
    cacheTtlMs: config.cacheTtlMs,
    ...(options.now === undefined ? {} : { now: options.now }),
    ...(config.cacheTtlMs > 0 ? { freshness: changeFeed } : {}),
  });
  // Races: definitions on the primary; live standings from the leaderboard (cached and fresh like any
  // board); the freeze reads the primary's totals directly, never a cache or a replica.
  const races = new Races({
    store: mariadbRaces(database.write),
    standings: boardStandings(leaderboard, mariadbStandings(database.leaderboard)),
    freezeStandings: mariadbStandings(database.write),
    defaultAvatarUrl: config.defaultAvatarUrl,
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  const webhooks = options.webhooks ?? webhookAdmin(config.webhooks, database);
  changeFeed.start();
  // The keys are loaded once the feed knows where it starts, so no change falls between the two.
  const keysLoaded = changeFeed.caughtUp().then(() => keys.start());
  let feedReady: Promise<void> | undefined;
  const liveObserver: LiveObserver = {
    delivered: (protocol, n) => metrics.streamMessages.inc({ protocol }, n),
    disconnected: (reason) => metrics.streamDisconnects.inc({ reason }),
    recomputed: () => metrics.boardRecomputes.inc(),
  };
  live = new LiveBoards({
    async load(board) {
      // The first board after start waits for the feed's first poll, so no change committed after
      // its load can be missed.
      feedReady ??= startFeed(changeFeed, config.queryTimeoutMs);
      await feedReady;
      return (await leaderboard.topWagersForPeriod(board.affiliateId, board)).ranked;
    },
    heartbeatMs: config.streams.heartbeatSeconds * 1000,
    limits: config.streams,
    observer: liveObserver,
  });
  const boards = live;
  const metrics =
    options.metrics ??
    new Metrics({
      cacheStats: () => leaderboard.cacheStats,
      changeFeed: () => ({
        ...changeFeed.stats,
        invalidations: leaderboard?.invalidations ?? 0,
        lagSeconds: changeFeed.lagMs() / 1000,
      }),
      pools: { read: database.read, write: database.write },
      apiKeys: () => keys.counts(),
      keyCatchUp: () => keyCatchUp.stats,
      live: () => ({ streams: boards.streams(), boards: boards.boards }),
      ...(options.redisConnected === undefined ? {} : { redisConnected: options.redisConnected }),
    });
  const calls = observeCalls({ metrics, logger, accessLog: config.accessLog });
  // Every service that is not open needs an affiliate key, counted against its rate limit.
  const gate = requestGate(async (context, facts) => {
    const admitted = await admission.admit(context.requestHeader.get("authorization"), facts.clientAddress);
    facts.keyId = admitted.caller.keyId;
    context.values.set(callerKey, admitted.caller);
    for (const [name, value] of Object.entries(admitted.headers)) context.responseHeader.set(name, value);
  }, calls);
  const rest = new RestApi({
    basePath: config.basePath,
    admission,
    leaderboard,
    maxBodyBytes: MAX_BODY_BYTES,
    observe: calls.observe,
    logger,
  });
  const watch = new WatchRpc({
    admission,
    live,
    maxBodyBytes: MAX_BODY_BYTES,
    clientAddress: clientAddressOf,
    observe: calls.observe,
    logger,
  });
  const boardEvents = new BoardEvents({
    basePath: config.basePath,
    admission,
    live,
    clientAddress: clientAddressOf,
    observe: calls.observe,
    logger,
  });
  const raceRest = new RaceRest({
    basePath: config.basePath,
    admission,
    races,
    // As boards: a caller may reuse an answer for a second while the cache is on (leaderboard.ts).
    maxAgeSeconds: config.cacheTtlMs > 0 ? 1 : 0,
    observe: calls.observe,
    logger,
  });
  const preflight = new CorsPreflight({
    basePath: config.basePath,
    admission,
    logger,
    alsoFor: (path) => raceRest.matches(path),
  });
  const boardPage = new BoardPage({
    basePath: config.basePath,
    // The page's own request is admitted as its stream's (a publishable key in ?key=), scope included.
    admit: async (req, urlKey) => {
      const admitted = await admission.admitRequest({
        authorization: req.headers.authorization,
        urlKey,
        clientAddress: clientAddressOf(req),
        origin: req.headers.origin,
      });
      requireScope(admitted.caller, "boards:read");
      return admitted;
    },
  });
  // A revoked or expired key's open streams end at once, as its next call would be refused.
  keys.onRemoved((keyId) => boards.endKey(keyId));
  const docs = createDocsPage({ basePath: config.basePath });

  const routes = (router: ConnectRouter) => {
    router.service(TopWagersService, leaderboardRpc(leaderboard));
    router.service(RaceService, raceRpc(races, keyAffiliate));
    router.service(WebhookService, webhookService(webhooks, keyOwner(webhooks)));
    registerHealth(router, PUBLIC_SERVICES, readiness);
    registerReflection(router, PUBLIC_SERVICES);
  };

  const fallback = (req: NodeRequest, res: NodeResponse) => {
    const path = normalizePath(req.url ?? "/");
    if (preflight.matches(req.method, path)) return void preflight.handle(req, res);
    if (rest.matches(path)) return void rest.handle(nodeExchange(req, res));
    if (raceRest.matches(path)) return void raceRest.handle(nodeExchange(req, res), req.url ?? "/", path);
    if (boardEvents.matches(path)) return void boardEvents.handle(req, res);
    if (boardPage.matches(path)) return void boardPage.handle(req, res);
    if (path === "/healthz" && (req.method === "GET" || req.method === "HEAD")) {
      return void writeJson(res, 200, { status: "ok" });
    }
    if (path === "/readyz" && (req.method === "GET" || req.method === "HEAD")) {
      return void readiness.check().then((body) => writeJson(res, body.status === "ready" ? 200 : 503, body));
    }
    if (docs.matches(path, req.method)) return void docs.handle(req, res, path);
    return void refuse(
      nodeExchange(req, res),
      new HttpRefusal("NOT_FOUND", `no such path. The operation is POST ${rest.path}`),
      undefined,
      logger,
    );
  };

  const connectHandler = connectNodeAdapter({
    routes,
    fallback,
    readMaxBytes: MAX_BODY_BYTES,
    requestGate: gate,
    ...calls.adapterOptions,
  }) as RequestHandler;
  // The client address is found once per request, before anything else reads it. The watch procedure's
  // streams are framed by WatchRpc (one encoding for every viewer); the rest is connect-es's.
  const rpcHandler: RequestHandler = (req, res) => {
    stampClientAddress(req, clientAddress);
    // A POST to the REST path as it usually comes (exactly, no query) skips Connect's routing; other
    // spellings and methods (a CORS preflight) reach it through the fallback.
    if (req.method === "POST" && req.url === rest.path) return void rest.handle(nodeExchange(req, res));
    if (req.url === WATCH_PATH && watch.matches(req, WATCH_PATH)) return void watch.handle(req, res);
    connectHandler(req, res);
  };
  const handler =
    options.tracing === undefined
      ? rpcHandler
      : options.tracing.wrapHandler(rpcHandler, (path) => {
          const normal = normalizePath(path);
          if (rest.matches(normal)) return rest.path;
          if (raceRest.matches(normal)) return raceRest.route(normal);
          if (boardEvents.matches(normal)) return boardEvents.path;
          if (boardPage.matches(normal)) return boardPage.path;
          return normal === "/healthz" || normal === "/readyz" ? normal : undefined;
        });

  // REST over HTTP/2 is answered on the stream itself, without Node's compatibility (req, res)
  // objects (docs/benchmarks.md: they were the largest cost of the path). Only POSTs to the
  // operation's path; everything else, and everything while tracing is on (it wraps (req, res)
  // handlers), goes through `handler`.
  const streamHandler: StreamHandler | undefined =
    options.tracing !== undefined
      ? undefined
      : (stream, headers) => {
          const path = headers[":path"];
          if (headers[":method"] !== "POST" || path === undefined || headers.expect !== undefined) return false;
          if (!rest.matches(normalizePath(path))) return false;
          const address = clientAddress({ headers, socket: stream.session?.socket ?? {} });
          void rest.handle(streamExchange(stream, headers, address));
          return true;
        };

  return {
    handler,
    ...(streamHandler === undefined ? {} : { streamHandler }),
    metrics,
    leaderboard,
    races,
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
      boards.shutdown();
      keys.stop();
      void changeFeed.stop();
    },
  };
}

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
