/**
 * The watch procedure's own stream framing (src/platform/transport/rpc-stream-wire.ts), byte by byte: the protocol and
 * codec by content type, the deadline, the one enveloped request message (plain and gzip), the response headers,
 * and the end of a stream on each protocol. test/integration/live-rpc.test.ts reads the same framing with
 * connect-es and grpc-js clients.
 */
import { gzipSync } from "node:zlib";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  deadlineMs,
  envelope,
  grpcPercentEncode,
  requestMessageBytes,
  streamEnd,
  streamHeaders,
  streamWireOf,
} from "../../src/platform/transport/rpc-stream-wire.js";

const GRPC = { protocol: "grpc", binary: true } as const;
const GRPC_WEB_JSON = { protocol: "grpc-web", binary: false } as const;
const CONNECT = { protocol: "connect", binary: true } as const;

async function refusal(run: () => Promise<unknown>): Promise<[Code, string]> {
  try {
    await run();
  } catch (error) {
    const e = error as ConnectError;
    return [e.code, e.rawMessage];
  }
  throw new Error("expected a refusal");
}

describe("streamWireOf", () => {
  it("knows the three protocols and their codecs, with parameters and in any case", () => {
    expect(streamWireOf("application/grpc")).toEqual({ protocol: "grpc", binary: true });
    expect(streamWireOf("application/grpc+json")).toEqual({ protocol: "grpc", binary: false });
    expect(streamWireOf("application/GRPC-WEB+proto; charset=utf-8")).toEqual({ protocol: "grpc-web", binary: true });
    expect(streamWireOf("application/grpc-web+json")).toEqual(GRPC_WEB_JSON);
    expect(streamWireOf("application/connect+proto")).toEqual(CONNECT);
    expect(streamWireOf("application/connect+json")).toEqual({ protocol: "connect", binary: false });
  });

  it("leaves everything else to connect-es: unary types, gRPC-Web text, nothing", () => {
    for (const type of [undefined, "", "application/proto", "application/json", "application/grpc-web-text"]) {
      expect(streamWireOf(type)).toBeUndefined();
    }
    expect(streamWireOf("application/connect")).toBeUndefined();
  });
});

describe("deadlineMs", () => {
  it("reads grpc-timeout on gRPC and gRPC-Web, connect-timeout-ms on Connect, the first of repeated values", () => {
    expect(deadlineMs(GRPC, {})).toBeUndefined();
    expect(deadlineMs(GRPC, { "grpc-timeout": "3S" })).toBe(3000);
    expect(deadlineMs(GRPC_WEB_JSON, { "grpc-timeout": ["250m", "1S"] })).toBe(250);
    expect(deadlineMs(CONNECT, { "connect-timeout-ms": "1500", "grpc-timeout": "1S" })).toBe(1500);
    expect(deadlineMs(CONNECT, { "grpc-timeout": "1S" })).toBeUndefined();
  });

  it("refuses a malformed timeout with invalid_argument", async () => {
    expect((await refusal(async () => deadlineMs(GRPC, { "grpc-timeout": "3 seconds" })))[0]).toBe(
      Code.InvalidArgument,
    );
    expect((await refusal(async () => deadlineMs(CONNECT, { "connect-timeout-ms": "-1" })))[0]).toBe(
      Code.InvalidArgument,
    );
  });
});

