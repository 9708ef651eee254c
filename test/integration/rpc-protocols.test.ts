/**
 * The one operation over every RPC protocol on the one public port: Connect
 * (JSON and binary, HTTP/1.1 and h2c), gRPC (h2c, connect-es and grpc-js) and
 * gRPC-Web. Same answers, same error codes and messages, rate-limit metadata
 * where each protocol's clients look for it, and one rate-limit count per call
 * whatever the protocol.
 */
import { create, toBinary, toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { beforeAll, describe, expect, it } from "vitest";
import {
  GetTopAffiliateWagersByPeriodRequestSchema,
  GetTopAffiliateWagersByPeriodResponseSchema,
  TopWagersService,
} from "../../gen/topwagers/v1/top_wagers_pb.js";
import { createPublicApp } from "../../src/apps/public.js";
import { DEFAULT_AVATAR_URL, loadConfig } from "../../src/platform/config.js";
import { type Database, openDatabase } from "../../src/platform/database/database.js";
import { createOnePortServer, type OnePortServer } from "../../src/platform/transport/one-port-server.js";
import { grpcJsMethod } from "../support/calls.js";
import { FEB_1_2025, JAN_1_2025 } from "../support/dates.js";
import { connectDetails, errorInfo, retryInfo, statusDetailsBin } from "../support/details.js";
import { addBoard, createKey } from "../support/fixtures.js";
import { closeAfterAll } from "../support/lifecycle.js";
import { listenOnFreePort } from "../support/listen.js";
import { startTestServer, type TestServer } from "../support/server.js";

const PROCEDURE = "/topwagers.v1.TopWagersService/GetTopAffiliateWagersByPeriod";
const VALID = { startTimestamp: JAN_1_2025, endTimestamp: FEB_1_2025 - 1, numUsers: 10 } as const;

/** The full answer for VALID, in proto JSON names: every field, exact values, ranks from 1 (no weights sent: weighted = plain). */
const EXPECTED = {
  data: [
    {
      username: "bob",
      avatar: DEFAULT_AVATAR_URL,
      totalWagered: 15000.5,
      totalWageredDecimal: "15000.5",
      userId: "u-bob",
      rank: 1,
      weightedWagered: 15000.5,
      weightedWageredDecimal: "15000.5",
    },
    {
      username: "dave",
      avatar: "https://img.example/dave.png",
      totalWagered: 50,
      totalWageredDecimal: "50",
      userId: "u-dave",
      rank: 2,
      weightedWagered: 50,
      weightedWageredDecimal: "50",
    },
    {
      username: "alice",
      avatar: "https://img.example/alice.png",
      totalWagered: 3.50000001,
      totalWageredDecimal: "3.50000001",
      userId: "u-alice",
      rank: 3,
      weightedWagered: 3.50000001,
      weightedWageredDecimal: "3.50000001",
    },
    {
      username: "carl",
      avatar: "https://img.example/carl.png",
      totalWagered: 3.50000001,
      totalWageredDecimal: "3.50000001",
      userId: "u-carl",
      rank: 4,
      weightedWagered: 3.50000001,
      weightedWageredDecimal: "3.50000001",
    },
  ],
};

const UNAUTHENTICATED = "missing or invalid API key (send Authorization Bearer with your key)";
const WWW_AUTHENTICATE = 'Bearer realm="topwagers"';
/** Characters grpc-js leaves percent-escaped in grpc-message (it decodes with decodeURI). */
const URI_RESERVED = /[;,/?:@&=+$#]/;

type PeriodRequest = { startTimestamp?: number; endTimestamp?: number; numUsers?: number };

interface CallResult {
  /** Code.* value, 0 for success (gRPC status numbers equal Connect's codes). */
  readonly code: number;
  readonly message: string;
  /** The response in proto JSON names, every field emitted; undefined on error. */
  readonly body: unknown;
  /** Response headers (Connect), initial metadata (gRPC, gRPC-Web); for connect-es errors, the error's metadata. */
  readonly headers: Readonly<Record<string, string>>;
  /** Trailers (gRPC, gRPC-Web; Connect has none on unary calls). */
  readonly trailers: Readonly<Record<string, string>>;
}

interface RpcClient {
  readonly name: string;
  call(request: PeriodRequest, authorization?: string): Promise<CallResult>;
}

let server: TestServer;
let db: Database;
let defaultKey: string;
const sessions: Http2SessionManager[] = [];
const grpcClients: grpc.Client[] = [];
let clients: RpcClient[];
let grpcJs: GrpcJsClient;

function recordOf(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    out[name] = value;
  });
  return out;
}

