/**
 * The internal listener (INTERNAL_HOST:INTERNAL_PORT, default
 * 127.0.0.1:9090): topwagers.v1.WagerIngestService, ApiKeyService and
 * RaceService (any affiliate's races, behind the ADMIN_TOKEN) over
 * Connect, gRPC (h2c) and gRPC-Web on one port, for the casino platform only,
 * and GET /metrics. Like the public app, this builds a handler and does not
 * listen; server.ts (or a test) serves it with platform/transport/one-port-server.ts.
 *
 * An ingest call flows: transport → gate (keys/gate/request-gate.ts: the service's token,
 * headers only, before any body is read) → decode → ingest (validate, write
 * all or nothing) → answer. The public port never routes these paths.
 */

import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { ApiKeyService, file_topwagers_v1_api_keys } from "../../gen/topwagers/v1/api_keys_pb.js";
import { file_topwagers_v1_races, RaceService } from "../../gen/topwagers/v1/races_pb.js";
import { file_topwagers_v1_wager_ingest, WagerIngestService } from "../../gen/topwagers/v1/wager_ingest_pb.js";
import { file_topwagers_v1_webhooks, WebhookService } from "../../gen/topwagers/v1/webhooks_pb.js";
import { type IngestCounters, WagerIngest } from "../ingest/core/wager-ingest.js";
import { mariadbIngest } from "../ingest/sql/ingest-store.js";
import { wagerIngestService } from "../ingest/wire/wager-ingest-service.js";
import { webhookAdmin } from "../jobs/webhook-delivery.js";
import { KeyAdmin, type KeyEvent } from "../keys/core/key-admin.js";
import { OPEN_SERVICES, requestGate } from "../keys/gate/request-gate.js";
import { ADMIN, ADMIN_RACES, INGEST, ServiceTokenCheck } from "../keys/gate/service-token.js";
import { mariadbApiKeys } from "../keys/sql/key-stores.js";
import { apiKeyService } from "../keys/wire/api-key-service.js";
import type { Config } from "../platform/config.js";
import type { Database } from "../platform/database/database.js";
import { HttpRefusal, ServiceError } from "../platform/errors/catalogue.js";
import { renderConnectError } from "../platform/errors/renderers.js";
import { type Logger, silentLogger } from "../platform/logger.js";
import { type CallObservation, observeCalls } from "../platform/observability/call-observation.js";
import type { Metrics } from "../platform/observability/metrics.js";
import { Readiness } from "../platform/observability/readiness.js";
import { packageInfo } from "../platform/package-info.js";
import { clientAddressResolver, stampClientAddress } from "../platform/transport/client-address.js";
import { type NodeRequest, type NodeResponse, type RequestHandler, writeWhole } from "../platform/transport/http.js";
import { sayOversizeBodiesAs413 } from "../platform/transport/oversize-status.js";
import { registerHealth, registerReflection } from "../platform/wire/health-and-reflection.js";
import { RaceWatch } from "../races/core/race-watch.js";
import type { Races } from "../races/core/races.js";
import { mariadbRaces } from "../races/sql/race-store.js";
import { namedAffiliate, RACE_SERVICE_OPTIONS, raceRpc } from "../races/wire/race-rpc.js";
import { mariadbSchema } from "../schema/schema-versions.js";
import { createRaces } from "../services/races.js";
import { resultSigner } from "../services/signing.js";
import type { WebhookAdmin } from "../webhooks/core/endpoint-admin.js";
import { adminOwner, webhookService } from "../webhooks/wire/webhook-service.js";
import { serveMetrics } from "./metrics-endpoint.js";

/** 1000 users with 2048-character avatars fit with room to spare; anything larger is refused unread. */
export const INTERNAL_MAX_BODY_BYTES = 16 * 1024 * 1024;

