/**
 * The public app: the handler of the public port, built from its parts. A pure function of its dependencies: it
 * does not listen (server.ts does), so tests build it on any port and database. Read top to bottom,
 * `createPublicApp` builds the domain, the gate, the skins, then the one routing table, and wires the observation
 * (metrics, logs, traces) around them.
 *
 * A public request flows: transport (transport/one-port-server.ts) → the routing table (here) → admission
 * (auth/admission.ts: key, rate limit, CORS; run by the gate, auth/request-gate.ts, for RPC and by the skins for
 * REST and the live streams) → decode (connect-es, or src/codecs/) → the operation (leaderboard/operation.ts:
 * validate, query) → render (src/codecs/: the message, or the JSON envelope).
 */

import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { RaceService } from "../../gen/topwagers/v1/races_pb.js";
import { SigningKeyService } from "../../gen/topwagers/v1/signing_pb.js";
import { TopWagersService } from "../../gen/topwagers/v1/top_wagers_pb.js";
import { WebhookService } from "../../gen/topwagers/v1/webhooks_pb.js";
import { Admission } from "../auth/admission.js";
import { KeyCatchUp } from "../auth/key-catch-up.js";
import { KeySet } from "../auth/key-set.js";
import { OPEN_SERVICES, requestGate } from "../auth/request-gate.js";
import { requireScope } from "../auth/scopes.js";
import type { Config } from "../config.js";
import { HttpRefusal } from "../errors/catalogue.js";
import { BoardStream } from "../handlers/board-stream.js";
import { CorsPreflight } from "../handlers/cors-preflight.js";
import { createDocsPage, type DocsPage } from "../handlers/docs-page.js";
import { registerHealth, registerReflection } from "../handlers/health-and-reflection.js";
import { leaderboardRpc } from "../handlers/leaderboard-rpc.js";
import { OverlayPage } from "../handlers/overlay-page.js";
import { callerKey } from "../handlers/parts/caller-key.js";
import { refuse } from "../handlers/parts/rest-reply.js";
import { RaceEvents } from "../handlers/race-events.js";
import { RaceRest } from "../handlers/race-rest.js";
import { keyAffiliate, RACE_SERVICE_OPTIONS, raceRpc } from "../handlers/race-rpc.js";
import { RestApi } from "../handlers/rest.js";
import type { SigningKeysSkin } from "../handlers/signing-keys.js";
import { VERIFY_PATH, VerifyPage } from "../handlers/verify-page.js";
import { WATCH_PATH, WatchRpc } from "../handlers/watch-rpc.js";
import { keyOwner, webhookService } from "../handlers/webhook-service.js";
import { boardStandings } from "../leaderboard/board-standings.js";
import { ChangeFeed } from "../leaderboard/change-feed.js";
import { ChangeSet } from "../leaderboard/change-set.js";
import { FleetStandings } from "../leaderboard/fleet-standings.js";
import { Leaderboard } from "../leaderboard/leaderboard.js";
import { LiveBoards, type LiveObserver } from "../leaderboard/live-boards.js";
import { MAX_NUM_USERS } from "../leaderboard/period-request.js";
import { WatchedPeriods } from "../leaderboard/watched-periods.js";
import { FailedAuthLimiter } from "../limits/failed-auth-limiter.js";
import { KeyRateLimiter, type LimiterFactory, memoryLimiters } from "../limits/rate-limiter.js";
import { type Logger, silentLogger } from "../logger.js";
import { type CallObservation, observeCalls } from "../observability/call-observation.js";
import { databaseAvailability } from "../observability/database-availability.js";
import { Metrics, type MetricsSources } from "../observability/metrics.js";
import { Readiness } from "../observability/readiness.js";
import { registerSignatureMetrics } from "../observability/signature-metrics.js";
import type { Tracing } from "../observability/tracing.js";
import { packageInfo } from "../package-info.js";
import type { DataChange } from "../ports/changes.js";
import type { FleetTransport } from "../ports/fleet.js";
import type { PayloadSigner } from "../ports/signing.js";
import { RaceWatch } from "../races/race-watch.js";
import { Races } from "../races/races.js";
import type { Database } from "../storage/database.js";
import {
  causalStandings,
  mariadbChanges,
  mariadbKeyRecords,
  mariadbRaces,
  mariadbSchema,
  mariadbStandings,
} from "../storage/stores.js";
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
import { sayOversizeBodiesAs413 } from "../transport/oversize-status.js";
import type { WebhookAdmin } from "../webhooks/endpoint-admin.js";
import { buildSigning, type Signing } from "./signing.js";
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
  /** The fleet (redis/fleet.ts, with REDIS_URL): each period's board computed by one instance. Absent: alone. */
  readonly fleet?: FleetTransport;
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
  /** The live races' hub (the race SSE stream and WatchRace); the internal listener shares it. */
  readonly raceWatch: RaceWatch;
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
  SigningKeyService.typeName,
  ...OPEN_SERVICES,
] as const;

