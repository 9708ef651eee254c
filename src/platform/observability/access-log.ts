/**
 * The access log (ACCESS_LOG=true): one info line per call, whatever the protocol, with what an
 * operator needs to find a call again: the procedure (and the path of a REST or SSE call, never its
 * query string), the protocol, the outcome, the duration, the key's id (never the secret) and the
 * client's address.
 */
import type { Protocol } from "./metrics.js";

/** Who made a call: the key's id once admitted, the client's address and, for REST and SSE, the path. */
export interface CallParty {
  readonly keyId?: string | undefined;
  readonly clientAddress?: string | undefined;
  /** The HTTP path, e.g. from `req.url`; a query string is cut off here. */
  readonly path?: string | undefined;
}

export interface CallOutcome {
  readonly procedure: string;
  readonly protocol: Protocol;
  /** "ok" or the snake_case error code. */
  readonly code: string;
  /** The HTTP status a REST or SSE caller got. */
  readonly status: number;
  readonly seconds: number;
}

/** The fields of one access log line (its message is "call"). */
export function accessLogFields(call: CallOutcome, party: CallParty | undefined): Record<string, unknown> {
  // REST and SSE answer with an HTTP status; the RPC protocols carry the code alone.
  const http = call.protocol === "rest" || call.protocol === "sse";
  return {
    procedure: call.procedure,
    ...(party?.path === undefined ? {} : { path: party.path.split("?", 1)[0] }),
    protocol: call.protocol,
    code: call.code,
    ...(http ? { status: call.status } : {}),
    durationMs: Math.round(call.seconds * 1e6) / 1e3,
    keyId: party?.keyId ?? null,
    client: party?.clientAddress ?? null,
  };
}
