/**
 * The limits of live streams, with connect-es clients on several loopback
 * addresses (127.0.0.1, .2, .3): per client address and per key
 * (resource_exhausted with RetryInfo and Retry-After), per instance
 * (unavailable: go to another instance); a closed stream frees its place; a
 * stream's deadline ends it; a viewer that stops reading is disconnected
 * while another keeps receiving.
 */
import http2 from "node:http2";
import net from "node:net";
import { toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import {
  TopWagersService,
  WatchTopAffiliateWagersByPeriodRequestSchema,
} from "../../gen/topwagers/v1/top_wagers_pb.js";
import { revokeApiKey } from "../../src/keys/sql/api-keys.js";
import { JAN_1_2025, JANUARY } from "../support/dates.js";
import { createKey } from "../support/fixtures.js";
import { TEST_INGEST_TOKEN, useIngestServers } from "../support/ingest.js";
import { connectEsWatch, metricSample, type OpenStream, RawHttp1Stream, watchRequest } from "../support/live.js";

const servers = useIngestServers("live_limits", {
  INGEST_TOKEN: TEST_INGEST_TOKEN,
  STREAM_LIMIT_PER_KEY: "4",
  STREAM_LIMIT_PER_ADDRESS: "3",
  STREAM_LIMIT: "5",
});
let keyA = "";
let keyB = "";
const sessions: Http2SessionManager[] = [];
const opened: { close(): void; name?: string }[] = [];

/** A Connect stream over HTTP/1.1 from the given loopback address. */
function from(address: string, key: string, numUsers = 10): OpenStream {
  const stream = connectEsWatch(
    `from ${address}`,
    createConnectTransport({
      baseUrl: servers.publicUrl,
      httpVersion: "1.1",
      useBinaryFormat: true,
      nodeOptions: { localAddress: address },
    }),
    key,
    { ...JANUARY, numUsers },
  );
  opened.push(stream);
  return stream;
}

const metric = (series: string) => metricSample(servers.app.metrics, series);

beforeAll(async () => {
  keyA = (await createKey(servers.database.db, "aff-lim-a")).secret;
  keyB = (await createKey(servers.database.db, "aff-lim-b")).secret;
  const avatar = (i: number) => `https://img.example/${String(i).padStart(4, "0")}/${"a".repeat(1_990)}.png`;
  await servers.client("grpc").upsertUsers({
    users: [
      { id: "lim-a1", affiliateId: "aff-lim-a", username: "a one", avatar: "" },
      { id: "lim-b1", affiliateId: "aff-lim-b", username: "b one", avatar: "" },
      // A hundred users with 2 KB avatars: each board of aff-lim-c is about 220 KB.
      ...Array.from({ length: 100 }, (_, i) => ({
        id: `lim-c${i}`,
        affiliateId: "aff-lim-c",
        username: `big board user ${i}`,
        avatar: avatar(i),
      })),
    ],
  });
  await servers.client("grpc").recordWagers({
    wagers: [
      { id: "lim-w1", userId: "lim-a1", amount: "10", placedAt: BigInt(JAN_1_2025 + 60) },
      { id: "lim-w2", userId: "lim-b1", amount: "20", placedAt: BigInt(JAN_1_2025 + 60) },
      ...Array.from({ length: 100 }, (_, i) => ({
        id: `lim-cw${i}`,
        userId: `lim-c${i}`,
        amount: `${1000 + i}`,
        placedAt: BigInt(JAN_1_2025 + 60),
      })),
    ],
  });
}, 60_000);

afterAll(async () => {
  for (const stream of opened) stream.close();
  for (const session of sessions) session.abort();
});

function envelope(payload: Uint8Array): Buffer {
  const frame = Buffer.alloc(5 + payload.length);
  frame.writeUInt32BE(payload.length, 1);
  frame.set(payload, 5);
  return frame;
}

function splitFrames(bytes: Buffer): { flags: number; text: string }[] {
  const frames: { flags: number; text: string }[] = [];
  for (let at = 0; at + 5 <= bytes.length; ) {
    const length = bytes.readUInt32BE(at + 1);
    frames.push({ flags: bytes[at] ?? 0, text: bytes.subarray(at + 5, at + 5 + length).toString("utf8") });
    at += 5 + length;
  }
  return frames;
}

/** The SSE stream refused by a limit: the POST's JSON envelope, with Retry-After. */
async function expectSseRefusal(
  address: string,
  key: string,
  status: number,
  item: { code: string; message: string },
  retryAfter: string,
) {
  const stream = new RawHttp1Stream(
    Number(new URL(servers.publicUrl).port),
    `/top-affiliate-wagers-by-period/stream?startTimestamp=${JANUARY.startTimestamp}&endTimestamp=${JANUARY.endTimestamp}&numUsers=10`,
    { authorization: `Bearer ${key}` },
    { localAddress: address },
  );
  opened.push(stream);
  const reply = await stream.until((r) => (r.ended ? r : undefined));
  expect(reply.status).toBe(status);
  expect(reply.headers["retry-after"]).toBe(retryAfter);
  expect(reply.headers["content-type"]).toBe("application/json; charset=utf-8");
  expect(JSON.parse(reply.body)).toEqual({ data: null, errors: [item] });
}

function expectRefusal(
  error: { code: number; message: string; metadata: Record<string, string> } | null,
  code: Code,
  message: string,
  retryAfter: number,
) {
  expect(error?.code).toBe(code);
  expect(error?.message).toBe(message);
  expect(error?.metadata["retry-after"]).toBe(String(retryAfter));
}

describe("stream limits", () => {
  it("refuses a client address's stream over STREAM_LIMIT_PER_ADDRESS, then the key's over STREAM_LIMIT_PER_KEY, then the instance's over STREAM_LIMIT", async () => {
    expect(await metric('topwagers_stream_disconnects_total{reason="limit"}')).toBe(0);
    const first = [from("127.0.0.1", keyA), from("127.0.0.1", keyA), from("127.0.0.1", keyA)];
    await Promise.all(first.map((s) => s.collected.board(1)));
    const overAddress = from("127.0.0.1", keyA);
    const { error: addressError } = await overAddress.collected.ending();
    expectRefusal(addressError, Code.ResourceExhausted, "this client address has 3 streams open, the most allowed", 5);
    await expectSseRefusal(
      "127.0.0.1",
      keyA,
      429,
      {
        code: "resource_exhausted",
        message: "this client address has 3 streams open, the most allowed",
      },
      "5",
    );

    const fourth = from("127.0.0.2", keyA);
    await fourth.collected.board(1);
    const { error: keyError } = await from("127.0.0.2", keyA).collected.ending();
    expectRefusal(keyError, Code.ResourceExhausted, "this API key has 4 streams open, the most allowed", 5);

    const fifth = from("127.0.0.3", keyB);
    await fifth.collected.board(1);
    const { error: instanceError } = await from("127.0.0.3", keyB).collected.ending();
    expectRefusal(
      instanceError,
      Code.Unavailable,
      "this instance holds its maximum of 5 streams. Connect to another instance",
      1,
    );
    await expectSseRefusal(
      "127.0.0.3",
      keyB,
      503,
      {
        code: "unavailable",
        message: "this instance holds its maximum of 5 streams. Connect to another instance",
      },
      "1",
    );
    expect(await metric('topwagers_stream_disconnects_total{reason="limit"}')).toBe(5);
    expect(await metric('topwagers_streams{protocol="connect"}')).toBe(5);

    // A closed stream frees its place at once.
    first[0]?.close();
    for (let i = 0; i < 40 && (await metric('topwagers_streams{protocol="connect"}')) !== 4; i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const again = from("127.0.0.1", keyA);
    expect((await again.collected.board(1)).data.map((e) => e.username)).toEqual(["a one"]);
    expect(await metric('topwagers_stream_disconnects_total{reason="client"}')).toBe(1);
  });

  it("carries google.rpc.RetryInfo on a refusal, as the unary call's rate limit does", async () => {
    // The instance is full (5): free a place, so the address limit (3 from 127.0.0.1) is the one that refuses.
    opened.find((s) => s.name === "from 127.0.0.3")?.close();
    for (let i = 0; i < 40 && (await metric('topwagers_streams{protocol="connect"}')) !== 4; i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }

    const client = createClient(
      TopWagersService,
      createConnectTransport({
        baseUrl: servers.publicUrl,
        httpVersion: "1.1",
        nodeOptions: { localAddress: "127.0.0.1" },
      }),
    );
    const error = await (async () => {
      for await (const _ of client.watchTopAffiliateWagersByPeriod(watchRequest(JANUARY), {
        headers: { authorization: `Bearer ${keyA}` },
      }));
    })().catch((e: unknown) => ConnectError.from(e));
    expect(error?.code).toBe(Code.ResourceExhausted);
    expect(error?.findDetails(RetryInfoSchema).map((d) => d.retryDelay?.seconds)).toEqual([5n]);
  });
});

describe("stream ends", () => {
  it("ends a stream with deadline_exceeded when its deadline (connect-timeout-ms) passes", async () => {
    for (const stream of opened) stream.close();
    await new Promise((resolve) => setTimeout(resolve, 200));
    const started = performance.now();
    const response = await fetch(`${servers.publicUrl}/topwagers.v1.TopWagersService/WatchTopAffiliateWagersByPeriod`, {
      method: "POST",
      headers: {
        "content-type": "application/connect+json",
        "connect-timeout-ms": "700",
        authorization: `Bearer ${keyB}`,
      },
      body: envelope(Buffer.from(JSON.stringify({ ...JANUARY, numUsers: 10 }))),
    });
    const frames = splitFrames(Buffer.from(await response.arrayBuffer()));
    expect(performance.now() - started).toBeGreaterThan(650);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/connect+json");
    expect(frames.map((f) => f.flags)).toEqual([0, 2]);
    expect(JSON.parse(frames[0]?.text ?? "")).toMatchObject({
      data: [{ username: "b one", totalWageredDecimal: "20" }],
    });
    expect(JSON.parse(frames[1]?.text ?? "").error).toMatchObject({
      code: "deadline_exceeded",
      message: "the stream's deadline passed",
    });
  });

  it("ends the streams of a revoked key at once: RPC with unauthenticated, SSE by ending its body", async () => {
    const revoked = await createKey(servers.database.db, "aff-lim-a");
    const kept = await createKey(servers.database.db, "aff-lim-a");
    const rpc = from("127.0.0.6", revoked.secret);
    const other = from("127.0.0.6", kept.secret);
    const sse = new RawHttp1Stream(
      Number(new URL(servers.publicUrl).port),
      `/top-affiliate-wagers-by-period/stream?startTimestamp=${JANUARY.startTimestamp}&endTimestamp=${JANUARY.endTimestamp}&numUsers=10`,
      { authorization: `Bearer ${revoked.secret}` },
      { localAddress: "127.0.0.6" },
    );
    opened.push(sse);
    await Promise.all([rpc.collected.board(1), other.collected.board(1)]);
    await sse.until((r) => (r.events.some((e) => e.event === "board") ? true : undefined));
    const since = performance.now();
    expect(await revokeApiKey(servers.database.db.write, revoked.id)).toBe(true);
    const { error } = await rpc.collected.ending(3_000);
    expect({ code: error?.code, message: error?.message }).toEqual({
      code: Code.Unauthenticated,
      message: "the API key of this stream was revoked or has expired",
    });
    const reply = await sse.until((r) => (r.ended ? r : undefined), 3_000);
    expect(reply.complete).toBe(true);
    expect(performance.now() - since).toBeLessThan(1_500);
    expect(other.collected.ended).toBeUndefined();
    expect(await metric('topwagers_stream_disconnects_total{reason="revoked"}')).toBe(2);
    other.close();
  });

  it("disconnects a viewer that stops reading while another keeps receiving", async () => {
    const bigKey = (await createKey(servers.database.db, "aff-lim-c")).secret;
    const manager = new Http2SessionManager(servers.publicUrl);
    sessions.push(manager);
    const reader = connectEsWatch(
      "reader",
      createGrpcTransport({ baseUrl: servers.publicUrl, sessionManager: manager }),
      bigKey,
      { ...JANUARY, numUsers: 100 },
    );
    opened.push(reader);
    // The stalled viewer: a gRPC call on its own HTTP/2 connection whose response is never read.
    const session = http2.connect(servers.publicUrl, {
      createConnection: () =>
        net.connect({ port: Number(new URL(servers.publicUrl).port), host: "127.0.0.1", localAddress: "127.0.0.5" }),
    });
    const body = envelope(
      toBinary(WatchTopAffiliateWagersByPeriodRequestSchema, watchRequest({ ...JANUARY, numUsers: 100 })),
    );
    const stalled = session.request({
      ":method": "POST",
      ":path": "/topwagers.v1.TopWagersService/WatchTopAffiliateWagersByPeriod",
      "content-type": "application/grpc",
      te: "trailers",
      authorization: `Bearer ${bigKey}`,
    });
    stalled.end(body);
    stalled.pause();
    stalled.on("error", () => undefined);
    const closed = new Promise<number>((resolve) => stalled.once("close", () => resolve(stalled.rstCode ?? -1)));
    await reader.collected.board(1);
    const slow = async () => metric('topwagers_stream_disconnects_total{reason="slow"}');
    let n = 0;
    try {
      for (; n < 12 && (await slow()) === 0; n++) {
        await servers.client("grpc").recordWagers({
          wagers: [
            { id: `lim-slow-${n}`, userId: `lim-c${n % 100}`, amount: "5000", placedAt: BigInt(JAN_1_2025 + 99) },
          ],
        });
        await reader.collected.board(n + 2);
      }
      // About 64 KB reach the client (its flow-control window); the rest waits in the server until the limit.
      expect(n).toBeLessThanOrEqual(3);
      expect(await slow()).toBe(1);
      expect(await metric('topwagers_streams{protocol="grpc"}')).toBe(1);
      // Reading again, the stalled client finds its stream reset by the server.
      stalled.resume();
      expect(await closed).toBe(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
      // The reader goes on receiving after the stalled viewer is gone.
      await servers.client("grpc").recordWagers({
        wagers: [{ id: "lim-slow-after", userId: "lim-c99", amount: "9999", placedAt: BigInt(JAN_1_2025 + 99) }],
      });
      const after = await reader.collected.board(n + 2);
      expect(after.data[0]).toMatchObject({ userId: "lim-c99", rank: 1 });
    } finally {
      session.destroy();
    }
  });
});