/** How often a watched race is read again: its changes reach viewers within this (and the change feed's second). */
const RACE_WATCH_POLL_MS = 1_000;

export function createPublicApp(config: Config, database: Database, options: PublicAppOptions = {}): PublicApp {
  const logger = options.logger ?? silentLogger;
  const metrics = options.metrics ?? new Metrics();
  const domain = buildDomain(config, database, logger, liveObserver(metrics), options);
  // A registry handed in (a test's, or one shared between apps) reads no gauges of this app.
  if (options.metrics === undefined) {
    metrics.readFrom(readingsOf(domain, database, options.redisConnected));
    registerSignatureMetrics(metrics.registry, domain.signing.boards);
  }
  const admission = buildAdmission(config, domain, options, logger);
  const calls = observeCalls({ metrics, logger, accessLog: config.accessLog });
  const skins = buildSkins(config, domain, admission, calls, logger);
  const verify = new VerifyPage((raceId) => domain.races.signedResult(raceId));
  const routes = routingTable({ ...skins, jwks: domain.signing.skin, verify }, domain.readiness);
  const connect = connectNodeAdapter({
    routes: connectServices(domain),
    fallback: (req, res) => notFound(req, res, skins.rest.path, logger),
    readMaxBytes: MAX_BODY_BYTES,
    requestGate: gate(admission, calls),
    ...calls.adapterOptions,
  }) as RequestHandler;
  const clientAddress = clientAddressResolver(config.trustedProxies);
  const handler = routingHandler(routes, connect, clientAddress);
  return {
    handler: options.tracing === undefined ? handler : options.tracing.wrapHandler(handler, tracedRoute(routes)),
    // Traces wrap (req, res) handlers: while tracing is on, HTTP/2 streams go through `handler` too.
    ...(options.tracing === undefined ? { streamHandler: streamHandler(routes, clientAddress) } : {}),
    ...publicFace(domain, metrics, admission),
  };
}

/**
 * The public app's domain: the key set, readiness, the change feed, the cached leaderboard, the live boards and
 * the races, and the webhook endpoints' management.
 */
interface PublicDomain {
  readonly keys: KeySet;
  /** Makes a key issued elsewhere work here on its first call (auth/key-catch-up.ts). */
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
  /** The signer of final results and the published keys (apps/signing.ts). */
  readonly signing: Signing;
}

/**
 * Every instance follows the change feed from the start: key changes reach the in-memory key set through it, and
 * committed data changes reach the cached answers and live boards within a second, whoever wrote them (see
 * leaderboard/change-feed.ts).
 */
