/**
 * SIGTERM with 100 open live streams (the built server, spawned): the
 * process exits 0 within 2 s, and every stream ends cleanly at once: the RPC
 * protocols with unavailable "server is shutting down, reconnect", SSE with
 * the end of its body (HTTP/1.1 and h2c).
 */
import http2 from "node:http2";
import { Code } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_AVATAR_URL } from "../../src/platform/config.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { JAN_1_2025, JANUARY } from "../support/dates.js";
import { addUsers, addWagers, createKey, wager } from "../support/fixtures.js";
import {
  boardEvents,
  connectEsWatch,
  grpcJsWatch,
  type OpenStream,
  RawHttp1Stream,
  RawHttp2Stream,
} from "../support/live.js";
import { exited, type ServerProcess, startServerProcess } from "../support/processes.js";

let database: TestDatabase;
let server: ServerProcess;
let key = "";
const sessions: Http2SessionManager[] = [];
const grpcClients: grpc.Client[] = [];

beforeAll(async () => {
  database = await createTestDatabase("live_shutdown");
  await addUsers(database.db, [{ id: "u-sd", affiliateId: "aff-sd", username: "stopper", avatar: "" }]);
  await addWagers(database.db, [wager("u-sd", "12.5", JAN_1_2025 + 1)]);
  key = (await createKey(database.db, "aff-sd")).secret;
  server = await startServerProcess({
    DATABASE_URL: database.url,
    RATE_LIMIT_POINTS: "1000000",
    STREAM_LIMIT_PER_ADDRESS: "1000",
  });
}, 60_000);

afterAll(async () => {
  for (const client of grpcClients) client.close();
  for (const session of sessions) session.abort();
  await server?.stop("SIGKILL");
  await database?.drop();
});

describe("SIGTERM with open streams", () => {
  it("ends 100 streams at once and cleanly, and exits 0 within 2 s", async () => {
    const base = server.baseUrl;
    const manager = () => {
      const m = new Http2SessionManager(base);
      sessions.push(m);
      return m;
    };
    const h2 = [manager(), manager()];
    const grpcClient = new grpc.Client(base.replace("http://", ""), grpc.credentials.createInsecure());
    grpcClients.push(grpcClient);
    const streams: OpenStream[] = [];
    const sse: (RawHttp1Stream | RawHttp2Stream)[] = [];
    const fields = { ...JANUARY, numUsers: 5 };
    const ssePath = `/top-affiliate-wagers-by-period/stream?startTimestamp=${fields.startTimestamp}&endTimestamp=${fields.endTimestamp}&numUsers=5`;
    const sseSession = http2.connect(base);
    sseSession.on("error", () => undefined);
    for (let i = 0; i < 100; i++) {
      const kind = i % 7;
      if (kind === 0)
        streams.push(
          connectEsWatch(
            "Connect HTTP/1.1",
            createConnectTransport({ baseUrl: base, httpVersion: "1.1" }),
            key,
            fields,
          ),
        );
      if (kind === 1) {
        streams.push(
          connectEsWatch(
            "Connect HTTP/2",
            createConnectTransport({ baseUrl: base, httpVersion: "2", sessionManager: h2[0] as Http2SessionManager }),
            key,
            fields,
          ),
        );
      }
      if (kind === 2)
        streams.push(
          connectEsWatch("gRPC-Web", createGrpcWebTransport({ baseUrl: base, httpVersion: "1.1" }), key, fields),
        );
      if (kind === 3) {
        streams.push(
          connectEsWatch(
            "gRPC (connect-es)",
            createGrpcTransport({ baseUrl: base, sessionManager: h2[1] as Http2SessionManager }),
            key,
            fields,
          ),
        );
      }
      if (kind === 4) streams.push(grpcJsWatch(grpcClient, key, fields));
      if (kind === 5) sse.push(new RawHttp1Stream(server.port, ssePath, { authorization: `Bearer ${key}` }));
      if (kind === 6) sse.push(new RawHttp2Stream(sseSession, ssePath, { authorization: `Bearer ${key}` }));
    }
    expect(streams.length + sse.length).toBe(100);
    const firsts = await Promise.all(streams.map((s) => s.collected.board(1, 10_000)));
    for (const board of firsts) expect(board.data.map((e) => e.totalWageredDecimal)).toEqual(["12.5"]);
    for (const stream of sse) {
      const [first] = boardEvents(await stream.until((r) => (boardEvents(r).length > 0 ? r : undefined), 10_000));
      expect(first?.data).toEqual({
        data: [{ username: "stopper", avatar: DEFAULT_AVATAR_URL, totalWagered: 12.5 }],
        errors: null,
      });
    }

    const signalled = performance.now();
    server.child.kill("SIGTERM");
    const code = await exited(server.child, 5_000);
    const exitMs = performance.now() - signalled;
    expect(code).toBe(0);
    expect(exitMs).toBeLessThan(2_000);

    const endings = await Promise.all(streams.map((s) => s.collected.ending(1_000)));
    for (const [i, { error }] of endings.entries()) {
      expect({ stream: streams[i]?.name, code: error?.code, message: error?.message }).toEqual({
        stream: streams[i]?.name,
        code: Code.Unavailable,
        message: "server is shutting down, reconnect",
      });
    }
    // SSE ends its body cleanly (EventSource then reconnects with Last-Event-ID).
    for (const stream of sse) {
      const reply = await stream.until((r) => (r.ended ? r : undefined), 1_000);
      expect(reply.complete).toBe(true);
    }
    sseSession.destroy();
    await server.waitForLog((line) => line.msg === "stopped", 1_000);
  });
});
