/**
 * Signed boards over RPC (issue 36): the unary GetTopAffiliateWagersByPeriod and the Watch stream with
 * `signed: true`, on every protocol through connect-es (Connect binary and JSON over HTTP/1.1 and HTTP/2, gRPC,
 * gRPC-Web binary and JSON) and through @grpc/grpc-js with the .proto loaded at run time. The signature verifies
 * with jose against the live JWK Set the server publishes (`typ` live-board+jws; the results' JWK Set refuses it)
 * and covers exactly the version's entries; it is the one REST
 * answers for the same board; 200 watchers of one board cost one signature per version
 * (topwagers_board_signatures_total); without the field, the messages carry no `signed` and the bytes are those
 * of a request that never heard of it.
 */
import { type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  GetTopAffiliateWagersByPeriodResponseSchema,
  TopWagersService,
  type WatchTopAffiliateWagersByPeriodRequestSchema,
  type WatchTopAffiliateWagersByPeriodResponse,
} from "../../gen/topwagers/v1/top_wagers_pb.js";
import type { ActiveSigningKey } from "../../src/ports/signing.js";
import { grpcJsMethod } from "../support/calls.js";
import { addBoard, addWagers, createKey, wager } from "../support/fixtures.js";
import { metricSample } from "../support/live.js";
import { whenDefined } from "../support/polling.js";
import { restCall } from "../support/rest.js";
import {
  ISSUER,
  liveKid,
  sealedSigningKey,
  useSigningServer,
  verifiedWithServedKeys,
} from "../support/signed-races.js";

const server = useSigningServer("signed_boards_rpc", 1_000);
const AFFILIATE = "sbr-aff";
const START = 1_793_491_200;
const END = 1_796_083_199;
const WATCHERS = Number(process.env.SBR_WATCHERS ?? 200);
const SIGNATURES = "topwagers_board_signatures_total";

let key = "";
let signingKid = "";
const sessions: Http2SessionManager[] = [];
const grpcClients: grpc.Client[] = [];
const aborts: AbortController[] = [];

interface SignedParts {
  readonly payload: string;
  readonly kid: string;
  readonly jws: string;
}

beforeAll(async () => {
  const made: ActiveSigningKey = await sealedSigningKey(server.database.db, 1_764_000_000, 1_764_000_001);
  signingKid = made.kid;
  key = (await createKey(server.database.db, AFFILIATE)).secret;
  await addBoard(server.database.db, AFFILIATE, [
    ["sbr-ann", "ann", "https://img.example/ann.png", ["1500.25", START + 10]],
    ["sbr-bo", "bo", "", ["700", START + 20]],
    ["sbr-cy", "cy", "https://img.example/cy.png", ["0.00000001", START + 30]],
  ]);
});

afterAll(() => {
  for (const abort of aborts) abort.abort();
  for (const client of grpcClients) client.close();
  for (const session of sessions) session.abort();
});

/** Every connect-es protocol and codec, as [name, transport]. */
function transports(): [string, Transport][] {
  const baseUrl = server.baseUrl;
  const h2 = () => {
    const manager = new Http2SessionManager(baseUrl);
    sessions.push(manager);
    return manager;
  };
  return [
    ["Connect binary HTTP/1.1", createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true })],
    ["Connect JSON HTTP/1.1", createConnectTransport({ baseUrl, httpVersion: "1.1" })],
    [
      "Connect binary HTTP/2",
      createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true, sessionManager: h2() }),
    ],
    ["Connect JSON HTTP/2", createConnectTransport({ baseUrl, httpVersion: "2", sessionManager: h2() })],
    ["gRPC", createGrpcTransport({ baseUrl, sessionManager: h2() })],
    ["gRPC-Web binary", createGrpcWebTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true })],
    ["gRPC-Web JSON", createGrpcWebTransport({ baseUrl, httpVersion: "1.1" })],
  ];
}

function grpcJsClient(): grpc.Client {
  const client = new grpc.Client(server.baseUrl.replace("http://", ""), grpc.credentials.createInsecure());
  grpcClients.push(client);
  return client;
}

/** Verifies a detached signature over the JSON text `payload` with the served live JWKS; the payload it covers. */
function verified(signed: SignedParts): Promise<unknown> {
  return verifiedWithServedKeys(server.baseUrl, { ...signed, payload: JSON.parse(signed.payload) }, "live-board+jws");
}

/** The entries of a signed payload, as the board holds them (money as exact decimal strings). */
function payloadEntries(rows: [string, string, string][]) {
  return rows.map(([username, avatar, total], i) => ({
    rank: i + 1,
    username,
    avatar: avatar === "" ? server.config.defaultAvatarUrl : avatar,
    totalWagered: total,
    weightedWagered: total,
  }));
}

const auth = () => ({ headers: { authorization: `Bearer ${key}` } });

/** One watch call's messages as they arrive (boards and heartbeats), until aborted. */
class Watch {
  readonly messages: WatchTopAffiliateWagersByPeriodResponse[] = [];
  failure: unknown;