function toProtoRequest(request: PeriodRequest) {
  return create(GetTopAffiliateWagersByPeriodRequestSchema, {
    ...(request.startTimestamp === undefined ? {} : { startTimestamp: BigInt(request.startTimestamp) }),
    ...(request.endTimestamp === undefined ? {} : { endTimestamp: BigInt(request.endTimestamp) }),
    ...(request.numUsers === undefined ? {} : { numUsers: request.numUsers }),
  });
}

function connectEsClient(name: string, transport: Transport): RpcClient {
  const client = createClient(TopWagersService, transport);
  return {
    name,
    async call(request, authorization) {
      const headers: Record<string, string> = {};
      const trailers: Record<string, string> = {};
      try {
        const response = await client.getTopAffiliateWagersByPeriod(toProtoRequest(request), {
          headers: authorization === undefined ? {} : { authorization },
          onHeader: (h) => Object.assign(headers, recordOf(h)),
          onTrailer: (t) => Object.assign(trailers, recordOf(t)),
        });
        const body = toJson(GetTopAffiliateWagersByPeriodResponseSchema, response, { alwaysEmitImplicit: true });
        return { code: 0, message: "", body, headers, trailers };
      } catch (reason) {
        const error = ConnectError.from(reason);
        return {
          code: error.code,
          message: error.rawMessage,
          body: undefined,
          headers: recordOf(error.metadata),
          trailers,
        };
      }
    },
  };
}

type MetadataMap = Record<string, string>;

function metadataRecord(metadata: grpc.Metadata): MetadataMap {
  const out: MetadataMap = {};
  for (const [name, value] of Object.entries(metadata.getMap())) out[name] = String(value);
  return out;
}

interface GrpcJsClient extends RpcClient {
  readonly client: grpc.Client;
}

/** @grpc/grpc-js with the proto loaded at run time by @grpc/proto-loader: what a plain Node gRPC user has. */
function grpcJsClient(port: number): GrpcJsClient {
  const method = grpcJsMethod("GetTopAffiliateWagersByPeriod");
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  grpcClients.push(client);
  return {
    name: "grpc-js",
    client,
    call(request, authorization) {
      return new Promise((resolve) => {
        const metadata = new grpc.Metadata();
        if (authorization !== undefined) metadata.set("authorization", authorization);
        let headers: MetadataMap = {};
        let body: unknown;
        const call = client.makeUnaryRequest(
          method.path,
          method.requestSerialize,
          method.responseDeserialize,
          request,
          metadata,
          (error, response) => {
            if (error === null) {
              // proto-loader's `defaults` shows a message field the answer lacks as null: no signature was asked for.
              const { signed, ...fields } = JSON.parse(JSON.stringify(response));
              body = signed === null ? fields : { ...fields, signed };
            }
          },
        );
        call.on("metadata", (m: grpc.Metadata) => {
          headers = metadataRecord(m);
        });
        call.on("status", (status: grpc.StatusObject) => {
          // The unary callback runs before "status"; both have arrived now.
          setImmediate(() =>
            resolve({
              code: status.code,
              message: status.details,
              body: status.code === 0 ? body : undefined,
              headers,
              trailers: metadataRecord(status.metadata),
            }),
          );
        });
      });
    },
  };
}

const CONNECT_JSON_H1 = "Connect JSON HTTP/1.1";
const GRPC_CONNECT_ES = "gRPC h2c (connect-es)";
const GRPC_WEB = "gRPC-Web HTTP/1.1";

function clientNamed(name: string): RpcClient {
  const found = clients.find((c) => c.name === name);
  if (found === undefined) throw new Error(`no client ${name}`);
  return found;
}