function buildDomain(
  config: Config,
  database: Database,
  logger: Logger,
  observer: LiveObserver,
  options: Pick<PublicAppOptions, "now" | "webhooks" | "fleet">,
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
  const { leaderboard, fleet } = buildLeaderboard(config, database, changeFeed, watched, options, logger);
  const signing = buildSigning(config, database, logger);
  const { races, raceWatch } = buildRaces(config, database, leaderboard, logger, { now, signer: signing.signer });
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
    ...{ races, raceWatch, webhooks, keysLoaded, signing },
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
  options: Pick<PublicAppOptions, "now" | "fleet">,
  logger: Logger,
): Pick<PublicDomain, "leaderboard" | "fleet"> {
  const { now } = options;
  const shared = options.fleet !== undefined && config.cacheTtlMs > 0;
  const fleet =
    shared && options.fleet !== undefined
      ? new FleetStandings({ transport: options.fleet, feed: changeFeed, watched })
      : undefined;
  const leaderboard = new Leaderboard({
    // Keys, the change feed and readiness stay on the primary side.
    standings: mariadbStandings(database.leaderboard),
    defaultAvatarUrl: config.defaultAvatarUrl,
    cacheTtlMs: config.cacheTtlMs,
    ...(now === undefined ? {} : { now }),
    ...(config.cacheTtlMs > 0 ? { freshness: changeFeed } : {}),
    ...(fleet === undefined ? {} : { fleet }),
    isWatched: (period) => watched.has(period),
    incremental: {
      onMismatch: (key, detail) => logger.warn({ board: key, detail }, "held board differed from its full computation"),
    },
  });
  fleet?.serveWith(async (period) => {
    const query = { start: period.start, end: period.end, numUsers: MAX_NUM_USERS, rankBy: period.rankBy };
    return (await leaderboard.topWagersForPeriod(period.affiliateId, query, true)).ranked;
  });
  return { leaderboard, fleet };
}

/**
 * Races: definitions on the primary; live standings from the leaderboard (cached and fresh like any board); the
 * freeze reads the primary's totals directly, never a cache or a replica. Each watched race is read once a second,
 * whatever its viewers (races/race-watch.ts).
 */
function buildRaces(
  config: Config,
  database: Database,
  leaderboard: Leaderboard,
  logger: Logger,
  { now, signer }: { now: (() => number) | undefined; signer: PayloadSigner },
): Pick<PublicDomain, "races" | "raceWatch"> {
  const races = new Races({
    signer,
    store: mariadbRaces(database.write),
    standings: boardStandings(leaderboard, mariadbStandings(database.leaderboard)),
    freezeStandings: causalStandings(database.write, database.flavour),
    defaultAvatarUrl: config.defaultAvatarUrl,
    racesPerAffiliate: config.racesPerAffiliate,
    ...(now === undefined ? {} : { now }),
  });
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
  };
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

/** Key, rate limit (per key, and per address for failed authentications) and CORS of every public call. */
function buildAdmission(config: Config, domain: PublicDomain, options: PublicAppOptions, logger: Logger): Admission {
  const { keys, keyCatchUp } = domain;
  const limits = new KeyRateLimiter(config.rateLimit, options.limiterFactory ?? memoryLimiters, {
    points: config.publishableRatePoints,
    windowSeconds: config.rateLimit.windowSeconds,
  });
  return new Admission(keys, limits, new FailedAuthLimiter(options.failedAuthPolicy, logger), keyCatchUp);
}

/** Every service that is not open needs an affiliate key, counted against its rate limit. */
function gate(admission: Admission, calls: CallObservation) {
  return requestGate(async (context, facts) => {
    // The published signing keys are for everyone, as the JWKS is.
    if (context.service.typeName === SigningKeyService.typeName) return;
    const admitted = await admission.admitBearer(context.requestHeader.get("authorization"), facts.clientAddress);
    facts.keyId = admitted.caller.keyId;
    context.values.set(callerKey, admitted.caller);
    for (const [name, value] of Object.entries(admitted.headers)) context.responseHeader.set(name, value);
  }, calls);
}

/** The skins the routing table serves besides the Connect services. */
interface Skins {
  readonly rest: RestApi;
  readonly races: RaceRest;
  readonly raceEvents: RaceEvents;
  readonly watch: WatchRpc;
  readonly boardStream: BoardStream;
  readonly overlay: OverlayPage;
  readonly preflight: CorsPreflight;
  readonly docs: DocsPage;
}

