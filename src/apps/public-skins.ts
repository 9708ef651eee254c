/**
 * The public port's gate and skins over the domain (apps/public-domain.ts): admission (key, rate limit, CORS), the
 * gate connect-es runs before an RPC, the REST, stream, overlay and docs skins the routing table serves
 * (apps/public-routes.ts), and the Connect services. What the port serves, not how a request finds it.
 */

import type { ConnectRouter } from "@connectrpc/connect";
import { RaceService } from "../../gen/topwagers/v1/races_pb.js";
import { SigningKeyService } from "../../gen/topwagers/v1/signing_pb.js";
import { TopWagersService } from "../../gen/topwagers/v1/top_wagers_pb.js";
import { WebhookService } from "../../gen/topwagers/v1/webhooks_pb.js";
import { BoardStream } from "../boards/wire/board-stream.js";
import { CorsPreflight } from "../boards/wire/cors-preflight.js";
import { leaderboardRpc } from "../boards/wire/leaderboard-rpc.js";
import { OverlayPage } from "../boards/wire/overlay-page.js";
import { RestApi } from "../boards/wire/rest.js";
import { WatchRpc } from "../boards/wire/watch-rpc.js";
import { Admission } from "../keys/gate/admission.js";
import { callerKey } from "../keys/gate/caller-key.js";
import { OPEN_SERVICES, requestGate } from "../keys/gate/request-gate.js";
import { requireScope } from "../keys/gate/scopes.js";
import type { Config } from "../platform/config.js";
import { FailedAuthLimiter } from "../platform/limits/failed-auth-limiter.js";
import { KeyRateLimiter, type LimiterFactory, memoryLimiters } from "../platform/limits/rate-limiter.js";
import type { Logger } from "../platform/logger.js";
import type { CallObservation } from "../platform/observability/call-observation.js";
import { clientAddressOf } from "../platform/transport/client-address.js";
import { createDocsPage, type DocsPage } from "../platform/wire/docs-page.js";
import { registerHealth, registerReflection } from "../platform/wire/health-and-reflection.js";
import { RaceEvents } from "../races/wire/race-events.js";
import { RaceRest } from "../races/wire/race-rest.js";
import { keyAffiliate, RACE_SERVICE_OPTIONS, raceRpc } from "../races/wire/race-rpc.js";
import { keyOwner, webhookService } from "../webhooks/wire/webhook-service.js";
import type { PublicDomain } from "./public-domain.js";

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

/** How the gate counts calls (PublicAppOptions carries these). */
export interface AdmissionOptions {
  readonly limiterFactory?: LimiterFactory;
  /** Failed authentications per client address and window; more than that get 429. Default 30 per 60 s. */
  readonly failedAuthPolicy?: { points: number; windowSeconds: number };
}

/** Key, rate limit (per key, and per address for failed authentications) and CORS of every public call. */
export function buildAdmission(
  config: Config,
  domain: PublicDomain,
  options: AdmissionOptions,
  logger: Logger,
): Admission {
  const { keys, keyCatchUp } = domain;
  const limits = new KeyRateLimiter(config.rateLimit, options.limiterFactory ?? memoryLimiters, {
    points: config.publishableRatePoints,
    windowSeconds: config.rateLimit.windowSeconds,
  });
  return new Admission(keys, limits, new FailedAuthLimiter(options.failedAuthPolicy, logger), keyCatchUp);
}

/** Every service that is not open needs an affiliate key, counted against its rate limit. */
export function gate(admission: Admission, calls: CallObservation) {
  return requestGate(async (context, facts) => {
    // The published signing keys are for everyone, as the JWKS is.
    if (context.service.typeName === SigningKeyService.typeName) return;
    const admitted = await admission.admitBearer(context.requestHeader.get("authorization"), facts.clientAddress);
    facts.keyId = admitted.caller.keyId;
    context.values.set(callerKey, admitted.caller);
    const { headers } = admitted;
    for (const name in headers) context.responseHeader.set(name, headers[name] as string);
  }, calls);
}

/** The skins the routing table serves besides the Connect services. */
export interface Skins {
  readonly rest: RestApi;
  readonly races: RaceRest;
  readonly raceEvents: RaceEvents;
  readonly watch: WatchRpc;
  readonly boardStream: BoardStream;
  readonly overlay: OverlayPage;
  readonly preflight: CorsPreflight;
  readonly docs: DocsPage;
}

export function buildSkins(
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
    raceEvents: new RaceEvents({
      ...{ basePath, admission, watch: raceWatch, slots: live, clientAddress, observe, logger },
      signatures: domain.signing.races,
    }),
    watch: new WatchRpc({ admission, live, maxBodyBytes, clientAddress, observe, logger, signatures }),
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
export function connectServices(domain: PublicDomain): (router: ConnectRouter) => void {
  return (router) => {
    router.service(TopWagersService, leaderboardRpc(domain.leaderboard, domain.signing.boards));
    const raceStreams = { watch: domain.raceWatch, slots: domain.live };
    router.service(RaceService, raceRpc(domain.races, keyAffiliate, raceStreams), RACE_SERVICE_OPTIONS);
    router.service(WebhookService, webhookService(domain.webhooks, keyOwner(domain.webhooks)));
    domain.signing.skin.register(router);
    registerHealth(router, PUBLIC_SERVICES, domain.readiness);
    registerReflection(router, PUBLIC_SERVICES);
  };
}
