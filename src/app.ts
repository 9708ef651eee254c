/**
 * Wires the service from its parts. A pure function of its dependencies: it
 * does not listen (main does), so tests build it on any port and database.
 *
 * A public request flows: transport (public-server) → route (here) →
 * admission (authenticate, rate limit) → validate (period-request) →
 * query (leaderboard) → render (REST envelope or protobuf message).
 */
import type { ConnectRouter, HandlerContext, Interceptor } from "@connectrpc/connect";
import { createContextKey, createContextValues } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { TopWagersService } from "../gen/topwagers/v1/top_wagers_pb.js";
import { Admission } from "./api/admission.js";
import { createDocsPage } from "./api/docs-page.js";
import { registerHealth, registerReflection } from "./api/health-and-reflection.js";
import type { RequestHandler } from "./api/public-server.js";
import { Readiness } from "./api/readiness.js";
import {
  MAX_BODY_BYTES,
  type NodeRequest,
  type NodeResponse,
  normalizePath,
  RestApi,
  sendNotFound,
} from "./api/rest.js";
import { callerKey, topWagersService } from "./api/top-wagers-service.js";
import { Authenticator } from "./auth/authenticator.js";
import type { Config } from "./config.js";
import { asConnectError, codeName, reportUnparsableMessagesAsInvalid } from "./errors.js";
import { ChangeFeed } from "./leaderboard/change-feed.js";
import { Leaderboard } from "./leaderboard/top-wagers.js";
import { FailedAuthLimiter } from "./limits/failed-auth-limiter.js";
import { KeyRateLimiter, type LimiterFactory, memoryLimiters } from "./limits/rate-limiter.js";
import { type Logger, silentLogger } from "./logger.js";
import { Metrics, type Protocol } from "./observability/metrics.js";
import type { Tracing } from "./observability/tracing.js";
import type { Database } from "./storage/database.js";

export interface AppOptions {
  readonly limiterFactory?: LimiterFactory;
  /** Current Unix time in seconds; tests move the clock. */
  readonly now?: () => number;
  /** How long an API key lookup is trusted (revocation takes effect within this time). */
  readonly keyCacheTtlMs?: number;
  readonly logger?: Logger;
  readonly metrics?: Metrics;
  /** Failed authentications per client address and window; more than that get 429. Default 30 per 60 s. */
  readonly failedAuthPolicy?: { points: number; windowSeconds: number };
  /** Whether rate limits currently go to Redis, for the metrics (absent without REDIS_URL). */
  readonly redisConnected?: () => boolean;
  /** OpenTelemetry tracing (OTEL_TRACES_EXPORTER); absent, requests are not traced at all. */
  readonly tracing?: Tracing;
}

export interface App {
  readonly handler: RequestHandler;
  readonly metrics: Metrics;
  readonly leaderboard: Leaderboard;
  /** What /readyz and gRPC health answer; shared with the internal listener. */
  readonly readiness: Readiness;
  /** The API key lookups; the internal listener drops them when it changes keys. */
  readonly authenticator: Authenticator;
  /**
   * A change was committed (by this instance, or another one said so through Redis): read the
   * change feed now instead of at the next poll.
   */
  changesCommitted(): void;
  /** Resolves once every change committed before the call is applied to this app's caches. */
  caughtUp(): Promise<void>;
  /** Marks the app as shutting down: readiness and gRPC health turn to not serving; stops the change feed. */
  stopServing(): void;
}

/** Services served on the public port, as reflection and health list them. */
export const PUBLIC_SERVICES = [
  TopWagersService.typeName,
  "grpc.health.v1.Health",
  "grpc.reflection.v1.ServerReflection",
  "grpc.reflection.v1alpha.ServerReflection",
] as const;

/** Per-call facts the transport knows and the gate, interceptor and metrics need. */
const callKey = createContextKey<{ clientAddress: string | undefined; startedAt: bigint }>(
  { clientAddress: undefined, startedAt: 0n },
  { description: "transport facts of the call" },
);

