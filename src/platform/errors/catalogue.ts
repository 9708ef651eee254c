/**
 * The error catalogue: every reason the service gives (each with its Connect code), the one error
 * type, the google.rpc details every RPC error carries (ErrorInfo; BadRequest for field problems;
 * RetryInfo for limits), and the refusals made by HTTP alone. Renderers are in renderers.ts, the
 * code → HTTP status table in http-status.ts, database failures in database.ts, domain errors in
 * domain.ts (docs/architecture.md).
 *
 * Messages shown to callers avoid ":" and the other characters that grpc-js
 * mis-decodes in `grpc-message` (; , / ? : @ & = + $ #), and never carry the
 * internal cause, which stays in `cause` for the logs.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  BadRequest_FieldViolationSchema,
  BadRequestSchema,
  ErrorInfoSchema,
  RetryInfoSchema,
} from "../../../gen/google/rpc/error_details_pb.js";
import type { Violation } from "../../values/violation.js";

/** The domain of every ErrorInfo this service sends. */
export const ERROR_DOMAIN = "topwagers";

/**
 * The error catalogue: every reason the service gives, with its Connect/gRPC code (and so its
 * HTTP status, see httpStatusForCode). The reason travels as google.rpc.ErrorInfo.reason on
 * every RPC error; it is stable, so callers may branch on it. REST callers see the snake_case
 * Connect code in the envelope (docs/contract.md), which these reasons refine.
 */
export const CATALOGUE = {
  /** A request field breaks a rule (BadRequest lists each). */
  INVALID_ARGUMENT: Code.InvalidArgument,
  /** The request message could not be decoded at all. */
  MALFORMED_REQUEST: Code.InvalidArgument,
  /** No, unknown, revoked or expired API key. */
  UNAUTHENTICATED: Code.Unauthenticated,
  /** A secret API key sent in a URL (`?key=`): refused whatever the key, since URLs get logged. */
  SECRET_KEY_IN_URL: Code.Unauthenticated,
  /** The API key lacks the scope the call needs (ErrorInfo metadata `scope` names it). */
  MISSING_SCOPE: Code.PermissionDenied,
  /** No or wrong INGEST_TOKEN / ADMIN_TOKEN, or an affiliate key on an internal service. */
  BAD_SERVICE_TOKEN: Code.Unauthenticated,
  /** The key's rate limit is used up (RetryInfo says when to retry). */
  RATE_LIMITED: Code.ResourceExhausted,
  /** Too many calls with invalid keys from this address (RetryInfo says when to retry). */
  TOO_MANY_FAILED_ATTEMPTS: Code.ResourceExhausted,
  /**
   * A cap on what one affiliate may hold is reached (webhook endpoints, live and scheduled races): remove one
   * first. ErrorInfo metadata names the setting (`setting`) and its value (`limit`).
   */
  LIMIT_REACHED: Code.FailedPrecondition,
  /** An endpoint's test events and redeliveries this minute are used up (RetryInfo says when to retry). */
  TOO_MANY_SENDS: Code.ResourceExhausted,
  /** INGEST_TOKEN is not set on this server. */
  INGEST_DISABLED: Code.FailedPrecondition,
  /** ADMIN_TOKEN is not set on this server. */
  ADMIN_DISABLED: Code.FailedPrecondition,
  /** Wagers name users that were never upserted. */
  UNKNOWN_USERS: Code.FailedPrecondition,
  /** A wager id was recorded before with other content. */
  WAGER_CONFLICT: Code.AlreadyExists,
  /** No API key with this id. */
  KEY_NOT_FOUND: Code.NotFound,
  /** No race with this id or slug among the affiliate's races (another affiliate's race is not found either). */
  RACE_NOT_FOUND: Code.NotFound,
  /** The race's state no longer allows the change (a period change once live, any change once final or cancelled). */
  RACE_STATE: Code.FailedPrecondition,
  /** Another race of the affiliate (another series) already has the slug. */
  SLUG_TAKEN: Code.AlreadyExists,
  /** No webhook endpoint or delivery has this id (or it is another affiliate's). */
  WEBHOOK_NOT_FOUND: Code.NotFound,
  /** No such service on this health endpoint. */
  UNKNOWN_SERVICE: Code.NotFound,
  /**
   * The period, wager or void needs rows the retention job deleted (before the retention horizon): refused rather
   * than answered short. ErrorInfo metadata names the horizon (`horizon`, Unix seconds) and its kind (`kind`).
   */
  BEYOND_RETENTION: Code.OutOfRange,
  /** Too much lock contention to commit; nothing was written. */
  CONTENTION: Code.Aborted,
  /** The database is unreachable or too slow right now. */
  DATABASE_UNAVAILABLE: Code.Unavailable,
  /** The key or the client address has its maximum of open streams (RetryInfo says when to retry). */
  TOO_MANY_STREAMS: Code.ResourceExhausted,
  /** This instance has its maximum of open streams: connect to another one. */
  INSTANCE_FULL: Code.Unavailable,
  /** The server is stopping: streams end with this, and new ones are refused. */
  SHUTTING_DOWN: Code.Unavailable,
  /** A stream's deadline (grpc-timeout, connect-timeout-ms) passed. */
  DEADLINE_EXCEEDED: Code.DeadlineExceeded,
  /** A bug or an unexpected failure on our side. */
  INTERNAL: Code.Internal,
} as const satisfies Record<string, Code>;

export type ErrorReason = keyof typeof CATALOGUE;

