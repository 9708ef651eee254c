/**
 * Revoking a key ends every stream opened with it, of every kind, on every instance, within a second: a
 * race stream and a board stream on two instances (A and B), over SSE and over two RPC protocols each (A:
 * gRPC; B: Connect and gRPC-Web), are all ended when the key is revoked through the admin RPC of a third
 * instance (C), and each instance's streams gauge counted the race streams with the boards' until then.
 * Three in-process instances on one database, their change feeds woken through real Redis, real sockets.
 */
import { createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import { beforeAll, describe, expect, it } from "vitest";
import { ApiKeyService } from "../../gen/topwagers/v1/api_keys_pb.js";
import { RaceService } from "../../gen/topwagers/v1/races_pb.js";
import type { PublicApp } from "../../src/apps/public.js";
import { bearerConnect } from "../support/calls.js";
import type { TestDatabase } from "../support/database.js";
import { JAN_1_2025, JANUARY } from "../support/dates.js";
import { addBoard, affiliateKey } from "../support/fixtures.js";
import { closeAfterAll } from "../support/lifecycle.js";
import { Collected, connectEsWatch, metricSample, type OpenStream, RawHttp1Stream } from "../support/live.js";
import { OPERATION } from "../support/rest.js";
import { FLEET_ADMIN_TOKEN, startWakingFleet, type WakingFleet } from "../support/waking-fleet.js";

const AFFILIATE = "aff-revoke";
const BOARD_QUERY = `startTimestamp=${JANUARY.startTimestamp}&endTimestamp=${JANUARY.endTimestamp}&numUsers=10`;

let fleet: WakingFleet | undefined;
let database: TestDatabase;
const apps: PublicApp[] = [];
const sessions: Http2SessionManager[] = [];
const opened: { close(): void }[] = [];
let internalUrl = "";
const urls: string[] = [];

/** A stream as the test follows it: when its first message came and when (how) it ended. */
interface Followed {
  readonly name: string;
  started(): boolean;
  endedAt(): number | undefined;
  /** How it ended: "clean", or the RPC error code. */
  ending(): string | undefined;
}

function sse(base: string, path: string, key: string, name: string): Followed {
  const stream = new RawHttp1Stream(Number(new URL(base).port), path, { authorization: `Bearer ${key}` });
  opened.push(stream);
  let endedAt: number | undefined;
  void stream
    .until((reply) => (reply.ended ? true : undefined), 60_000, "end")
    .then(
      () => {
        endedAt = performance.now();
      },
      () => undefined,
    );
  return {
    name,
    started: () => (stream.reply?.events ?? []).some((e) => e.event === "race" || e.event === "board"),
    endedAt: () => endedAt,
    ending: () => (stream.reply?.ended === true ? (stream.reply.complete ? "clean" : "cut") : undefined),
  };
}

/** Follows an RPC stream collected by `Collected` (a board's watch, or a race's below). */
function rpc(name: string, collected: Collected): Followed {
  let endedAt: number | undefined;
  void collected.ending(60_000).then(
    () => {
      endedAt = performance.now();
    },
    () => undefined,
  );
  return {
    name,
    started: () => collected.boards.length > 0,
    endedAt: () => endedAt,
    ending: () =>
      collected.ended === undefined ? undefined : collected.ended === null ? "clean" : String(collected.ended.code),
  };
}

/** WatchRace through connect-es with `for await`; each race message is recorded as a board-like arrival. */
function raceWatch(transport: Transport, key: string): Collected {
  const collected = new Collected();
  const abort = new AbortController();
  opened.push({ close: () => abort.abort() });
  void (async () => {
    try {
      const client = createClient(RaceService, transport);
      for await (const message of client.watchRace(
        { idOrSlug: "monthly" },
        { headers: { authorization: `Bearer ${key}` }, signal: abort.signal },
      )) {
        collected.push({ version: message.version, asOf: 0, heartbeat: message.heartbeat, data: [], at: 0 });
      }
      collected.end(null);
    } catch (reason) {
      const code = (reason as { code?: number }).code ?? -1;
      collected.end({ code, message: String(reason), metadata: {} });
    }
  })();
  return collected;
}

function boardWatch(name: string, transport: Transport, key: string): Collected {
  const stream: OpenStream = connectEsWatch(name, transport, key, JANUARY);
  opened.push(stream);
  return stream.collected;
}

function h2(base: string): Http2SessionManager {
  const manager = new Http2SessionManager(base);
  sessions.push(manager);
  return manager;
}

async function waitFor(ready: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (!ready()) {
    if (performance.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return true;
}

const gauge = (app: PublicApp, protocol: string) =>
  metricSample(app.metrics, `topwagers_streams{protocol="${protocol}"}`);

beforeAll(async () => {
  // The last instance's internal listener is where the operator revokes; it announces each commit to the others.
  fleet = await startWakingFleet("stream_revocation", 3, 2, { STREAM_HEARTBEAT_S: "1" });
  database = fleet.database;
  apps.push(...fleet.apps);
  urls.push(...fleet.urls);
  internalUrl = fleet.internalUrl;
});

closeAfterAll(opened, sessions, () => fleet);

describe("a revoked key's streams", () => {
  it("end on every instance within a second, race and board streams alike, over SSE, Connect, gRPC and gRPC-Web", async () => {
    const admin = createClient(ApiKeyService, bearerConnect(internalUrl, FLEET_ADMIN_TOKEN));
    const created = await admin.createApiKey({ affiliateId: AFFILIATE });
    const key = created.secret;
    const [a, b] = apps as [PublicApp, PublicApp, PublicApp];
    const [aUrl, bUrl] = urls as [string, string, string];
    await addBoard(database.db, AFFILIATE, [["u1", "alice", "", ["100", JAN_1_2025 + 60]]]);
    const nowSeconds = Math.floor(Date.now() / 1000);
    const race = await a.races.create(await affiliateKey(database.db.read, AFFILIATE), {
      slug: "monthly",
      title: "Revocation race",
      startTimestamp: nowSeconds - 3_600,
      endTimestamp: nowSeconds + 86_400,
      prizes: ["10"],
    });
    expect(race.kind).toBe("ok");
    expect(await waitFor(() => b.keys.lookup(key).found, 2_000)).toBe(true);

    const streams: Followed[] = [
      sse(aUrl, "/races/monthly/stream", key, "A race SSE"),
      sse(aUrl, `${OPERATION}/stream?${BOARD_QUERY}`, key, "A board SSE"),
      rpc("A race gRPC", raceWatch(createGrpcTransport({ baseUrl: aUrl, sessionManager: h2(aUrl) }), key)),
      rpc("A board gRPC", boardWatch("grpc", createGrpcTransport({ baseUrl: aUrl, sessionManager: h2(aUrl) }), key)),
      sse(bUrl, "/races/monthly/stream", key, "B race SSE"),
      sse(bUrl, `${OPERATION}/stream?${BOARD_QUERY}`, key, "B board SSE"),
      rpc("B race Connect", raceWatch(createConnectTransport({ baseUrl: bUrl, httpVersion: "1.1" }), key)),
      rpc("B board Connect", boardWatch("connect", createConnectTransport({ baseUrl: bUrl, httpVersion: "1.1" }), key)),
      rpc("B race gRPC-Web", raceWatch(createGrpcWebTransport({ baseUrl: bUrl, httpVersion: "1.1" }), key)),
      rpc(
        "B board gRPC-Web",
        boardWatch("grpc-web", createGrpcWebTransport({ baseUrl: bUrl, httpVersion: "1.1" }), key),
      ),
    ];
    expect(await waitFor(() => streams.every((s) => s.started()), 10_000)).toBe(true);
    // Every stream kind is counted by protocol, the race streams with the boards'.
    expect([await gauge(a, "sse"), await gauge(a, "grpc"), await gauge(a, "connect")]).toEqual([2, 2, 0]);
    expect([await gauge(b, "sse"), await gauge(b, "connect"), await gauge(b, "grpc-web")]).toEqual([2, 2, 2]);

    const revokedAt = performance.now();
    await admin.revokeApiKey({ id: created.apiKey?.id ?? "" });
    await waitFor(() => streams.every((s) => s.endedAt() !== undefined), 3_000);
    const after = Object.fromEntries(
      streams.map((s) => {
        const at = s.endedAt();
        return [s.name, at === undefined ? "still open" : at - revokedAt < 1_000 ? "ended within 1 s" : "ended late"];
      }),
    );
    expect(after).toEqual(Object.fromEntries(streams.map((s) => [s.name, "ended within 1 s"])));
    // SSE ends cleanly; RPC streams end unauthenticated (16), as a call with the key now would.
    expect(Object.fromEntries(streams.map((s) => [s.name, s.ending()]))).toEqual({
      "A race SSE": "clean",
      "A board SSE": "clean",
      "A race gRPC": "16",
      "A board gRPC": "16",
      "B race SSE": "clean",
      "B board SSE": "clean",
      "B race Connect": "16",
      "B board Connect": "16",
      "B race gRPC-Web": "16",
      "B board gRPC-Web": "16",
    });
    for (const app of [a, b]) {
      expect(await Promise.all(["sse", "connect", "grpc", "grpc-web"].map((p) => gauge(app, p)))).toEqual([0, 0, 0, 0]);
    }
  });
});