function buildSkins(
  config: Config,
  domain: PublicDomain,
  admission: Admission,
  calls: CallObservation,
  logger: Logger,
): Skins {
  const { basePath } = config;
  const { leaderboard, live, races, raceWatch } = domain;
  const signatures = domain.signing.boards;
  const observe = calls.observe;
  const maxBodyBytes = MAX_BODY_BYTES;
  const clientAddress = clientAddressOf;
  return {
    rest: new RestApi({ basePath, admission, leaderboard, maxBodyBytes, observe, logger, signatures }),
    // As boards: a caller may reuse an answer for a second while the cache is on (leaderboard.ts).
    races: new RaceRest({ basePath, admission, races, maxAgeSeconds: config.cacheTtlMs > 0 ? 1 : 0, observe, logger }),
    raceEvents: new RaceEvents({ basePath, admission, watch: raceWatch, slots: live, clientAddress, observe, logger }),
    watch: new WatchRpc({ admission, live, maxBodyBytes, clientAddress, observe, logger }),
    boardStream: new BoardStream({ basePath, admission, live, clientAddress, observe, logger, signatures }),
    // The page's own request is admitted as its stream's (a publishable key in ?key=), scope included.
    overlay: new OverlayPage({
      basePath,
      // The page's own request is admitted as its stream's, with the scope of what it shows.
      admit: async (req, urlKey, scope) => {
        const admitted = await admission.admitRequest({
          authorization: req.headers.authorization,
          urlKey,
          clientAddress: clientAddressOf(req),
          origin: req.headers.origin,
        });
        requireScope(admitted.caller, scope);
        return admitted;
      },
    }),
    preflight: new CorsPreflight({ admission, logger }),
    docs: createDocsPage({ basePath }),
  };
}

/**
 * The Connect services (Connect, gRPC and gRPC-Web through connect-es). To serve a new one, add one line here,
 * `router.service(RaceService, raceRpc(races))`, and its typeName to PUBLIC_SERVICES (health and reflection).
 */
function connectServices(domain: PublicDomain): (router: ConnectRouter) => void {
  return (router) => {
    router.service(TopWagersService, leaderboardRpc(domain.leaderboard));
    const raceStreams = { watch: domain.raceWatch, slots: domain.live };
    router.service(RaceService, raceRpc(domain.races, keyAffiliate, raceStreams), RACE_SERVICE_OPTIONS);
    router.service(WebhookService, webhookService(domain.webhooks, keyOwner(domain.webhooks)));
    domain.signing.skin.register(router);
    registerHealth(router, PUBLIC_SERVICES, domain.readiness);
    registerReflection(router, PUBLIC_SERVICES);
  };
}

/** One line of the routing table. */
interface Route {
  /** The path, normalised (no query, no doubled or trailing slash). */
  readonly path: string;
  /** For a family of paths (`/races/{slug}`): whether the route serves this one; `path` then names the family. */
  readonly serves?: (path: string) => boolean;
  /** The methods it takes (others go on down the table); absent: every method, the skin answering 405. */
  readonly methods?: readonly string[];
  /** Whether it takes this request besides its path and method (the watch procedure: its content types). */
  readonly takes?: (req: NodeRequest) => boolean;
  readonly handle: (req: NodeRequest, res: NodeResponse, path: string) => unknown;
  /**
   * The one method taken on this exact path before the table is read, on the raw URL (no normalisation, no scan):
   * the REST operation's POST, the port's hottest request (what the table scan costs it: docs/benchmarks.md,
   * "Issue 28: what the layering changed on the hot paths").
   */
  readonly first?: string;
  /** Answers a POST on an HTTP/2 stream itself, without Node's (req, res) objects (docs/benchmarks.md). */
  readonly stream?: (
    stream: Parameters<StreamHandler>[0],
    headers: Parameters<StreamHandler>[1],
    address: string,
  ) => unknown;
  /**
   * What traces call the request: `path` (true), the family's template for this path (a function), or nothing
   * (false: the span is named otherwise, as RPCs are, or not worth a name).
   */
  readonly traced: boolean | ((path: string) => string);
}