/** The metadata value whichever way the client surfaced it. */
function meta(result: CallResult, name: string): string | undefined {
  return result.headers[name] ?? result.trailers[name];
}

/** Asserts RateLimit-Policy and RateLimit for a key with its own limit; returns the reset seconds. */
function expectRateLimit(fields: Readonly<Record<string, string | undefined>>, points: number, remaining: number) {
  expect(fields["ratelimit-policy"]).toBe(`"key";q=${points};w=60`);
  const match = /^"key";r=(\d+);t=(\d+)$/.exec(fields.ratelimit ?? "");
  expect(match, `ratelimit field ${fields.ratelimit}`).not.toBeNull();
  expect(Number(match?.[1])).toBe(remaining);
  const reset = Number(match?.[2]);
  expect(reset).toBeGreaterThanOrEqual(1);
  expect(reset).toBeLessThanOrEqual(60);
  return reset;
}

async function restCall(request: PeriodRequest, authorization: string) {
  const response = await fetch(`${server.baseUrl}/top-affiliate-wagers-by-period`, {
    method: "POST",
    headers: { authorization, "content-type": "application/json" },
    body: JSON.stringify(request),
  });
  return { status: response.status, headers: recordOf(response.headers), body: (await response.json()) as unknown };
}

/** A gRPC-Web call by hand, so the test sees which fields are HTTP headers and which sit in the trailer frame. */
async function grpcWebByHand(request: PeriodRequest, authorization: string) {
  const message = toBinary(GetTopAffiliateWagersByPeriodRequestSchema, toProtoRequest(request));
  const framed = new Uint8Array(5 + message.length);
  new DataView(framed.buffer).setUint32(1, message.length);
  framed.set(message, 5);
  const response = await fetch(`${server.baseUrl}${PROCEDURE}`, {
    method: "POST",
    headers: { authorization, "content-type": "application/grpc-web+proto", "x-grpc-web": "1" },
    body: framed,
  });
  const bytes = new Uint8Array(await response.arrayBuffer());
  const trailers: Record<string, string> = {};
  let messages = 0;
  for (let at = 0; at < bytes.length; ) {
    const flags = bytes[at] ?? 0;
    const length = new DataView(bytes.buffer, bytes.byteOffset + at + 1, 4).getUint32(0);
    const payload = bytes.subarray(at + 5, at + 5 + length);
    if ((flags & 0x80) !== 0) {
      for (const line of Buffer.from(payload).toString("utf8").split("\r\n")) {
        const colon = line.indexOf(":");
        if (colon > 0) trailers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
    } else {
      messages += 1;
    }
    at += 5 + length;
  }
  return { status: response.status, headers: recordOf(response.headers), trailers, messages };
}

beforeAll(async () => {
  // This file sends many bad keys on purpose; the per-address brake on failed
  // authentications (its own tests cover it) must not turn later calls into 429s.
  server = await startTestServer("rpc_protocols", {}, { failedAuthPolicy: { points: 10_000, windowSeconds: 60 } });
  db = server.database.db;
  defaultKey = (await createKey(db, "aff-rpc")).secret;
  const img = (name: string) => `https://img.example/${name}.png`;
  await addBoard(db, "aff-rpc", [
    // alice's third wager is before the period.
    ["u-alice", "alice", img("alice"), ["1.00000001", JAN_1_2025], ["2.5", FEB_1_2025 - 1], ["1000", JAN_1_2025 - 1]],
    ["u-bob", "bob", "", ["15000", JAN_1_2025 + 10], ["0.5", JAN_1_2025 + 20]],
    ["u-carl", "carl", img("carl"), ["3.50000001", JAN_1_2025 + 30]],
    ["u-dave", "dave", img("dave"), ["20", JAN_1_2025 + 40], ["30", JAN_1_2025 + 50]],
  ]);
  // Another affiliate's user.
  await addBoard(db, "aff-other", [["u-eve", "eve", "", ["99999", JAN_1_2025 + 60]]]);

  const base = server.baseUrl;
  const h2 = () => {
    const manager = new Http2SessionManager(base);
    sessions.push(manager);
    return manager;
  };
  grpcJs = grpcJsClient(server.port);
  clients = [
    connectEsClient(
      CONNECT_JSON_H1,
      createConnectTransport({ baseUrl: base, httpVersion: "1.1", useBinaryFormat: false }),
    ),
    connectEsClient(
      "Connect binary HTTP/1.1",
      createConnectTransport({ baseUrl: base, httpVersion: "1.1", useBinaryFormat: true }),
    ),
    connectEsClient(
      "Connect JSON h2c",
      createConnectTransport({ baseUrl: base, httpVersion: "2", useBinaryFormat: false, sessionManager: h2() }),
    ),
    connectEsClient(
      "Connect binary h2c",
      createConnectTransport({ baseUrl: base, httpVersion: "2", useBinaryFormat: true, sessionManager: h2() }),
    ),
    connectEsClient(GRPC_CONNECT_ES, createGrpcTransport({ baseUrl: base, sessionManager: h2() })),
    connectEsClient(GRPC_WEB, createGrpcWebTransport({ baseUrl: base, httpVersion: "1.1" })),
    grpcJs,
  ];
});

closeAfterAll(grpcClients, sessions, () => server);

describe("the same answer over every protocol on one port", () => {
  it("returns the full ranked list, every field exact, identical for all seven clients", async () => {
    for (const client of clients) {
      const result = await client.call(VALID, `Bearer ${defaultKey}`);
      expect({ client: client.name, code: result.code, message: result.message }).toEqual({
        client: client.name,
        code: 0,
        message: "",
      });
      expect(result.body, client.name).toEqual(EXPECTED);
    }
  });

  it("cuts the list at numUsers and returns an empty list for a period nobody wagered in", async () => {
    for (const client of clients) {
      const two = await client.call({ ...VALID, numUsers: 2 }, `Bearer ${defaultKey}`);
      expect(two.body, client.name).toEqual({ data: EXPECTED.data.slice(0, 2) });
      const empty = await client.call(
        { startTimestamp: FEB_1_2025, endTimestamp: FEB_1_2025 + 99, numUsers: 5 },
        `Bearer ${defaultKey}`,
      );
      expect(empty.body, client.name).toEqual({ data: [] });
    }
  });

  it("accepts a lowercase scheme and spaces around the key", async () => {
    for (const client of clients) {
      // grpc-js does not send a metadata value with trailing spaces at all (HTTP/2 forbids them).
      const trailing = client === grpcJs ? "" : "  ";
      const result = await client.call(VALID, `bearer   ${defaultKey}${trailing}`);
      expect(result.body, client.name).toEqual(EXPECTED);
    }
  });
});

describe("errors: same code and exact message on every protocol", () => {
  const cases: { name: string; request: PeriodRequest; message: string }[] = [
    {
      name: "num_users unset",
      request: { startTimestamp: JAN_1_2025, endTimestamp: FEB_1_2025 },
      message: "numUsers is required",
    },
    { name: "num_users 0", request: { ...VALID, numUsers: 0 }, message: "numUsers must be between 1 and 100" },
    { name: "num_users 101", request: { ...VALID, numUsers: 101 }, message: "numUsers must be between 1 and 100" },
    {
      name: "nothing set",
      request: {},
      message: "startTimestamp is required. endTimestamp is required. numUsers is required",
    },
    {
      name: "start before the earliest start, numUsers unset",
      request: { startTimestamp: 1733115599, endTimestamp: FEB_1_2025 },
      message: "startTimestamp must be 1733115600 (2 December 2024) or later. numUsers is required",
    },
    {
      name: "end before start",
      request: { startTimestamp: FEB_1_2025, endTimestamp: FEB_1_2025 - 1, numUsers: 10 },
      message: "endTimestamp must not be before startTimestamp (both are inclusive. Equal means one second)",
    },
    {
      name: "milliseconds",
      request: { startTimestamp: JAN_1_2025 * 1000, endTimestamp: FEB_1_2025 * 1000, numUsers: 10 },
      message:
        "startTimestamp looks like milliseconds. Send Unix seconds (divide by 1000). " +
        "endTimestamp looks like milliseconds. Send Unix seconds (divide by 1000)",
    },
    {
      name: "negative end",
      request: { startTimestamp: JAN_1_2025, endTimestamp: -1, numUsers: 10 },
      message: "endTimestamp must be a Unix timestamp in seconds (0 or more)",
    },
  ];

  for (const { name, request, message } of cases) {
    it(`invalid_argument: ${name}`, async () => {
      expect(message).not.toMatch(URI_RESERVED);
      for (const client of clients) {
        const result = await client.call(request, `Bearer ${defaultKey}`);
        expect({ client: client.name, code: result.code, message: result.message }).toEqual({
          client: client.name,
          code: Code.InvalidArgument,
          message,
        });
        expect(result.body).toBeUndefined();
      }
    });
  }

  it("unauthenticated without a key, with an unknown key and with junk, with WWW-Authenticate", async () => {
    const unknownKey = `tw_${"A".repeat(32)}`;
    for (const authorization of [undefined, `Bearer ${unknownKey}`, "Bearer not-a-key", `Basic ${defaultKey}`]) {
      for (const client of clients) {
        const result = await client.call(VALID, authorization);
        expect({ client: client.name, authorization, code: result.code, message: result.message }).toEqual({
          client: client.name,
          authorization,
          code: Code.Unauthenticated,
          message: UNAUTHENTICATED,
        });
        expect(meta(result, "www-authenticate"), client.name).toBe(WWW_AUTHENTICATE);
        // Refused before the rate limit: nothing was counted, so no rate-limit fields.
        expect(meta(result, "ratelimit"), client.name).toBeUndefined();
      }
    }
    expect(UNAUTHENTICATED).not.toMatch(URI_RESERVED);
  });

  it("grpc-js shows the unauthenticated status in trailers, www-authenticate included", async () => {
    const result = await grpcJs.call(VALID);
    expect(result.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(result.message).toBe(UNAUTHENTICATED);
    expect(result.trailers["www-authenticate"]).toBe(WWW_AUTHENTICATE);
  });

  it("unavailable with Retry-After when the database is unreachable, never internal", async () => {
    // A second app on its own port whose database does not answer (nothing listens on port 1).
    const unreachable = await openDatabase({ url: "mysql://root@127.0.0.1:1/tw_unreachable", poolSize: 1 });
    const app = createPublicApp(loadConfig({ DATABASE_URL: "mysql://root@127.0.0.1:1/tw_unreachable" }), unreachable);
    const down: OnePortServer = createOnePortServer(app.handler);
    const port = await listenOnFreePort(down.server);
    const downClient = grpcJsClient(port);
    const manager = new Http2SessionManager(`http://127.0.0.1:${port}`);
    const downClients = [
      connectEsClient(
        "Connect JSON HTTP/1.1",
        createConnectTransport({ baseUrl: `http://127.0.0.1:${port}`, httpVersion: "1.1" }),
      ),
      connectEsClient(
        "gRPC (connect-es)",
        createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}`, sessionManager: manager }),
      ),
      connectEsClient(
        "gRPC-Web HTTP/1.1",
        createGrpcWebTransport({ baseUrl: `http://127.0.0.1:${port}`, httpVersion: "1.1" }),
      ),
      downClient,
    ];
    try {
      const message = "the leaderboard database is unavailable right now. Retry shortly";
      expect(message).not.toMatch(URI_RESERVED);
      for (const client of downClients) {
        const result = await client.call(VALID, `Bearer tw_${"B".repeat(32)}`);
        expect({ client: client.name, code: result.code, message: result.message }).toEqual({
          client: client.name,
          code: Code.Unavailable,
          message,
        });
        expect(meta(result, "retry-after"), client.name).toBe("1");
      }
    } finally {
      downClient.client.close();
      manager.abort();
      await down.close(2_000);
      await unreachable.close();
    }
  });
});

describe("grpc-js users read our messages unescaped", () => {
  it("shows every message without percent escapes", async () => {
    const limited = (await createKey(db, "aff-rpc", { points: 1, windowSeconds: 60 })).secret;
    const calls: [PeriodRequest, string | undefined][] = [
      [VALID, undefined],
      [VALID, `Bearer tw_${"C".repeat(32)}`],
      [{}, `Bearer ${defaultKey}`],
      [{ startTimestamp: 1733115599, endTimestamp: FEB_1_2025, numUsers: 0 }, `Bearer ${defaultKey}`],
      [{ startTimestamp: FEB_1_2025, endTimestamp: JAN_1_2025, numUsers: 1 }, `Bearer ${defaultKey}`],
      [{ startTimestamp: -5, endTimestamp: JAN_1_2025 * 1000, numUsers: 1 }, `Bearer ${defaultKey}`],
      [VALID, `Bearer ${limited}`],
      [VALID, `Bearer ${limited}`], // over the limit
    ];
    const seen: string[] = [];
    for (const [request, authorization] of calls) {
      const viaGrpcJs = await grpcJs.call(request, authorization);
      const viaConnectEs = await clientNamed(GRPC_CONNECT_ES).call(request, authorization);
      if (viaGrpcJs.code === 0) continue;
      // connect-es decodes grpc-message with decodeURIComponent, grpc-js with decodeURI: they agree
      // only when the message has no URI-reserved characters.
      expect(viaGrpcJs.message).toBe(viaConnectEs.message);
      expect(viaGrpcJs.message).not.toMatch(/%[0-9A-Fa-f]{2}/);
      expect(viaGrpcJs.message).not.toMatch(URI_RESERVED);
      seen.push(viaGrpcJs.message);
    }
    expect(seen).toEqual([
      UNAUTHENTICATED,
      UNAUTHENTICATED,
      "startTimestamp is required. endTimestamp is required. numUsers is required",
      "startTimestamp must be 1733115600 (2 December 2024) or later. numUsers must be between 1 and 100",
      "endTimestamp must not be before startTimestamp (both are inclusive. Equal means one second)",
      "startTimestamp must be a Unix timestamp in seconds (0 or more). " +
        "endTimestamp looks like milliseconds. Send Unix seconds (divide by 1000)",
      expect.stringMatching(/^rate limit exceeded for this API key \(1 requests per 60 s\)\. Retry in \d+ s$/),
    ]);
  });
});

describe("grpc-js users read the failed-authentication brake unescaped", () => {
  it("says too many bad keys from this address, with Retry-After, without percent escapes", async () => {
    const app = createPublicApp(server.config, db, { failedAuthPolicy: { points: 1, windowSeconds: 60 } });
    await app.keysLoaded;
    const braked: OnePortServer = createOnePortServer(app.handler);
    const client = grpcJsClient(await listenOnFreePort(braked.server));
    try {
      const bad = `Bearer tw_${"D".repeat(32)}`;
      expect((await client.call(VALID, bad)).code).toBe(grpc.status.UNAUTHENTICATED);
      expect((await client.call(VALID, bad)).code).toBe(grpc.status.UNAUTHENTICATED);
      const braking = await client.call(VALID, bad);
      expect(braking.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      const retryAfter = braking.trailers["retry-after"];
      expect(retryAfter).toMatch(/^\d+$/);
      expect(braking.message).toBe(
        `too many requests with invalid API keys from this address. Retry in ${retryAfter} s`,
      );
      expect(braking.message).not.toMatch(URI_RESERVED);
    } finally {
      client.client.close();
      app.stopServing();
      await braked.close(2_000);
    }
  });
});

describe("rate limits over RPC", () => {
  it("Connect: RateLimit fields as response headers on success and on resource_exhausted, with Retry-After", async () => {
    for (const client of clients.filter((c) => c.name.startsWith("Connect "))) {
      const key = (await createKey(db, "aff-rpc", { points: 2, windowSeconds: 60 })).secret;
      const first = await client.call(VALID, `Bearer ${key}`);
      expect(first.code, client.name).toBe(0);
      expectRateLimit(first.headers, 2, 1);
      expect(first.trailers, client.name).toEqual({});
      const second = await client.call(VALID, `Bearer ${key}`);
      expectRateLimit(second.headers, 2, 0);
      const refused = await client.call(VALID, `Bearer ${key}`);
      expect(refused.code, client.name).toBe(Code.ResourceExhausted);
      const reset = expectRateLimit(refused.headers, 2, 0);
      expect(refused.headers["retry-after"]).toBe(String(reset));
      expect(refused.message).toBe(`rate limit exceeded for this API key (2 requests per 60 s). Retry in ${reset} s`);
    }
  });

  it("Connect: the refusal is HTTP 429 with the fields as headers and a Connect error body", async () => {
    const key = (await createKey(db, "aff-rpc", { points: 1, windowSeconds: 60 })).secret;
    const send = () =>
      fetch(`${server.baseUrl}${PROCEDURE}`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(VALID),
      });
    const ok = await send();
    expect(ok.status).toBe(200);
    expectRateLimit(recordOf(ok.headers), 1, 0);
    expect(await ok.json()).toEqual(EXPECTED);
    const refused = await send();
    expect(refused.status).toBe(429);
    const headers = recordOf(refused.headers);
    const reset = expectRateLimit(headers, 1, 0);
    expect(headers["retry-after"]).toBe(String(reset));
    expect(await refused.json()).toEqual({
      code: "resource_exhausted",
      message: `rate limit exceeded for this API key (1 requests per 60 s). Retry in ${reset} s`,
      details: connectDetails(errorInfo("RATE_LIMITED"), retryInfo(reset)),
    });
  });

  it("gRPC (grpc-js): fields in initial metadata on success, in trailers on resource_exhausted", async () => {
    const key = (await createKey(db, "aff-rpc", { points: 2, windowSeconds: 60 })).secret;
    const first = await grpcJs.call(VALID, `Bearer ${key}`);
    expect(first.code).toBe(grpc.status.OK);
    expectRateLimit(first.headers, 2, 1);
    expect(first.trailers).toEqual({});
    // A call that fails validation after admission was counted; its fields came with the initial metadata.
    const invalid = await grpcJs.call({ ...VALID, numUsers: 0 }, `Bearer ${key}`);
    expect(invalid.code).toBe(grpc.status.INVALID_ARGUMENT);
    expectRateLimit(invalid.headers, 2, 0);
    const refused = await grpcJs.call(VALID, `Bearer ${key}`);
    expect(refused.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    const reset = expectRateLimit(refused.trailers, 2, 0);
    expect(refused.trailers["retry-after"]).toBe(String(reset));
    expect(refused.headers.ratelimit).toBeUndefined();
    expect(refused.headers["retry-after"]).toBeUndefined();
    expect(refused.message).toBe(`rate limit exceeded for this API key (2 requests per 60 s). Retry in ${reset} s`);
  });

  it("gRPC (connect-es): fields in initial metadata on success, with the error on resource_exhausted", async () => {
    const client = clientNamed(GRPC_CONNECT_ES);
    const key = (await createKey(db, "aff-rpc", { points: 1, windowSeconds: 60 })).secret;
    const ok = await client.call(VALID, `Bearer ${key}`);
    expectRateLimit(ok.headers, 1, 0);
    expect(ok.trailers).toEqual({ "grpc-status": "0" });
    const refused = await client.call(VALID, `Bearer ${key}`);
    expect(refused.code).toBe(Code.ResourceExhausted);
    const reset = expectRateLimit(refused.headers, 1, 0);
    expect(refused.headers["retry-after"]).toBe(String(reset));
  });

  it("gRPC-Web: fields as HTTP headers on success, in the trailer frame on resource_exhausted", async () => {
    const key = (await createKey(db, "aff-rpc", { points: 1, windowSeconds: 60 })).secret;
    const ok = await grpcWebByHand(VALID, `Bearer ${key}`);
    expect(ok.status).toBe(200);
    expect(ok.messages).toBe(1);
    expect(ok.trailers).toEqual({ "grpc-status": "0" });
    expectRateLimit(ok.headers, 1, 0);
    const refused = await grpcWebByHand(VALID, `Bearer ${key}`);
    expect(refused.status).toBe(200);
    expect(refused.messages).toBe(0);
    expect(refused.headers.ratelimit).toBeUndefined();
    expect(refused.headers["retry-after"]).toBeUndefined();
    const reset = expectRateLimit(refused.trailers, 1, 0);
    expect(refused.trailers).toEqual({
      "grpc-status": String(Code.ResourceExhausted),
      "grpc-message": encodeURIComponent(
        `rate limit exceeded for this API key (1 requests per 60 s). Retry in ${reset} s`,
      ),
      "ratelimit-policy": '"key";q=1;w=60',
      ratelimit: `"key";r=0;t=${reset}`,
      "retry-after": String(reset),
      "grpc-status-details-bin": statusDetailsBin(
        Code.ResourceExhausted,
        `rate limit exceeded for this API key (1 requests per 60 s). Retry in ${reset} s`,
        errorInfo("RATE_LIMITED"),
        retryInfo(reset),
      ),
    });
    // connect-es surfaces the same over its gRPC-Web transport.
    const viaClient = await clientNamed(GRPC_WEB).call(VALID, `Bearer ${key}`);
    expect(viaClient.code).toBe(Code.ResourceExhausted);
    expect(meta(viaClient, "retry-after")).toMatch(/^\d+$/);
  });

  it("counts each call once across REST and every RPC protocol: exactly N successes, then resource_exhausted", async () => {
    // One REST call plus one per RPC client (Connect x4, gRPC via connect-es, gRPC-Web, grpc-js).
    const points = 1 + clients.length;
    expect(points).toBe(8);
    const key = (await createKey(db, "aff-rpc", { points, windowSeconds: 60 })).secret;
    const auth = `Bearer ${key}`;
    const remaining: number[] = [];
    const rest = await restCall(VALID, auth);
    expect(rest.status).toBe(200);
    expect(rest.body).toEqual({
      data: EXPECTED.data.map(({ username, avatar, totalWagered }) => ({ username, avatar, totalWagered })),
      errors: null,
    });
    remaining.push(Number(/r=(\d+)/.exec(rest.headers.ratelimit ?? "")?.[1]));
    for (const client of clients) {
      const result = await client.call(VALID, auth);
      expect({ client: client.name, code: result.code }).toEqual({ client: client.name, code: 0 });
      expect(result.body).toEqual(EXPECTED);
      remaining.push(Number(/r=(\d+)/.exec(meta(result, "ratelimit") ?? "")?.[1]));
    }
    expect(remaining).toEqual([7, 6, 5, 4, 3, 2, 1, 0]);
    // The 9th call, whatever the protocol, is refused.
    for (const client of clients) {
      const refused = await client.call(VALID, auth);
      expect({ client: client.name, code: refused.code }).toEqual({
        client: client.name,
        code: Code.ResourceExhausted,
      });
      expect(meta(refused, "retry-after"), client.name).toMatch(/^\d+$/);
    }
    const restRefused = await restCall(VALID, auth);
    expect(restRefused.status).toBe(429);
    expect(restRefused.headers["retry-after"]).toMatch(/^\d+$/);
    expect(restRefused.body).toEqual({
      data: null,
      errors: [
        {
          code: "resource_exhausted",
          message: `rate limit exceeded for this API key (8 requests per 60 s). Retry in ${restRefused.headers["retry-after"]} s`,
        },
      ],
    });
  });

  it("counts invalid calls too, and never counts unauthenticated ones", async () => {
    const key = (await createKey(db, "aff-rpc", { points: 2, windowSeconds: 60 })).secret;
    const auth = `Bearer ${key}`;
    // Unauthenticated calls (no key) on every protocol cost this key nothing.
    for (const client of clients) expect((await client.call(VALID)).code).toBe(Code.Unauthenticated);
    const invalidRpc = await grpcJs.call({ startTimestamp: JAN_1_2025, endTimestamp: FEB_1_2025 }, auth);
    expect(invalidRpc.code).toBe(Code.InvalidArgument);
    expectRateLimit(invalidRpc.headers, 2, 1);
    const invalidRest = await restCall({ startTimestamp: JAN_1_2025, endTimestamp: FEB_1_2025 }, auth);
    expect(invalidRest.status).toBe(400);
    expectRateLimit(invalidRest.headers, 2, 0);
    const refused = await clientNamed(CONNECT_JSON_H1).call(VALID, auth);
    expect(refused.code).toBe(Code.ResourceExhausted);
  });
});
