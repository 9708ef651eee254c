/**
 * The internal listener (INTERNAL_HOST:INTERNAL_PORT, default
 * 127.0.0.1:9090): topwagers.v1.WagerIngestService over Connect, gRPC (h2c)
 * and gRPC-Web on one port, for the casino platform only. Like createApp, this
 * builds a handler and does not listen; main (or a test) serves it with
 * createPublicServer's one-port sniffing.
 *
 * An ingest call flows: transport → gate (ingest token, headers only, before
 * any body is read) → decode → ingest (validate, write all or nothing) →
 * answer. The public port never routes these paths.
 */
import type { ServerResponse } from "node:http";
import type { ConnectRouter, HandlerContext, Interceptor } from "@connectrpc/connect";
import { createContextKey, createContextValues } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { ApiKeyService, file_topwagers_v1_api_keys } from "../../gen/topwagers/v1/api_keys_pb.js";
import { file_topwagers_v1_wager_ingest, WagerIngestService } from "../../gen/topwagers/v1/wager_ingest_pb.js";
import { KeyAdmin } from "../auth/key-admin.js";
import { ADMIN, INGEST, ServiceTokenCheck } from "../auth/service-token.js";
import type { Config } from "../config.js";
import { asConnectError, codeName, reportUnparsableMessagesAsInvalid } from "../errors.js";
import { WagerIngest } from "../ingest/wager-ingest.js";
import { type Logger, silentLogger } from "../logger.js";
import type { Metrics, Protocol } from "../observability/metrics.js";
import type { Database } from "../storage/database.js";
import { apiKeyService } from "./api-key-service.js";
import { registerHealth, registerReflection } from "./health-and-reflection.js";
import type { RequestHandler } from "./public-server.js";
import { Readiness } from "./readiness.js";
import type { NodeRequest, NodeResponse } from "./rest.js";
import { wagerIngestService } from "./wager-ingest-service.js";

/** 1000 users with 2048-character avatars fit with room to spare; anything larger is refused unread. */
export const INTERNAL_MAX_BODY_BYTES = 16 * 1024 * 1024;

export interface InternalAppOptions {
  /** Current Unix time in seconds; tests move the clock. */
  readonly now?: () => number;
  readonly logger?: Logger;
  /** Ingest counters and call timings go here (the app's registry, so one GET /metrics shows both). */
  readonly metrics?: Metrics;
  /** Called after each ingest commit that may change a leaderboard (change-feed wake-ups). */
  readonly onCommitted?: () => void;
  /** The process's readiness (shared with the public listener); a new one on this database when absent. */
  readonly readiness?: Readiness;
  /** The public listener's API key lookups, dropped when a key changes here so it takes effect at once. */
  readonly keyCache?: { forgetKey(keyId: string): void };
}

export interface InternalApp {
  readonly handler: RequestHandler;
  readonly ingest: WagerIngest;
  /** False when INGEST_TOKEN is not set: every ingest call is refused. */
  readonly ingestEnabled: boolean;
  /** False when ADMIN_TOKEN is not set: every ApiKeyService call is refused. */
  readonly adminEnabled: boolean;
}

/** Services served on the internal listener, as reflection and health list them. */
export const INTERNAL_SERVICES = [
  WagerIngestService.typeName,
  ApiKeyService.typeName,
  "grpc.health.v1.Health",
  "grpc.reflection.v1.ServerReflection",
  "grpc.reflection.v1alpha.ServerReflection",
] as const;

const startedAtKey = createContextKey<bigint>(0n, { description: "when the call's headers arrived" });