export interface ErrorOptions {
  readonly violations?: readonly Violation[];
  /** Response headers (or trailers) to send with the error, e.g. www-authenticate. */
  readonly headers?: Record<string, string>;
  /** Sent as Retry-After and google.rpc.RetryInfo. */
  readonly retryAfterSeconds?: number;
  /** The internal cause, for the logs only. */
  readonly cause?: unknown;
  /** google.rpc.ErrorInfo metadata, e.g. `{ scope: "races:write" }` for MISSING_SCOPE. */
  readonly info?: Readonly<Record<string, string>>;
}

/** At most this many field violations travel in google.rpc.BadRequest (keeps the trailer small). */
export const MAX_DETAIL_VIOLATIONS = 50;

/**
 * The one error type of the service: a ConnectError with a catalogue reason and field
 * violations, so every protocol reports the same failure the same way. It keeps the name
 * "ConnectError": Connect recognises its errors by name (Symbol.hasInstance), and
 * `instanceof ServiceError` is therefore no test; use `violationsOf`.
 */
export class ServiceError extends ConnectError {
  readonly violations: readonly Violation[];

  constructor(
    readonly reason: ErrorReason,
    message: string,
    options: ErrorOptions = {},
  ) {
    const code = CATALOGUE[reason];
    const violations = options.violations ?? [];
    const headers = { ...options.headers };
    if (options.retryAfterSeconds !== undefined) headers["retry-after"] = String(options.retryAfterSeconds);
    super(
      message,
      code,
      headers,
      errorDetails(reason, violations, options.retryAfterSeconds, options.info),
      options.cause,
    );
    this.violations = violations;
  }
}

/** google.rpc details of an error: ErrorInfo always, BadRequest with violations, RetryInfo with a delay. */
function errorDetails(
  reason: ErrorReason,
  violations: readonly Violation[],
  retryAfterSeconds?: number,
  info?: Readonly<Record<string, string>>,
) {
  const details: ConstructorParameters<typeof ConnectError>[3] = [
    {
      desc: ErrorInfoSchema,
      value: info === undefined ? { reason, domain: ERROR_DOMAIN } : { reason, domain: ERROR_DOMAIN, metadata: info },
    },
  ];
  if (CATALOGUE[reason] === Code.InvalidArgument || violations.length > 0) {
    details.push({
      desc: BadRequestSchema,
      value: {
        fieldViolations: violations.slice(0, MAX_DETAIL_VIOLATIONS).map((v) =>
          create(BadRequest_FieldViolationSchema, {
            field: v.field === undefined ? "" : protoFieldPath(v.field),
            description: v.message,
          }),
        ),
      },
    });
  }
  if (retryAfterSeconds !== undefined) {
    details.push({ desc: RetryInfoSchema, value: { retryDelay: { seconds: BigInt(retryAfterSeconds) } } });
  }
  return details;
}

/** A field path by JSON names as protobuf field names: "numUsers" → "num_users", "wagerIds[2]" → "wager_ids[2]". */
export function protoFieldPath(jsonPath: string): string {
  return jsonPath.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** The field violations of an error, or none. */
export function violationsOf(error: ConnectError): readonly Violation[] {
  const violations = (error as Partial<ServiceError>).violations;
  return Array.isArray(violations) ? violations : [];
}

export function invalidArgument(violations: readonly Violation[]): ServiceError {
  return new ServiceError("INVALID_ARGUMENT", violations.map((v) => v.message).join(". "), { violations });
}

export function unauthenticated(): ServiceError {
  return new ServiceError("UNAUTHENTICATED", "missing or invalid API key (send Authorization Bearer with your key)", {
    headers: { "www-authenticate": 'Bearer realm="topwagers"' },
  });
}

export function internal(cause: unknown): ServiceError {
  return new ServiceError("INTERNAL", "internal error", { cause });
}

/** A request message that could not be decoded at all (`invalid_argument`, reason MALFORMED_REQUEST). */
export function malformedRequest(message: string): ServiceError {
  return new ServiceError("MALFORMED_REQUEST", message, { violations: [{ message }] });
}

/**
 * Refusals made by HTTP alone, before any RPC is reached, on the REST skin and the transport:
 * each has a status and a REST code of its own (the RPC protocols answer these cases themselves).
 */
export const HTTP_REFUSALS = {
  /** No route for the path. */
  NOT_FOUND: { status: 404, code: "not_found" },
  /** The path exists for another method. */
  METHOD_NOT_ALLOWED: { status: 405, code: "method_not_allowed" },
  /** The request did not arrive within the request timeout. */
  REQUEST_TIMEOUT: { status: 408, code: "request_timeout" },
  /** The body is larger than the limit. */
  PAYLOAD_TOO_LARGE: { status: 413, code: "payload_too_large" },
  /** The body is not application/json. */
  UNSUPPORTED_MEDIA_TYPE: { status: 415, code: "unsupported_media_type" },
  /** A CORS preflight from an origin that no usable publishable key allows. */
  CORS_REFUSED: { status: 403, code: "permission_denied" },
  /** The request headers are larger than the limit. */
  HEADERS_TOO_LARGE: { status: 431, code: "request_header_fields_too_large" },
  /** Node's HTTP parser refused the request line or headers. */
  MALFORMED_HTTP: { status: 400, code: "invalid_argument" },
  /** A listener's own answer cannot be made right now (GET /metrics could not collect). */
  UNAVAILABLE: { status: 503, code: "unavailable" },
} as const satisfies Record<string, { status: number; code: string }>;

export type HttpRefusalKind = keyof typeof HTTP_REFUSALS;

/** An HTTP-level refusal (see HTTP_REFUSALS); `headers` go on the response (Allow, Connection). */
export class HttpRefusal extends Error {
  readonly status: number;
  readonly code: string;

  constructor(
    readonly kind: HttpRefusalKind,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.status = HTTP_REFUSALS[kind].status;
    this.code = HTTP_REFUSALS[kind].code;
  }
}
