/**
 * The first steps of every public call, whatever the protocol, on headers
 * alone before any body is read: find the key's caller in the in-memory key
 * set (no database work, so bad keys cost nothing; a key of the current format
 * with a right checksum that is not held waits for this instance to catch up
 * with the change feed once, bounded: key-catch-up.ts), count the call against
 * the key's rate limit (a publishable key per key and client address), and
 * give a publishable key's allowed origin its CORS headers. Bad keys are
 * counted per client address; an address over the limit gets 429 for its bad
 * keys, never for a valid one.
 */
import { ConnectError } from "@connectrpc/connect";
import { ServiceError, unauthenticated } from "../../platform/errors/catalogue.js";
import { databaseUnavailable } from "../../platform/errors/database.js";
import type { FailedAuthLimiter } from "../../platform/limits/failed-auth-limiter.js";
import type { KeyRateLimiter } from "../../platform/limits/rate-limiter.js";
import { bearerCredential, isIssuableKey, keyKindOf } from "../core/api-key-secret.js";
import type { Caller } from "../core/caller.js";
import type { KeyCatchUp } from "../core/key-catch-up.js";
import type { KeySet } from "../core/key-set.js";

export interface AdmissionRequest {
  /** The Authorization header as received. */
  readonly authorization: string | null | undefined;
  /** `?key=` of a GET path (the live stream, the overlay); undefined on the POST and the RPC paths. */
  readonly urlKey?: string | undefined;
  /** The client address (platform/transport/client-address.ts: clientAddressOf). */
  readonly clientAddress: string;
  /** The request's Origin header. */
  readonly origin?: string | undefined;
}

export interface Admitted {
  readonly caller: Caller;
  /**
   * For every response to this call: RateLimit-Policy and RateLimit; for a publishable key,
   * `Vary: Origin`, and when its allowed origins hold the request's Origin the CORS headers.
   */
  readonly headers: Readonly<Record<string, string>>;
}

/** The methods and request headers a preflight allows (the POST and the live stream's GET). */
export const CORS_ALLOW_METHODS = "GET, POST, OPTIONS";
export const CORS_ALLOW_HEADERS = "Authorization, Content-Type, Last-Event-ID";
/** Response headers a page may read besides the safelisted ones. */
const CORS_EXPOSE_HEADERS = "RateLimit, RateLimit-Policy, Retry-After";
/** How long a browser may reuse a preflight's answer (seconds). */
const CORS_MAX_AGE = "600";

export function secretKeyInUrl(): ServiceError {
  return new ServiceError(
    "SECRET_KEY_IN_URL",
    "secret API keys never go in URLs (rotate this one, the URL may have been logged). " +
      "Put a publishable key (tw_pub_…) in the key parameter, or send the secret key in the Authorization header from a server",
    { headers: { "www-authenticate": 'Bearer realm="topwagers"' } },
  );
}

function keyUnsettled(): ServiceError {
  return new ServiceError(
    "DATABASE_UNAVAILABLE",
    "this API key changed and the change cannot be read right now. Retry shortly",
    { retryAfterSeconds: 1 },
  );
}

/** A secret key's CORS headers: none (shared, never changed). */
const NO_CORS: Readonly<Record<string, string>> = Object.freeze({});

/** The CORS part of an admitted call's headers. */
function corsHeaders(caller: Caller, origin: string | undefined): Readonly<Record<string, string>> {
  if (caller.kind !== "publishable") return NO_CORS;
  if (origin === undefined || !caller.allowedOrigins.includes(origin)) return { vary: "Origin" };
  return {
    "access-control-allow-origin": origin,
    "access-control-expose-headers": CORS_EXPOSE_HEADERS,
    vary: "Origin",
  };
}

export class Admission {
  constructor(
    private readonly keys: KeySet,
    private readonly limiter: KeyRateLimiter,
    private readonly failedAuth?: FailedAuthLimiter,
    /** Makes a key issued elsewhere work here at once; absent, such a key waits for the change feed's poll. */
    private readonly catchUp?: KeyCatchUp,
  ) {}