export function createApp(config: Config, database: Database, options: AppOptions = {}): App {
  const readiness = new Readiness(database.read);
  const logger = options.logger ?? silentLogger;
  const authenticator = new Authenticator(
    database.read,
    options.keyCacheTtlMs === undefined ? {} : { cacheTtlMs: options.keyCacheTtlMs },
  );
  const admission = new Admission(
    authenticator,
    new KeyRateLimiter(config.rateLimit, options.limiterFactory ?? memoryLimiters),
    new FailedAuthLimiter(options.failedAuthPolicy),
  );
  // With a result cache, every instance follows the change feed so that a committed change is
  // on its answers within a second, whoever wrote it (see leaderboard/change-feed.ts).
  let leaderboard: Leaderboard | undefined;
  const feed =
    config.cacheTtlMs > 0
      ? new ChangeFeed(database.read, { logger, onChanges: (changes) => leaderboard?.applyChanges(changes) })
      : undefined;
  leaderboard = new Leaderboard({
    // Read replicas when DATABASE_READ_URL lists some; keys, the change feed and readiness stay on the primary side.
    pool: database.leaderboard,
    defaultAvatarUrl: config.defaultAvatarUrl,
    cacheTtlMs: config.cacheTtlMs,
    ...(options.now === undefined ? {} : { now: options.now }),
    ...(feed === undefined ? {} : { freshness: feed }),
  });
  feed?.start();
  const metrics =
    options.metrics ??
    new Metrics({
      cacheStats: () => leaderboard.cacheStats,
      ...(feed === undefined
        ? {}
        : {
            changeFeed: () => ({
              ...feed.stats,
              invalidations: leaderboard?.invalidations ?? 0,
              lag_seconds: feed.lagMs() / 1000,
            }),
          }),
      pools: { read: database.read, write: database.write },
      ...(options.redisConnected === undefined ? {} : { redisConnected: options.redisConnected }),
    });
  const rest = new RestApi({ basePath: config.basePath, admission, leaderboard, metrics, logger });
  const docs = createDocsPage({ basePath: config.basePath });

  const routes = (router: ConnectRouter) => {
    router.service(TopWagersService, topWagersService(leaderboard));
    registerHealth(router, PUBLIC_SERVICES, readiness);
    registerReflection(router, PUBLIC_SERVICES);
  };

  const observe = (
    context: { service: { typeName: string }; method: { name: string } },
    protocol: string,
    code: string,
    startedAt: bigint,
  ) => {
    const seconds = Number(process.hrtime.bigint() - startedAt) / 1e9;
    metrics.observeCall(`${context.service.typeName}/${context.method.name}`, protocol as Protocol, code, seconds);
  };

  // Runs on headers only, before any body is read: an unauthenticated call costs no parsing.
  const requestGate = async (context: HandlerContext) => {
    reportUnparsableMessagesAsInvalid(context);
    if (context.service.typeName.startsWith("grpc.")) return;
    const call = context.values.get(callKey);
    try {
      const admitted = await admission.admit(context.requestHeader.get("authorization"), call.clientAddress);
      context.values.set(callerKey, admitted.caller);
      for (const [name, value] of Object.entries(admitted.headers)) context.responseHeader.set(name, value);
    } catch (reason) {
      observe(context, context.protocolName, codeName(asConnectError(reason).code), call.startedAt);
      throw reason;
    }
  };

  // Counts and times every admitted call, and logs failures that are ours to fix.
  const observeCalls: Interceptor = (next) => async (request) => {
    const call = request.contextValues.get(callKey);
    const protocol = protocolOf(request.header.get("content-type"));
    try {
      const response = await next(request);
      observe(request, protocol, "ok", call.startedAt);
      return response;
    } catch (reason) {
      const error = asConnectError(reason);
      observe(request, protocol, codeName(error.code), call.startedAt);
      if (error.cause !== undefined) {
        logger.error({ err: error.cause, procedure: request.url, code: codeName(error.code) }, "call failed");
      }
      throw reason;
    }
  };

  const fallback = (req: NodeRequest, res: NodeResponse) => {
    const path = normalizePath(req.url ?? "/");
    if (rest.matches(path)) return void rest.handle(req, res);
    if (path === "/healthz" && (req.method === "GET" || req.method === "HEAD")) {
      return void sendStatus(res, 200, { status: "ok" });
    }
    if (path === "/readyz" && (req.method === "GET" || req.method === "HEAD")) {
      return void readiness.check().then((body) => sendStatus(res, body.status === "ready" ? 200 : 503, body));
    }
    if (docs.matches(path, req.method)) return void docs.handle(req, res, path);
    return void sendNotFound(req, res, rest.path);
  };

  const connectHandler = connectNodeAdapter({
    routes,
    fallback,
    requestGate,
    interceptors: [observeCalls],
    readMaxBytes: MAX_BODY_BYTES,
    contextValues: (req) =>
      createContextValues().set(callKey, {
        clientAddress: req.socket.remoteAddress,
        startedAt: process.hrtime.bigint(),
      }),
  }) as RequestHandler;
  const handler =
    options.tracing === undefined
      ? connectHandler
      : options.tracing.wrapHandler(connectHandler, (path) => {
          const normal = normalizePath(path);
          if (rest.matches(normal)) return rest.path;
          return normal === "/healthz" || normal === "/readyz" ? normal : undefined;
        });

  return {
    handler,
    metrics,
    leaderboard,
    readiness,
    authenticator,
    changesCommitted() {
      feed?.pollSoon();
    },
    async caughtUp() {
      await feed?.caughtUp();
    },
    stopServing() {
      readiness.stopServing();
      void feed?.stop();
    },
  };
}

function protocolOf(contentType: string | null): Protocol {
  if (contentType === null) return "connect";
  if (contentType.startsWith("application/grpc-web")) return "grpc-web";
  if (contentType.startsWith("application/grpc")) return "grpc";
  return "connect";
}

function sendStatus(res: NodeResponse, status: number, body: object): void {
  const payload = JSON.stringify(body);
  (res as import("node:http").ServerResponse).writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-store",
    "content-length": String(Buffer.byteLength(payload)),
  });
  res.end(payload);
}
