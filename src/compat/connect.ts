/**
 * Where this service relies on connect-es's internals. Each reliance in src/compat/ (one module
 * per library) has a test in test/integration/compat.test.ts that fails loudly when an upgrade of
 * the library breaks the assumption, instead of the service silently misbehaving.
 *
 * - A request message that is not valid protobuf binary is reported as `internal` with a message
 *   starting "parse binary".
 * - The watch procedure's own stream framing (transport/rpc-stream-wire.ts) uses `setTrailerStatus`
 *   and `createEndStreamSerialization`, exported for protocol implementations but marked internal;
 *   test/integration/live-rpc.test.ts reads their output with connect-es and grpc-js clients.
 */
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { malformedRequest } from "../errors/catalogue.js";

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