describe("requestMessageBytes", () => {
  const message = Buffer.from("hello", "utf8");

  it("takes the one enveloped message, plain or gzip-compressed under a gzip encoding", async () => {
    expect(await requestMessageBytes(GRPC, {}, envelope(message))).toEqual(message);
    const gzipped = envelope(gzipSync(message), 1);
    expect(await requestMessageBytes(GRPC, { "grpc-encoding": "gzip" }, gzipped)).toEqual(message);
    expect(await requestMessageBytes(CONNECT, { "connect-content-encoding": "gzip" }, gzipped)).toEqual(message);
    expect(await requestMessageBytes(CONNECT, { "connect-content-encoding": "identity" }, envelope(message))).toEqual(
      message,
    );
  });

  it("refuses what is not one enveloped message, an unknown encoding, and a compressed message it cannot read", async () => {
    const notOne: [Code, string] = [Code.InvalidArgument, "protocol error. the request is not one enveloped message"];
    expect(await refusal(() => requestMessageBytes(GRPC, {}, Buffer.from([0, 0, 0])))).toEqual(notOne);
    expect(await refusal(() => requestMessageBytes(GRPC, {}, envelope(message).subarray(0, 7)))).toEqual(notOne);
    expect(
      await refusal(() => requestMessageBytes(GRPC, {}, Buffer.concat([envelope(message), envelope(message)]))),
    ).toEqual(notOne);
    expect(await refusal(() => requestMessageBytes(GRPC, { "grpc-encoding": "br" }, envelope(message)))).toEqual([
      Code.Unimplemented,
      'unknown compression "br". Supported gzip and identity',
    ]);
    expect(await refusal(() => requestMessageBytes(GRPC, {}, envelope(message, 1)))).toEqual([
      Code.InvalidArgument,
      "protocol error. a compressed message without a compression encoding",
    ]);
    expect(await refusal(() => requestMessageBytes(GRPC, { "grpc-encoding": "gzip" }, envelope(message, 1)))).toEqual([
      Code.InvalidArgument,
      "the request message is not valid gzip",
    ]);
  });
});

describe("streamHeaders", () => {
  it("answers in the request's protocol and codec, accepting gzip", () => {
    expect(streamHeaders(GRPC)).toEqual({ "content-type": "application/grpc+proto", "grpc-accept-encoding": "gzip" });
    expect(streamHeaders(GRPC_WEB_JSON)).toEqual({
      "content-type": "application/grpc-web+json",
      "grpc-accept-encoding": "gzip",
    });
    expect(streamHeaders(CONNECT)).toEqual({
      "content-type": "application/connect+proto",
      "connect-accept-encoding": "gzip",
    });
  });
});

describe("streamEnd", () => {
  const error = new ConnectError("too many streams, 5% more than allowed", Code.ResourceExhausted);

  it("ends a gRPC stream in HTTP trailers, the message percent-encoded as the gRPC spec has it", () => {
    expect(streamEnd(GRPC, undefined)).toEqual({ body: undefined, trailers: { "grpc-status": "0" } });
    expect(streamEnd(GRPC, error)).toEqual({
      body: undefined,
      trailers: { "grpc-status": "8", "grpc-message": "too many streams, 5%25 more than allowed" },
    });
  });

  it("ends a gRPC-Web stream with a trailer frame in the body", () => {
    const end = streamEnd(GRPC_WEB_JSON, error);
    expect(end.trailers).toBeUndefined();
    const lines = "grpc-message: too many streams, 5%25 more than allowed\r\ngrpc-status: 8\r\n";
    expect(end.body).toEqual(envelope(Buffer.from(lines, "latin1"), 0x80));
    expect(streamEnd(GRPC_WEB_JSON, undefined).body).toEqual(envelope(Buffer.from("grpc-status: 0\r\n"), 0x80));
  });

  it("ends a Connect stream with the end-stream message", () => {
    expect(streamEnd(CONNECT, undefined)).toEqual({ body: envelope(Buffer.from("{}"), 0b10), trailers: undefined });
    const end = streamEnd(CONNECT, error);
    expect(end.body?.[0]).toBe(0b10);
    expect(JSON.parse((end.body as Buffer).subarray(5).toString("utf8"))).toEqual({
      error: { code: "resource_exhausted", message: "too many streams, 5% more than allowed" },
    });
  });
});

describe("envelope and grpcPercentEncode", () => {
  it("frames a message as flags, a 4-byte big-endian length and the payload", () => {
    expect([...envelope(Uint8Array.from([1, 2]), 0)]).toEqual([0, 0, 0, 0, 2, 1, 2]);
    expect(envelope(new Uint8Array(300)).readUInt32BE(1)).toBe(300);
  });

  it("percent-encodes only bytes outside printable ASCII, and %, as UTF-8", () => {
    expect(grpcPercentEncode("plain, text (ok)")).toBe("plain, text (ok)");
    expect(grpcPercentEncode("100% é\n")).toBe("100%25 %C3%A9%0A");
  });
});