const GET = ["GET", "HEAD"] as const;
const POST = ["POST"] as const;
const OPTIONS = ["OPTIONS"] as const;

/**
 * The public port's routes, tried in order on the request's normalised path; what no route takes goes to
 * connect-es (the Connect services), and what connect-es does not know either is a 404 in the REST envelope.
 *
 * To serve a new REST GET route, add one entry, e.g. for an exact path:
 * `{ path: `${base}/things`, methods: GET, handle: (req, res) => things.handle(req, res), traced: true }`;
 * a family of paths adds `serves: (p) => things.matches(p)` and names its template in `traced`. A path a browser
 * page calls with a publishable key adds its OPTIONS entry (CORS preflight) above it. To serve a new Connect
 * service, add one line to `connectServices` instead.
 */
function routingTable(
  skins: Skins & { readonly jwks: SigningKeysSkin; readonly verify: VerifyPage },
  readiness: Readiness,
): readonly Route[] {
  const { rest, races, raceEvents, watch, boardStream, overlay, preflight, docs } = skins;
  const restHandle = (req: NodeRequest, res: NodeResponse) => rest.handle(nodeExchange(req, res));
  const restStream: Route["stream"] = (stream, headers, address) =>
    rest.handle(streamExchange(stream, headers, address));
  const preflightHandle = (req: NodeRequest, res: NodeResponse) => preflight.handle(req, res);
  const raceHandle = (req: NodeRequest, res: NodeResponse, path: string) =>
    races.handle(nodeExchange(req, res), req.url ?? "/", path);
  const racePaths = {
    path: races.path,
    serves: (p: string) => races.matches(p),
    traced: (p: string) => races.route(p),
  };
  const raceStreamPaths = {
    path: `${races.path}/{slug}/stream`,
    serves: (p: string) => raceEvents.matches(p),
    traced: () => `${races.path}/{slug}/stream`,
  };
  const table: Route[] = [
    { path: rest.path, methods: OPTIONS, handle: preflightHandle, traced: true },
    { path: boardStream.path, methods: OPTIONS, handle: preflightHandle, traced: true },
    { ...racePaths, methods: OPTIONS, handle: preflightHandle },
    { ...raceStreamPaths, methods: OPTIONS, handle: preflightHandle },
    { path: rest.path, first: "POST", handle: restHandle, stream: restStream, traced: true },
    { ...racePaths, handle: raceHandle },
    { ...raceStreamPaths, handle: (req, res, path) => raceEvents.handle(req, res, path) },
    {
      path: WATCH_PATH,
      methods: POST,
      takes: (req) => req.url === WATCH_PATH && watch.matches(req, WATCH_PATH),
      handle: (req, res) => watch.handle(req, res),
      traced: false,
    },
    { path: boardStream.path, handle: (req, res) => boardStream.handle(req, res), traced: true },
    { path: overlay.path, handle: (req, res) => overlay.handle(req, res), traced: true },
    { path: "/healthz", methods: GET, handle: (_req, res) => writeJson(res, 200, { status: "ok" }), traced: true },
    { path: "/readyz", methods: GET, handle: (_req, res) => readyz(readiness, res), traced: true },
    { path: skins.jwks.path, methods: GET, handle: (req, res) => skins.jwks.handle(req, res), traced: true },
    {
      path: VERIFY_PATH,
      serves: (path) => skins.verify.matches(path),
      methods: GET,
      handle: (req, res, path) => skins.verify.handle(req, res, path),
      traced: (path) => skins.verify.route(path),
    },
    {
      path: "/docs",
      serves: (path) => docs.matches(path, "GET"),
      methods: GET,
      handle: (req, res, path) => docs.handle(req, res, path),
      traced: false,
    },
  ];
  return table.map(withEveryField);
}