export function createInternalApp(config: Config, database: Database, options: InternalAppOptions = {}): InternalApp {
  const logger = options.logger ?? silentLogger;
  const metrics = options.metrics;
  const tokens: Record<string, ServiceTokenCheck> = {
    [WagerIngestService.typeName]: new ServiceTokenCheck(config.ingestToken, INGEST),
    [ApiKeyService.typeName]: new ServiceTokenCheck(config.adminToken, ADMIN),
  };
  const readiness = options.readiness ?? new Readiness(database.read);
  const keys = new KeyAdmin(database.write, {
    onEvent(event) {
      // A new key cannot be cached yet; a revoked or replaced one must be looked up again here at once.
      if (event.action === "revoked") options.keyCache?.forgetKey(event.keyId);
      if (event.replacedKeyId !== undefined) options.keyCache?.forgetKey(event.replacedKeyId);
      metrics?.apiKeyEvents.inc({ action: event.action });
      // Never the secret: ids and the affiliate only.
      logger.info(
        {
          keyId: event.keyId,
          affiliateId: event.affiliateId,
          action: event.action,
          ...(event.replacedKeyId === undefined ? {} : { replacedKeyId: event.replacedKeyId }),
        },
        `api key ${event.action}`,
      );
    },
  });
  const ingest = new WagerIngest(database.write, {
    ...(options.now === undefined ? {} : { now: options.now }),
    ...(options.onCommitted === undefined ? {} : { onCommitted: options.onCommitted }),
    ...(metrics === undefined
      ? {}
      : {
          counters: {
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
          },
        }),
  });

  const routes = (router: ConnectRouter) => {
    router.service(WagerIngestService, wagerIngestService(ingest));
    router.service(ApiKeyService, apiKeyService(keys));
    registerHealth(router, INTERNAL_SERVICES, readiness);
    registerReflection(router, INTERNAL_SERVICES, [file_topwagers_v1_wager_ingest, file_topwagers_v1_api_keys]);
  };

  const observe = (procedure: string, protocol: Protocol, code: string, startedAt: bigint) => {
    metrics?.observeCall(procedure, protocol, code, Number(process.hrtime.bigint() - startedAt) / 1e9);
  };

  const requestGate = (context: HandlerContext) => {
    reportUnparsableMessagesAsInvalid(context);
    // Health and reflection are open, as on the public port; each of our services has its own token.
    const token = tokens[context.service.typeName];
    if (token === undefined) return;
    try {
      token.check(context.requestHeader.get("authorization"));
    } catch (reason) {
      const procedure = `${context.service.typeName}/${context.method.name}`;
      const code = codeName(asConnectError(reason).code);
      observe(procedure, context.protocolName as Protocol, code, context.values.get(startedAtKey));
      throw reason;
    }
  };

  const observeCalls: Interceptor = (next) => async (request) => {
    const procedure = `${request.service.typeName}/${request.method.name}`;
    const protocol = protocolOf(request.header.get("content-type"));
    const startedAt = request.contextValues.get(startedAtKey);
    try {
      const response = await next(request);
      observe(procedure, protocol, "ok", startedAt);
      return response;
    } catch (reason) {
      const error = asConnectError(reason);
      observe(procedure, protocol, codeName(error.code), startedAt);
      if (error.cause !== undefined) {
        logger.error({ err: error.cause, procedure, code: codeName(error.code) }, "internal call failed");
      }
      throw reason;
    }
  };

  // Paths the adapter does not route: GET /metrics (Prometheus text format), else 404.
  const fallback = (req: NodeRequest, res: NodeResponse) => {
    if (metrics !== undefined && req.method === "GET" && (req.url ?? "").split("?", 1)[0] === "/metrics") {
      metrics.registry.metrics().then(
        (text) => {
          (res as ServerResponse).writeHead(200, {
            "content-type": metrics.registry.contentType,
            "cache-control": "no-store",
          });
          res.end(text);
        },
        (error: unknown) => {
          logger.error({ err: error }, "could not collect metrics");
          sendJson(res, 503, { code: "unavailable", message: "metrics could not be collected" });
        },
      );
      return;
    }
    sendJson(res, 404, {
      code: "not_found",
      message: `no such path. The internal listener serves ${INTERNAL_SERVICES.join(" ")} over Connect, gRPC and gRPC-Web`,
    });
  };

  const handler = connectNodeAdapter({
    routes,
    fallback,
    requestGate,
    interceptors: [observeCalls],
    readMaxBytes: INTERNAL_MAX_BODY_BYTES,
    contextValues: () => createContextValues().set(startedAtKey, process.hrtime.bigint()),
  }) as RequestHandler;

  return {
    handler,
    ingest,
    ingestEnabled: tokens[WagerIngestService.typeName]?.enabled ?? false,
    adminEnabled: tokens[ApiKeyService.typeName]?.enabled ?? false,
  };
}

function protocolOf(contentType: string | null): Protocol {
  if (contentType?.startsWith("application/grpc-web")) return "grpc-web";
  if (contentType?.startsWith("application/grpc")) return "grpc";
  return "connect";
}

function sendJson(res: NodeResponse, status: number, body: object): void {
  const payload = JSON.stringify(body);
  (res as ServerResponse).writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-store",
    "content-length": String(Buffer.byteLength(payload)),
  });
  res.end(payload);
}