  /** admitRequest with a Bearer header alone: the RPC gate and the watch skin. */
  admitBearer(authorization: string | null | undefined, clientAddress = "unknown"): Promise<Admitted> {
    return this.admitRequest({ authorization, clientAddress });
  }

  /**
   * admitRequest for a GET a page opens without setting headers (an EventSource, an <img>, the overlay): the
   * key from Authorization, or a publishable one as `?key=` (`urlKey`, null when absent).
   */
  admitWithUrlKey(
    headers: { readonly authorization?: string | undefined; readonly origin?: string | undefined },
    urlKey: string | null | undefined,
    clientAddress: string,
  ): Promise<Admitted> {
    return this.admitRequest({
      authorization: headers.authorization,
      urlKey: urlKey ?? undefined,
      clientAddress,
      origin: headers.origin,
    });
  }

  /**
   * Admits the call or throws a ServiceError: `unauthenticated` (401; a secret key in the URL has a
   * message of its own), `resource_exhausted` (429 with Retry-After: the key's rate limit, or this
   * address's bad keys), `unavailable` (503: the keys are not loaded yet, or the key changed and
   * cannot be read again right now).
   */
  async admitRequest(request: AdmissionRequest): Promise<Admitted> {
    const { clientAddress, urlKey } = request;
    if (urlKey !== undefined && keyKindOf(urlKey) === "secret")
      throw await this.failed(clientAddress, secretKeyInUrl());
    const fromHeader = request.authorization != null && request.authorization !== "";
    const secret = fromHeader ? bearerCredential(request.authorization) : urlKey;
    if (secret === undefined) throw await this.failed(clientAddress, unauthenticated());
    // Before the first load nothing can be told apart (the instance is not ready yet), except text that
    // is not a key at all. Once loaded, a held key needs no shape or checksum check: text that is not a
    // key is simply not found, and refused the same way.
    if (!this.keys.loaded) {
      if (keyKindOf(secret) === undefined) throw await this.failed(clientAddress, unauthenticated());
      throw databaseUnavailable();
    }
    // A held key is found in memory, at once; a key issued since the last poll may need a catch-up.
    let found = this.keys.lookup(secret);
    if (!found.found && found.unsettled !== true && this.catchUp !== undefined && isIssuableKey(secret)) {
      const later = this.catchUp.find(secret, () => this.keys.lookup(secret));
      found = later instanceof Promise ? await later : later;
    }
    if (!found.found) {
      if (found.unsettled === true) throw keyUnsettled();
      throw await this.failed(clientAddress, unauthenticated());
    }
    const { caller } = found;
    if (!fromHeader && caller.kind === "secret") throw await this.failed(clientAddress, secretKeyInUrl());
    const cors = corsHeaders(caller, request.origin);
    try {
      const decision = await this.limiter.consume(
        caller.keyId,
        caller.rateLimit,
        caller.kind === "publishable" ? clientAddress : undefined,
      );
      return { caller, headers: cors === NO_CORS ? decision.headers : { ...decision.headers, ...cors } };
    } catch (error) {
      // A page reading its own 429 needs the CORS headers on the refusal too.
      if (error instanceof ConnectError)
        for (const [name, value] of Object.entries(cors)) error.metadata.set(name, value);
      throw error;
    }
  }

  /**
   * A CORS preflight's answer: allowed (204 with these headers) when some usable publishable key
   * allows the origin; otherwise refused (403, no CORS headers).
   */
  preflight(origin: string | undefined): { readonly allowed: boolean; readonly headers: Record<string, string> } {
    if (origin === undefined || !this.keys.allowsOrigin(origin)) return { allowed: false, headers: {} };
    return {
      allowed: true,
      headers: {
        "access-control-allow-origin": origin,
        "access-control-allow-methods": CORS_ALLOW_METHODS,
        "access-control-allow-headers": CORS_ALLOW_HEADERS,
        "access-control-max-age": CORS_MAX_AGE,
        vary: "Origin",
      },
    };
  }

  private async failed(clientAddress: string, refusal: ServiceError): Promise<ServiceError> {
    return this.failedAuth === undefined ? refusal : this.failedAuth.failed(clientAddress, refusal);
  }
}