/**
 * A route with every field, in one order, so that the dispatcher reads objects of one shape: routes of mixed
 * shapes cost more per request to look up (measured in docs/benchmarks.md, "Issue 28: what the layering changed
 * on the hot paths").
 */
function withEveryField(route: Route): Route {
  const { path, serves, methods, takes, first, handle, stream, traced } = route;
  return { path, serves, methods, takes, first, handle, stream, traced } as Route;
}

/** The first route that takes the request, or undefined. */
function routeOf(
  routes: readonly Route[],
  method: string | undefined,
  path: string,
  req?: NodeRequest,
): Route | undefined {
  for (const route of routes) {
    if (route.serves === undefined ? route.path !== path : !route.serves(path)) continue;
    if (route.methods !== undefined && (method === undefined || !route.methods.includes(method))) continue;
    if (route.takes !== undefined && (req === undefined || !route.takes(req))) continue;
    return route;
  }
  return undefined;
}

/**
 * The port's request handler: the client address is found once, before anything else reads it; then the routes
 * taken `first` on the raw URL, the routing table, and connect-es.
 */
function routingHandler(
  routes: readonly Route[],
  connect: RequestHandler,
  clientAddress: ReturnType<typeof clientAddressResolver>,
): RequestHandler {
  const firsts = routes.filter((route) => route.first !== undefined);
  return (req, res) => {
    stampClientAddress(req, clientAddress);
    for (const route of firsts) {
      if (req.url === route.path && req.method === route.first) return void route.handle(req, res, route.path);
    }
    const path = normalizePath(req.url ?? "/");
    const route = routeOf(routes, req.method, path, req);
    if (route === undefined) {
      sayOversizeBodiesAs413(req, res);
      connect(req, res);
    } else void route.handle(req, res, path);
  };
}

/**
 * REST over HTTP/2 is answered on the stream itself, without Node's compatibility (req, res) objects
 * (docs/benchmarks.md: they were the largest cost of the path): a POST to a route with `stream`. Everything else
 * goes through the request handler.
 */
function streamHandler(
  routes: readonly Route[],
  clientAddress: ReturnType<typeof clientAddressResolver>,
): StreamHandler {
  return (stream, headers) => {
    const path = headers[":path"];
    if (headers[":method"] !== "POST" || path === undefined || headers.expect !== undefined) return false;
    const route = routeOf(routes, "POST", normalizePath(path));
    if (route?.stream === undefined) return false;
    void route.stream(stream, headers, clientAddress({ headers, socket: stream.session?.socket ?? {} }));
    return true;
  };
}

/** What traces call a request's route (a path of the table), or undefined. */
function tracedRoute(routes: readonly Route[]): (path: string) => string | undefined {
  return (path) => {
    const normal = normalizePath(path);
    const route = routes.find((r) => (r.serves === undefined ? r.path === normal : r.serves(normal)));
    if (route === undefined || route.traced === false) return undefined;
    return route.traced === true ? route.path : route.traced(normal);
  };
}

/** The readiness answer, with the release that gives it (so a mixed fleet's instances can be told apart). */
function readyz(readiness: Readiness, res: NodeResponse): Promise<void> {
  const { version, commit } = packageInfo();
  return readiness
    .check()
    .then((body) => writeJson(res, body.status === "ready" ? 200 : 503, { ...body, version, commit }));
}

/** A path that neither the table nor connect-es knows: 404 in the REST envelope. */
function notFound(req: NodeRequest, res: NodeResponse, restPath: string, logger: Logger): void {
  const reason = new HttpRefusal("NOT_FOUND", `no such path. The operation is POST ${restPath}`);
  void refuse(nodeExchange(req, res), reason, undefined, logger);
}

/** What the server and the internal app use of the public app besides its handlers. */
function publicFace(domain: PublicDomain, metrics: Metrics, admission: Admission) {
  const { changeFeed, keys, keysLoaded, live, readiness, leaderboard, races, raceWatch } = domain;
  return {
    metrics,
    leaderboard,
    races,
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