export interface InternalAppOptions {
  /** Current Unix time in seconds; tests move the clock. */
  readonly now?: () => number;
  readonly logger?: Logger;
  /** Ingest counters and call timings go here (the app's registry, so one GET /metrics shows both). */
  readonly metrics?: Metrics;
  /** Called after each commit other instances should see at once: ingest that may change a leaderboard, and key
   *  changes (change-feed wake-ups). */
  readonly onCommitted?: () => void;
  /** The process's readiness (shared with the public listener); a new one on this database when absent. */
  readonly readiness?: Readiness;
  /** The public listener's key set: a key changed here is read again before the call answers. */
  readonly keys?: { refresh(keyIds: readonly string[]): Promise<void> };
  /** The public app's races (one clock, one leaderboard cache); new ones on this database when absent. */
  readonly races?: Races;
  /** The public app's live races' hub; a new one (over `races`) when absent. */
  readonly raceWatch?: RaceWatch;
  /** Whether GET /metrics is served here (default); false when METRICS_PORT serves it alone. */
  readonly serveMetrics?: boolean;
  /** Webhook endpoint management (the server's, which wakes its delivery worker); one on this database when absent. */
  readonly webhooks?: WebhookAdmin;
}

export interface InternalApp {
  readonly handler: RequestHandler;
  readonly ingest: WagerIngest;
  /** False when INGEST_TOKEN is not set: every ingest call is refused. */
  readonly ingestEnabled: boolean;
  /** False when ADMIN_TOKEN is not set: every ApiKeyService and RaceService call is refused. */
  readonly adminEnabled: boolean;
}

/** Services served on the internal listener, as reflection and health list them. */
export const INTERNAL_SERVICES = [
  WagerIngestService.typeName,
  ApiKeyService.typeName,
  RaceService.typeName,
  WebhookService.typeName,
  ...OPEN_SERVICES,
] as const;

export function createInternalApp(config: Config, database: Database, options: InternalAppOptions = {}): InternalApp {
  const logger = options.logger ?? silentLogger;
  const tokens = serviceTokens(config);
  const ingest = createIngest(database, options);
  const calls = observeCalls({ metrics: options.metrics, logger, accessLog: config.accessLog });
  const connectHandler = connectNodeAdapter({
    routes: internalRoutes(config, database, options, ingest),
    fallback: unroutedPaths((options.serveMetrics ?? true) ? options.metrics : undefined, logger),
    readMaxBytes: INTERNAL_MAX_BODY_BYTES,
    requestGate: tokenGate(tokens, calls),
    ...calls.adapterOptions,
  }) as RequestHandler;
  const clientAddress = clientAddressResolver(config.trustedProxies);
  const handler: RequestHandler = (req, res) => {
    stampClientAddress(req, clientAddress);
    sayOversizeBodiesAs413(req, res);
    connectHandler(req, res);
  };
  return {
    handler,
    ingest,
    ingestEnabled: tokens[WagerIngestService.typeName]?.enabled ?? false,
    adminEnabled: tokens[ApiKeyService.typeName]?.enabled ?? false,
  };
}

/** Each of our services has its own token; an affiliate key opens none of them. */
function serviceTokens(config: Config): Record<string, ServiceTokenCheck> {
  return {
    [WagerIngestService.typeName]: new ServiceTokenCheck(config.ingestToken, INGEST),
    [ApiKeyService.typeName]: new ServiceTokenCheck(config.adminToken, ADMIN),
    [RaceService.typeName]: new ServiceTokenCheck(config.adminToken, ADMIN_RACES),
    [WebhookService.typeName]: new ServiceTokenCheck(config.adminToken, ADMIN),
  };
}

/** The gate that checks the called service's token from the headers, before any body is read. */
function tokenGate(tokens: Record<string, ServiceTokenCheck>, calls: CallObservation) {
  return requestGate((context) => {
    const token = tokens[context.service.typeName];
    if (token === undefined) throw new ServiceError("BAD_SERVICE_TOKEN", "this service takes no calls here");
    token.check(context.requestHeader.get("authorization"));
  }, calls);
}