  constructor(transport: Transport, request: MessageInitShape<typeof WatchTopAffiliateWagersByPeriodRequestSchema>) {
    const abort = new AbortController();
    aborts.push(abort);
    const client = createClient(TopWagersService, transport);
    void (async () => {
      try {
        for await (const message of client.watchTopAffiliateWagersByPeriod(request, {
          ...auth(),
          signal: abort.signal,
        }))
          this.messages.push(message);
      } catch (reason) {
        if (!abort.signal.aborted) this.failure = reason;
      }
    })();
  }

  get boards(): WatchTopAffiliateWagersByPeriodResponse[] {
    return this.messages.filter((message) => !message.heartbeat);
  }
}

/** Waits until `ready` answers something other than undefined (checked every 20 ms), at most `ms`. */
const until = <T>(what: string, ready: () => T | undefined, ms = 20_000) => whenDefined(what, ready, ms);

describe("signed boards over RPC", () => {
  it("the unary call signs on every protocol with the signature REST gives; without the field, nothing changes", async () => {
    // A period of its own: no other test's board shares its signature.
    const period = { startTimestamp: BigInt(START), endTimestamp: BigInt(END - 1), numUsers: 2 };
    const before = await metricSample(server.app.metrics, SIGNATURES);
    const answers = [];
    for (const [name, transport] of transports()) {
      const client = createClient(TopWagersService, transport);
      const signed = await client.getTopAffiliateWagersByPeriod({ ...period, signed: true }, auth());
      const plain = await client.getTopAffiliateWagersByPeriod(period, auth());
      const unsigned = await client.getTopAffiliateWagersByPeriod({ ...period, signed: false }, auth());
      expect(signed.signed, name).toBeDefined();
      expect(plain.signed, name).toBeUndefined();
      // What a caller that does not ask receives is the message without the field, byte for byte.
      const plainBytes = toBinary(GetTopAffiliateWagersByPeriodResponseSchema, plain);
      expect(toBinary(GetTopAffiliateWagersByPeriodResponseSchema, unsigned), name).toEqual(plainBytes);
      expect(signed.data, name).toEqual(plain.data);
      answers.push(signed);
    }
    // On the wire (Connect JSON): without the field, or with it false, the text a caller always got.
    const connectJson = (body: unknown) =>
      fetch(`${server.baseUrl}/topwagers.v1.TopWagersService/GetTopAffiliateWagersByPeriod`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      }).then((response) => response.text());
    const jsonPeriod = { startTimestamp: String(START), endTimestamp: String(END - 1), numUsers: 2 };
    const plainText = await connectJson(jsonPeriod);
    expect(plainText).not.toContain("signed");
    expect(JSON.parse(plainText).data.map((e: { username: string }) => e.username)).toEqual(["ann", "bo"]);
    expect(await connectJson({ ...jsonPeriod, signed: false })).toBe(plainText);
    const signedText = JSON.parse(await connectJson({ ...jsonPeriod, signed: true }));
    expect(Object.keys(signedText)).toEqual(["data", "signed"]);

    const first = answers[0]?.signed as SignedParts;
    for (const answer of answers) expect(answer.signed?.jws).toBe(first.jws);
    expect(answers.every((answer) => answer.signed?.payload === first.payload)).toBe(true);
    // The live key the server made for the fleet, never the results' key.
    expect(first.kid).toBe(await liveKid(server.database.db));
    expect(first.kid).not.toBe(signingKid);
    const payload = (await verified(first)) as Record<string, unknown>;
    expect(payload).toEqual({
      type: "topwagers.live-board.v1",
      affiliate: AFFILIATE,
      period: { start: START, end: END - 1 },
      rankBy: "wagered",
      version: payload.version,
      entries: payloadEntries([
        ["ann", "https://img.example/ann.png", "1500.25"],
        ["bo", "", "700"],
      ]),
      signedAt: payload.signedAt,
      iss: ISSUER,
    });
    expect(typeof payload.version).toBe("string");
    expect(Math.abs((payload.signedAt as number) - Math.floor(Date.now() / 1000))).toBeLessThanOrEqual(60);
    // Another entry list does not verify with this signature.
    const fewer = { ...payload, entries: (payload.entries as unknown[]).slice(1) };
    await expect(verified({ ...first, payload: JSON.stringify(fewer) })).rejects.toThrow(
      /signature verification failed/,
    );

    // @grpc/grpc-js, the field read from the .proto at run time.
    const method = grpcJsMethod("GetTopAffiliateWagersByPeriod");
    const metadata = new grpc.Metadata();
    metadata.set("authorization", `Bearer ${key}`);
    const grpcJs = await new Promise<Record<string, unknown>>((resolve, reject) =>
      grpcJsClient().makeUnaryRequest(
        method.path,
        method.requestSerialize,
        method.responseDeserialize,
        { startTimestamp: String(START), endTimestamp: String(END - 1), numUsers: 2, signed: true },
        metadata,
        (error, value) => (error ? reject(error) : resolve(value as Record<string, unknown>)),
      ),
    );
    expect(grpcJs.signed).toEqual({ payload: first.payload, kid: first.kid, jws: first.jws });

    // REST's "signed": true for the same board answers the same signature: one signing for every wire form.
    const rest = await restCall(`${server.baseUrl}/top-affiliate-wagers-by-period`, {
      key,
      body: { startTimestamp: START, endTimestamp: END - 1, numUsers: 2, signed: true },
    });
    const restSigned = (rest.json as { signed: { payload: unknown; kid: string; jws: string } }).signed;
    expect(restSigned).toEqual({ payload: JSON.parse(first.payload), kid: first.kid, jws: first.jws });
    expect(await metricSample(server.app.metrics, SIGNATURES)).toBe(before + 1);
  }, 60_000);

  it(`${WATCHERS} watchers on every protocol cost one signature per version, each covering exactly its entries`, async () => {
    const request = { startTimestamp: BigInt(START), endTimestamp: BigInt(END), numUsers: 3 };
    const before = await metricSample(server.app.metrics, SIGNATURES);
    const protocols = transports();
    const watches = Array.from({ length: WATCHERS }, (_, i) => {
      const [name, transport] = protocols[i % protocols.length] as [string, Transport];
      return { name, watch: new Watch(transport, { ...request, signed: true }) };
    });
    const plain = new Watch(protocols[0]?.[1] as Transport, request);
    // @grpc/grpc-js: a signed watcher, the proto read at run time.
    const method = grpcJsMethod("WatchTopAffiliateWagersByPeriod");
    const metadata = new grpc.Metadata();
    metadata.set("authorization", `Bearer ${key}`);
    const grpcJsBoards: Record<string, unknown>[] = [];
    const call = grpcJsClient().makeServerStreamRequest(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      { startTimestamp: String(START), endTimestamp: String(END), numUsers: 3, signed: true },
      metadata,
    );
    call.on("data", (message: Record<string, unknown>) => {
      if (message.heartbeat !== true) grpcJsBoards.push(message);
    });
    call.on("error", () => undefined);

    const boardsOf = (n: number) =>
      until(`board ${n} on every watcher`, () =>
        watches.every(({ watch }) => watch.boards.length >= n) && grpcJsBoards.length >= n && plain.boards.length >= n
          ? true
          : undefined,
      );
    await boardsOf(1);
    for (const { name, watch } of watches) expect(watch.failure, name).toBeUndefined();
    const first = watches[0]?.watch.boards[0] as WatchTopAffiliateWagersByPeriodResponse;
    const firstSigned = first.signed as SignedParts;
    for (const { name, watch } of watches) {
      const board = watch.boards[0];
      expect([board?.version, board?.signed?.jws, board?.signed?.payload], name).toEqual([
        first.version,
        firstSigned.jws,
        firstSigned.payload,
      ]);
      expect(board?.data, name).toEqual(first.data);
    }
    const payload = (await verified(firstSigned)) as Record<string, unknown>;
    expect(payload).toEqual({
      type: "topwagers.live-board.v1",
      affiliate: AFFILIATE,
      period: { start: START, end: END },
      rankBy: "wagered",
      version: first.version,
      entries: payloadEntries([
        ["ann", "https://img.example/ann.png", "1500.25"],
        ["bo", "", "700"],
        ["cy", "https://img.example/cy.png", "0.00000001"],
      ]),
      signedAt: payload.signedAt,
      iss: ISSUER,
    });
    expect(first.data.map((e) => [e.rank, e.username, e.totalWageredDecimal])).toEqual([
      [1, "ann", "1500.25"],
      [2, "bo", "700"],
      [3, "cy", "0.00000001"],
    ]);
    expect(grpcJsBoards[0]?.signed).toEqual({
      payload: firstSigned.payload,
      kid: firstSigned.kid,
      jws: firstSigned.jws,
    });
    // The watcher that did not ask: the same board, no signature.
    expect(plain.boards[0]?.version).toBe(first.version);
    expect(plain.boards[0]?.signed).toBeUndefined();
    expect(await metricSample(server.app.metrics, SIGNATURES)).toBe(before + 1);

    // The next version: signed once more, whoever watches it.
    await addWagers(server.database.db, [wager("sbr-bo", "1000", START + 40)]);
    await boardsOf(2);
    const second = watches[0]?.watch.boards[1] as WatchTopAffiliateWagersByPeriodResponse;
    expect(second.version).not.toBe(first.version);
    for (const { name, watch } of watches) expect(watch.boards[1]?.signed?.jws, name).toBe(second.signed?.jws);
    const secondPayload = (await verified(second.signed as SignedParts)) as { version: string; entries: unknown };
    expect(secondPayload.version).toBe(second.version);
    expect(secondPayload.entries).toEqual(
      payloadEntries([
        ["bo", "", "1700"],
        ["ann", "https://img.example/ann.png", "1500.25"],
        ["cy", "https://img.example/cy.png", "0.00000001"],
      ]),
    );
    expect((grpcJsBoards[1]?.signed as SignedParts | undefined)?.jws).toBe(second.signed?.jws);
    expect(plain.boards[1]?.signed).toBeUndefined();
    expect(await metricSample(server.app.metrics, SIGNATURES)).toBe(before + 2);
    call.cancel();
  }, 120_000);
});
