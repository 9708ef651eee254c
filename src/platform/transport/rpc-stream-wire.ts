/**
 * The wire of a server-streaming RPC on the three protocols, for a procedure
 * whose stream framing this service writes itself (the watch procedure: one
 * encoded message written to thousands of streams, see docs/benchmarks.md):
 * protocol by content type, the enveloped request, deadlines, response
 * headers, message frames, and the end of the stream (gRPC trailers, the
 * gRPC-Web trailer frame, the Connect end-stream message).
 *
 * The envelope, the timeouts and the ends of a stream are connect-es's own
 * protocol helpers, reached through platform/compat/connect.ts (they are marked
 * private), so a stream's error carries exactly the details the unary call's
 * error carries.
 */
import { promisify } from "node:util";
import { gunzip } from "node:zlib";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  CONNECT_END_STREAM_FLAG,
  connectEndStream,
  envelopeOf,
  GRPC_WEB_TRAILER_FLAG,
  grpcTrailerStatus,
  grpcWebTrailerPayload,
  timeoutMs,
} from "../compat/connect.js";

const gunzipAsync = promisify(gunzip);

export type StreamProtocol = "grpc" | "grpc-web" | "connect";

export interface StreamWire {
  readonly protocol: StreamProtocol;
  /** Protobuf binary (true) or proto JSON. */
  readonly binary: boolean;
}

const CONTENT_TYPES: readonly [RegExp, StreamProtocol][] = [
  [/^application\/grpc(?:\+(proto|json))?$/i, "grpc"],
  [/^application\/grpc-web(?:\+(proto|json))?$/i, "grpc-web"],
  [/^application\/connect\+(proto|json)$/i, "connect"],
];

/**
 * The protocol and codec of a streaming request by its Content-Type, or undefined for anything
 * else (connect-es then answers it: 415, or gRPC-Web text, which it refuses).
 */
export function streamWireOf(contentType: string | undefined): StreamWire | undefined {
  const mediaType = (contentType ?? "").split(";", 1)[0]?.trim() ?? "";
  for (const [pattern, protocol] of CONTENT_TYPES) {
    const match = pattern.exec(mediaType);
    if (match !== null) return { protocol, binary: (match[1] ?? "proto").toLowerCase() === "proto" };
  }
  return undefined;
}

/** Request headers as Node gives them. */
type RequestHeaders = Readonly<Record<string, string | string[] | undefined>>;

function header(headers: RequestHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The call's deadline in ms from its headers (grpc-timeout or connect-timeout-ms), if any. */
export function deadlineMs(wire: StreamWire, headers: RequestHeaders): number | undefined {
  if (wire.protocol === "connect") return timeoutMs("connect", header(headers, "connect-timeout-ms"));
  return timeoutMs("grpc", header(headers, "grpc-timeout"));
}

function protocolError(message: string): ConnectError {
  return new ConnectError(`protocol error. ${message}`, Code.InvalidArgument);
}

/**
 * The one request message of a server-streaming call: the body is one enveloped message
 * (flags, 4-byte length, bytes), gzip-compressed when the flags say so and the encoding header
 * names gzip.
 */
export async function requestMessageBytes(wire: StreamWire, headers: RequestHeaders, body: Buffer): Promise<Buffer> {
  const encoding = header(headers, wire.protocol === "connect" ? "connect-content-encoding" : "grpc-encoding");
  if (encoding !== undefined && encoding !== "identity" && encoding !== "gzip") {
    throw new ConnectError(`unknown compression "${encoding}". Supported gzip and identity`, Code.Unimplemented);
  }
  if (body.length < 5) throw protocolError("the request is not one enveloped message");
  const flags = body[0] as number;
  const length = body.readUInt32BE(1);
  if (body.length !== 5 + length) throw protocolError("the request is not one enveloped message");
  const data = body.subarray(5);
  if ((flags & 1) === 0) return data;
  if (encoding !== "gzip") throw protocolError("a compressed message without a compression encoding");
  try {
    return await gunzipAsync(data);
  } catch {
    throw new ConnectError("the request message is not valid gzip", Code.InvalidArgument);
  }
}

/** The response headers of a stream that begins. */
export function streamHeaders(wire: StreamWire): Record<string, string> {
  const codec = wire.binary ? "proto" : "json";
  if (wire.protocol === "connect") {
    return { "content-type": `application/connect+${codec}`, "connect-accept-encoding": "gzip" };
  }
  return { "content-type": `application/${wire.protocol}+${codec}`, "grpc-accept-encoding": "gzip" };
}

/** One enveloped message: flags, 4-byte big-endian length, payload. */
export function envelope(payload: Uint8Array, flags = 0): Buffer {
  return envelopeOf(payload, flags);
}

/** How a stream ends on this protocol: bytes for the body, and for gRPC the HTTP trailers. */
export interface StreamEnd {
  readonly body: Buffer | undefined;
  readonly trailers: Record<string, string> | undefined;
}

/** The end of a stream: with `error`, that error (details and metadata included); without, success. */
export function streamEnd(wire: StreamWire, error: ConnectError | undefined): StreamEnd {
  if (wire.protocol === "connect") {
    return { body: envelope(connectEndStream(error), CONNECT_END_STREAM_FLAG), trailers: undefined };
  }
  const status = grpcTrailerStatus(error);
  // gRPC percent-encodes only what is not printable ASCII (and "%"): grpc-js decodes with decodeURI,
  // which would leave connect-es's %2C (a comma) in the message.
  if (error !== undefined) status.set("grpc-message", grpcPercentEncode(error.rawMessage));
  if (wire.protocol === "grpc-web") {
    return { body: envelope(grpcWebTrailerPayload(status), GRPC_WEB_TRAILER_FLAG), trailers: undefined };
  }
  const trailers: Record<string, string> = {};
  status.forEach((value, name) => {
    trailers[name] = value;
  });
  return { body: undefined, trailers };
}

/** The gRPC spec's Percent-Encoded: bytes outside 0x20-0x7E, and "%", as %XX of their UTF-8. */
export function grpcPercentEncode(message: string): string {
  let out = "";
  for (const byte of Buffer.from(message, "utf8")) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}
