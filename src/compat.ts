/**
 * Every place this service relies on a library's internals, and nowhere else.
 * Each has a test in test/compat.test.ts that fails loudly when an upgrade of
 * the library breaks the assumption, instead of the service silently
 * misbehaving.
 *
 * - connect-es: a request message that is not valid protobuf binary is
 *   reported as `internal` with a message starting "parse binary".
 * - node:http: a socket's response in progress is `socket._httpMessage`; a server that never
 *   listens itself starts tracking its connections when it is sent a `listening` event.
 * - connect-es's protocol helpers for the watch procedure's own stream
 *   framing (transport/rpc-stream-wire.ts): `setTrailerStatus` and
 *   `createEndStreamSerialization`, exported for protocol implementations but
 *   marked internal; test/integration/live-rpc.test.ts reads their output
 *   with connect-es and grpc-js clients.
 * - mysql2: a pool's connection lists (`_allConnections`, `_freeConnections`,
 *   `_connectionQueue`), and a promise PoolConnection's core connection
 *   (`.connection`), which stays the same object across checkouts.
 */
import type http from "node:http";
import type net from "node:net";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import type { Pool, PoolConnection } from "mysql2/promise";
import { malformedRequest } from "./errors.js";

/** What connect-es's message starts with when a request message is not valid protobuf binary. */
export const CONNECT_PARSE_BINARY_PREFIX = "parse binary";
const UNPARSABLE_MESSAGE = "the request message is not valid protobuf binary";

/**
 * connect-es reports a request message it cannot parse from protobuf binary as
 * `internal` (HTTP 500 over the Connect protocol), where a bad JSON message is
 * `invalid_argument`. Both are the caller's mistake: this makes the binary case
 * `invalid_argument` too, on every protocol. connect-es has no hook for it, but
 * its handlers abort the call's signal with that very error just before
 * writing it out, so a listener registered from the request gate corrects it
 * in place (ConnectError's fields are read-only in its types only).
 */
export function reportUnparsableMessagesAsInvalid(context: HandlerContext): void {
  context.signal.addEventListener(
    "abort",
    () => {
      const reason: unknown = context.signal.reason;
      if (isUnparsableBinary(reason)) {
        const replacement = malformedRequest(UNPARSABLE_MESSAGE);
        Object.assign(reason, {
          code: replacement.code,
          rawMessage: replacement.rawMessage,
          message: replacement.message,
          details: replacement.details,
        });
      }
    },
    { once: true },
  );
}

export function isUnparsableBinary(reason: unknown): reason is ConnectError {
  return (
    reason instanceof ConnectError &&
    reason.code === Code.Internal &&
    reason.rawMessage.startsWith(CONNECT_PARSE_BINARY_PREFIX)
  );
}

/** Whether Node's HTTP/1.1 server has begun a response on this socket (nothing more may be written then). */
export function responseStarted(socket: net.Socket): boolean {
  const inFlight = (socket as net.Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  return inFlight?.headersSent === true;
}

/**
 * Starts Node's own connection tracking on an HTTP/1.1 server that is handed its connections
 * (`emit("connection")`) instead of listening. Node starts it when the server listens: without it,
 * `closeIdleConnections()` and `closeAllConnections()` do nothing, and the headers and request
 * timeouts are never checked.
 */
export function trackConnections(server: http.Server): void {
  server.emit("listening");
}

export interface PoolUsage {
  /** Connections the pool holds. */
  readonly open: number;
  /** Of those, not checked out. */
  readonly idle: number;
  /** Requests waiting for a connection. */
  readonly waiting: number;
}

/**
 * A mysql2 pool's use right now. mysql2 has no public counts, and its events cannot give them:
 * a connection handed from one caller straight to a queued one emits nothing, and a destroyed
 * connection leaves the pool without an event.
 */
export function poolUsage(pool: Pool): PoolUsage {
  const inner = pool.pool as unknown as {
    _allConnections?: { length: number };
    _freeConnections?: { length: number };
    _connectionQueue?: { length: number };
  };
  return {
    open: inner._allConnections?.length ?? 0,
    idle: inner._freeConnections?.length ?? 0,
    waiting: inner._connectionQueue?.length ?? 0,
  };
}

/**
 * The driver's connection behind a checked-out promise PoolConnection: the same object every time
 * that connection is checked out (the promise wrapper is new each time), so per-connection set-up
 * can be remembered against it.
 */
export function connectionIdentity(connection: PoolConnection): object {
  return (connection as unknown as { connection: object }).connection;
}
