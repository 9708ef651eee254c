/**
 * The one error type of the service: a ConnectError with a Code, so every
 * protocol reports the same failure the same way. Field problems travel as a
 * list of violations that the REST envelope renders one item each.
 *
 * Messages shown to callers avoid ":" and the other characters that grpc-js
 * mis-decodes in `grpc-message` (; , / ? : @ & = + $ #), and never carry the
 * internal cause, which stays in `cause` for the logs.
 */
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";

export interface Violation {
  /** The request field at fault, by its JSON name (e.g. "numUsers"). */
  readonly field?: string;
  readonly message: string;
}

/**
 * A ConnectError that also carries its field violations. It keeps the name
 * "ConnectError": Connect recognises its errors by name (Symbol.hasInstance),
 * and `instanceof ServiceError` is therefore no test; use `violationsOf`.
 */
export class ServiceError extends ConnectError {
  constructor(
    message: string,
    code: Code,
    readonly violations: readonly Violation[] = [],
    headers?: Record<string, string>,
    cause?: unknown,
  ) {
    super(message, code, headers, undefined, cause);
  }
}

/** The field violations of an error, or none. */
export function violationsOf(error: ConnectError): readonly Violation[] {
  const violations = (error as Partial<ServiceError>).violations;
  return Array.isArray(violations) ? violations : [];
}

export function invalidArgument(violations: readonly Violation[]): ServiceError {
  return new ServiceError(violations.map((v) => v.message).join(". "), Code.InvalidArgument, violations);
}

export function unauthenticated(): ServiceError {
  return new ServiceError(
    "missing or invalid API key (send Authorization Bearer with your key)",
    Code.Unauthenticated,
    [],
    {
      "www-authenticate": 'Bearer realm="topwagers"',
    },
  );
}

export function unavailable(cause: unknown, retryAfterSeconds = 1): ServiceError {
  return new ServiceError(
    "the leaderboard database is unavailable right now. Retry shortly",
    Code.Unavailable,
    [],
    { "retry-after": String(retryAfterSeconds) },
    cause,
  );
}

/** snake_case name of a Connect code, as used in REST error items ("invalid_argument"). */
export function codeName(code: Code): string {
  return Code[code].replace(/[A-Z]/g, (c, i: number) => (i === 0 ? c.toLowerCase() : `_${c.toLowerCase()}`));
}

/** HTTP status for a Connect code, as the Connect protocol defines it. */
export function httpStatusForCode(code: Code): number {
  switch (code) {
    case Code.InvalidArgument:
    case Code.FailedPrecondition:
    case Code.OutOfRange:
      return 400;
    case Code.Unauthenticated:
      return 401;
    case Code.PermissionDenied:
      return 403;
    case Code.NotFound:
      return 404;
    case Code.AlreadyExists:
    case Code.Aborted:
      return 409;
    case Code.ResourceExhausted:
      return 429;
    case Code.Canceled:
      return 499;
    case Code.Unimplemented:
      return 501;
    case Code.Unavailable:
      return 503;
    case Code.DeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

/** Any thrown value as a ConnectError; unknown failures become Internal with a generic message. */
export function asConnectError(reason: unknown): ConnectError {
  if (reason instanceof ConnectError) return reason;
  return new ConnectError("internal error", Code.Internal, undefined, undefined, reason);
}

const UNPARSABLE_MESSAGE = "the request message is not valid protobuf binary";

/**
 * connect-es reports a request message it cannot parse from protobuf binary as
 * `internal` (HTTP 500 over the Connect protocol), where a bad JSON message is
 * `invalid_argument`. Both are the caller's mistake: this makes the binary case
 * `invalid_argument` too, on every protocol. connect-es has no hook for it, but
 * its handlers abort the call's signal with that very error just before
 * writing it out, so a listener registered from the request gate corrects it
 * in place.
 */
export function reportUnparsableMessagesAsInvalid(context: HandlerContext): void {
  context.signal.addEventListener(
    "abort",
    () => {
      const reason: unknown = context.signal.reason;
      if (
        reason instanceof ConnectError &&
        reason.code === Code.Internal &&
        reason.rawMessage.startsWith("parse binary")
      ) {
        Object.assign(reason, {
          code: Code.InvalidArgument,
          rawMessage: UNPARSABLE_MESSAGE,
          message: `[invalid_argument] ${UNPARSABLE_MESSAGE}`,
        });
      }
    },
    { once: true },
  );
}
