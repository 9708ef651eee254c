/**
 * Where this service relies on connect-es's internals. Each reliance in src/platform/compat/ (one module per library) has a
 * test in test/integration/compat.test.ts that fails loudly when an upgrade of the library changes it, instead of
 * the service silently misbehaving. compat/ imports nothing of ours: what it needs (the replacement error) is
 * passed in.
 *
 * - A request message that is not valid protobuf binary is reported as `internal` with a message starting
 *   "parse binary" (corrected through the call's abort signal, below).
 * - Every call ends with its context's `abort()`, which the request gate may wrap (endCallsWithSharedReason).
 * - The watch procedure's own stream framing (platform/transport/rpc-stream-wire.ts) uses connect-es's protocol helpers,
 *   exported for protocol implementations but marked `@private` (no semantic versioning): the envelope, the two
 *   timeout parsers, the gRPC trailer status, the gRPC-Web trailer frame and the Connect end-stream message. Each
 *   is reached only through a function here.
 */
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import {
  createEndStreamSerialization,
  endStreamFlag,
  parseTimeout as parseConnectTimeout,
} from "@connectrpc/connect/protocol-connect";
import { parseTimeout as parseGrpcTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { trailerFlag, trailerSerialize } from "@connectrpc/connect/protocol-grpc-web";

/** What connect-es's message starts with when a request message is not valid protobuf binary. */
export const CONNECT_PARSE_BINARY_PREFIX = "parse binary";
const UNPARSABLE_MESSAGE = "the request message is not valid protobuf binary";

/**
 * connect-es reports a request message it cannot parse from protobuf binary as `internal` (HTTP 500 over the
 * Connect protocol), where a bad JSON message is `invalid_argument`. Both are the caller's mistake: this makes the
 * binary case `replacement` (by default a plain `invalid_argument`), on every protocol. connect-es has no hook for
 * it, but its handlers abort the call's signal with that very error just before writing it out, so a listener
 * registered from the request gate corrects it in place (ConnectError's fields are read-only in its types only).
 */
export function reportUnparsableMessagesAsInvalid(
  context: HandlerContext,
  replacement: () => ConnectError = invalidArgument,
): void {
  context.signal.addEventListener("abort", correctorFor(replacement), ONCE);
}

const invalidArgument = () => new ConnectError(UNPARSABLE_MESSAGE, Code.InvalidArgument);
const ONCE = Object.freeze({ once: true });

/** One abort listener per replacement, shared by every call (none made per call): it reads the signal it fires on. */
const correctors = new WeakMap<() => ConnectError, (event: Event) => void>();

function correctorFor(replacement: () => ConnectError): (event: Event) => void {
  let corrector = correctors.get(replacement);
  if (corrector === undefined) {
    corrector = (event) => {
      const reason: unknown = (event.target as AbortSignal).reason;
      if (isUnparsableBinary(reason)) {
        const error = replacement();
        Object.assign(reason, {
          code: error.code,
          rawMessage: error.rawMessage,
          message: error.message,
          details: error.details,
        });
      }
    };
    correctors.set(replacement, corrector);
  }
  return corrector;
}

/**
 * The reason of a call that ended without one: Node's AbortController would build a new DOMException (and capture its
 * stack trace) for every call otherwise.
 */
export const CALL_ENDED: DOMException = new DOMException("This operation was aborted", "AbortError");

/**
 * connect-es ends every call with its context's `abort()` (HandlerContextController's, not in HandlerContext's public
 * type), without a reason when the call went well; Node then makes a DOMException for the signal's reason, whose
 * stack trace was 11-16 µs of a Connect binary call here (a CPU profile under load: the bare Connect handler's
 * largest cost, and ours). This gives such an end the one CALL_ENDED instead: the signal still aborts, its reason
 * is still an AbortError; a call aborted with a reason (an error, a deadline, the client going away) keeps it.
 * Returns false (and changes nothing) when the context has no `abort` to wrap.
 */
export function endCallsWithSharedReason(context: HandlerContext): boolean {
  const controller = context as HandlerContext & { abort?: (reason?: unknown) => void };
  const abort = controller.abort;
  if (typeof abort !== "function") return false;
  controller.abort = (reason?: unknown) => abort(reason === undefined ? CALL_ENDED : reason);
  return true;
}

export function isUnparsableBinary(reason: unknown): reason is ConnectError {
  return (
    reason instanceof ConnectError &&
    reason.code === Code.Internal &&
    reason.rawMessage.startsWith(CONNECT_PARSE_BINARY_PREFIX)
  );
}

/** The flag of the Connect protocol's end-stream message. */
export const CONNECT_END_STREAM_FLAG: number = endStreamFlag;
/** The flag of gRPC-Web's trailer frame. */
export const GRPC_WEB_TRAILER_FLAG: number = trailerFlag;

/** One enveloped message (flags, 4-byte big-endian length, payload), as connect-es frames it. */
export function envelopeOf(payload: Uint8Array, flags = 0): Buffer {
  const bytes = encodeEnvelope(flags, payload);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * A timeout header's value in ms (gRPC's `grpc-timeout` or Connect's `connect-timeout-ms`), or undefined when the
 * header is absent; a malformed one throws connect-es's own `invalid_argument`. No maximum, as for connect-es's
 * handlers without `maxTimeoutMs`.
 */
export function timeoutMs(protocol: "grpc" | "connect", value: string | undefined): number | undefined {
  const parse = protocol === "connect" ? parseConnectTimeout : parseGrpcTimeout;
  const parsed = parse(value ?? null, Number.MAX_SAFE_INTEGER);
  if (parsed.error !== undefined) throw parsed.error;
  return parsed.timeoutMs;
}

const endStream = createEndStreamSerialization({});

/** The Connect protocol's end-stream message (JSON): the error with its details and metadata, or success. */
export function connectEndStream(error: ConnectError | undefined): Uint8Array {
  return endStream.serialize(error === undefined ? { metadata: new Headers() } : { metadata: new Headers(), error });
}

/** gRPC's trailer status of an ending stream: `grpc-status`, and for an error its message and details. */
export function grpcTrailerStatus(error: ConnectError | undefined): Headers {
  return setTrailerStatus(new Headers(), error);
}

/** gRPC-Web's trailer frame's payload: the trailers as HTTP/1 header lines. */
export function grpcWebTrailerPayload(trailers: Headers): Uint8Array {
  return trailerSerialize(trailers);
}