/** The internal services, health and reflection, over the domain objects they serve. */
function internalRoutes(
  config: Config,
  database: Database,
  options: InternalAppOptions,
  ingest: WagerIngest,
): (router: ConnectRouter) => void {
  const readiness = options.readiness ?? new Readiness(mariadbSchema(database.read, packageInfo().version));
  const keys = createKeyAdmin(database, options);
  const races =
    options.races ??
    createRaces({
      database,
      config,
      signer: resultSigner(config, database, options.logger ?? silentLogger),
      now: options.now,
    });
  const raceStore = mariadbRaces(database.write);
  const raceWatch = options.raceWatch ?? new RaceWatch({ races, pollMs: 1_000, heartbeatMs: 15_000 });
  return (router) => {
    router.service(WagerIngestService, wagerIngestService(ingest));
    router.service(ApiKeyService, apiKeyService(keys));
    router.service(RaceService, raceRpc(races, namedAffiliate(raceStore), { watch: raceWatch }), RACE_SERVICE_OPTIONS);
    router.service(
      WebhookService,
      webhookService(options.webhooks ?? webhookAdmin(config.webhooks, database), adminOwner),
    );
    registerHealth(router, INTERNAL_SERVICES, readiness);
    registerReflection(router, INTERNAL_SERVICES, [
      file_topwagers_v1_wager_ingest,
      file_topwagers_v1_api_keys,
      file_topwagers_v1_races,
      file_topwagers_v1_webhooks,
    ]);
  };
}

/** Ingest on the primary; it counts what it recorded, upserted and voided when there are metrics. */
function createIngest(database: Database, options: InternalAppOptions): WagerIngest {
  const { metrics } = options;
  return new WagerIngest(mariadbIngest(database.write), {
    ...(options.now === undefined ? {} : { now: options.now }),
    ...(options.onCommitted === undefined ? {} : { onCommitted: options.onCommitted }),
    ...(metrics === undefined ? {} : { counters: ingestCounters(metrics) }),
  });
}

function ingestCounters(metrics: Metrics): IngestCounters {
  return {
    recorded(recorded, duplicates) {
      metrics.ingestedWagers.inc({ result: "recorded" }, recorded);
      metrics.ingestedWagers.inc({ result: "duplicate" }, duplicates);
    },
    upserted(users) {
      metrics.upsertedUsers.inc(users);
    },
    voided(outcome) {
      metrics.voidedWagers.inc({ result: "voided" }, outcome.voided);
      metrics.voidedWagers.inc({ result: "already_voided" }, outcome.alreadyVoided);
      metrics.voidedWagers.inc({ result: "pending" }, outcome.pending);
    },
  };
}

/**
 * Key administration on the primary. This instance holds a change before answering; the others at their next
 * change-feed poll, which onCommitted brings forward (with Redis, every instance is woken at once).
 */
function createKeyAdmin(database: Database, options: InternalAppOptions): KeyAdmin {
  const logger = options.logger ?? silentLogger;
  return new KeyAdmin(mariadbApiKeys(database.write), {
    async afterChange(ids) {
      await options.keys?.refresh(ids);
      options.onCommitted?.();
    },
    onEvent(event) {
      options.metrics?.apiKeyEvents.inc({ action: event.action });
      logKeyEvent(logger, event);
    },
  });
}

/** One line per key change: ids and the affiliate only, never the secret. */
function logKeyEvent(logger: Logger, event: KeyEvent): void {
  logger.info(
    {
      keyId: event.keyId,
      affiliateId: event.affiliateId,
      action: event.action,
      ...(event.replacedKeyId === undefined ? {} : { replacedKeyId: event.replacedKeyId }),
      ...(event.expiresAt === undefined ? {} : { expiresAt: event.expiresAt }),
    },
    `api key ${event.action}`,
  );
}

/**
 * Paths the adapter does not route: GET /metrics (Prometheus text format) when `metrics` is given (METRICS_PORT
 * unset), else 404 in Connect's error shape.
 */
function unroutedPaths(metrics: Metrics | undefined, logger: Logger) {
  return (req: NodeRequest, res: NodeResponse): void => {
    if (metrics !== undefined && serveMetrics(metrics, logger, req, res)) return;
    sendError(
      res,
      new HttpRefusal(
        "NOT_FOUND",
        `no such path. The internal listener serves ${INTERNAL_SERVICES.join(" ")} over Connect, gRPC and gRPC-Web`,
      ),
    );
  };
}

function sendError(res: NodeResponse, reason: unknown): void {
  const { status, headers, body } = renderConnectError(reason);
  writeWhole(
    res,
    status,
    {
      "content-type": "application/json; charset=utf-8",
      ...headers,
      "content-length": String(Buffer.byteLength(body)),
    },
    body,
  );
}
