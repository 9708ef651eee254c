/**
 * Every committed change is on every instance's answers within a second,
 * whoever wrote it, with and without Redis: two server processes on one
 * database, each with a long result cache (60 s) so that only the change feed
 * can explain a fresh answer. Writes go through instance A (RecordWagers,
 * VoidWagers, UpsertUsers) and through the `import` command; instance B is
 * asked over REST and gRPC, for a running and a settled period. An unrelated
 * affiliate's cached answer on B stays in its cache.
 */
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GetTopAffiliateWagersByPeriodRequestSchema, TopWagersService } from "../../gen/topwagers/v1/top_wagers_pb.js";
import { WagerIngestService } from "../../gen/topwagers/v1/wager_ingest_pb.js";
import { sendsBearer } from "../support/calls.js";
import { runCli } from "../support/cli.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { createKey } from "../support/fixtures.js";
import { type RedisProcess, type ServerProcess, startRedis, startServerProcess } from "../support/processes.js";

const TOKEN = "freshness-ingest-token-0123456789";
const NOW = Math.floor(Date.now() / 1000);
const MONTH_START = Date.UTC(new Date(NOW * 1000).getUTCFullYear(), new Date(NOW * 1000).getUTCMonth(), 1) / 1000;
/** The running period: this month so far and the rest of it. */
const RUNNING = { startTimestamp: MONTH_START, endTimestamp: MONTH_START + 40 * 86_400 };
/** A settled period: 60 to 30 days ago (ended long before the settled threshold of a day). */
const SETTLED = { startTimestamp: NOW - 60 * 86_400, endTimestamp: NOW - 30 * 86_400 };
const IN_RUNNING = Math.max(MONTH_START, NOW - 120);
const IN_SETTLED = NOW - 45 * 86_400;

interface Instance {
  readonly server: ServerProcess;
  readonly internalUrl: string;
  readonly sessions: Http2SessionManager[];
}

async function startInstance(databaseUrl: string, redisUrl?: string): Promise<Instance> {
  const server = await startServerProcess({
    DATABASE_URL: databaseUrl,
    INGEST_TOKEN: TOKEN,
    CACHE_TTL_MS: "60000",
    RATE_LIMIT_POINTS: "100000",
    ...(redisUrl === undefined ? {} : { REDIS_URL: redisUrl }),
  });
  const internal = await server.waitForLog((line) => line.msg.startsWith("internal listener"));
  return { server, internalUrl: `http://127.0.0.1:${Number(internal.port)}`, sessions: [] };
}

function ingestClient(instance: Instance) {
  const sessionManager = new Http2SessionManager(instance.internalUrl);
  instance.sessions.push(sessionManager);
  return createClient(
    WagerIngestService,
    createGrpcTransport({
      baseUrl: instance.internalUrl,
      sessionManager,
      interceptors: [sendsBearer(TOKEN)],
    }),
  );
}

type Board = [string, string][];

async function restBoard(instance: Instance, key: string, period: object): Promise<Board> {
  const response = await fetch(`${instance.server.baseUrl}/top-affiliate-wagers-by-period`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ ...period, numUsers: 10 }),
  });
  expect(response.status).toBe(200);
  const body = (await response.json()) as { data: { username: string; totalWagered: number }[] };
  return body.data.map((e) => [e.username, String(e.totalWagered)]);
}

async function grpcBoard(instance: Instance, key: string, period: typeof RUNNING): Promise<Board> {
  const sessionManager = new Http2SessionManager(instance.server.baseUrl);
  instance.sessions.push(sessionManager);
  const client = createClient(
    TopWagersService,
    createGrpcTransport({ baseUrl: instance.server.baseUrl, sessionManager }),
  );
  const answer = await client.getTopAffiliateWagersByPeriod(
    create(GetTopAffiliateWagersByPeriodRequestSchema, {
      startTimestamp: BigInt(period.startTimestamp),
      endTimestamp: BigInt(period.endTimestamp),
      numUsers: 10,
    }),
    { headers: { authorization: `Bearer ${key}` } },
  );
  return answer.data.map((e) => [e.username, e.totalWageredDecimal]);
}

/** Asks until `want` holds; returns the milliseconds from `since` to the first answer that had it. */
async function visibleWithin(since: number, ask: () => Promise<Board>, want: (board: Board) => boolean) {
  for (;;) {
    const board = await ask();
    const elapsed = Date.now() - since;
    if (want(board)) return elapsed;
    if (elapsed > 3000) throw new Error(`not visible after ${elapsed} ms: ${JSON.stringify(board)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function metric(instance: Instance, name: string): Promise<number> {
  const text = await (await fetch(`${instance.internalUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return Number(line?.split(" ")[1]);
}

describe.each([
  ["without Redis", false],
  ["with Redis wake-ups", true],
])("two instances on one database, %s", (_name, withRedis) => {
  let database: TestDatabase;
  let redis: RedisProcess | undefined;
  let a: Instance;
  let b: Instance;
  let key = "";
  let otherKey = "";
  let wagerNumber = 0;

  beforeAll(async () => {
    database = await createTestDatabase(withRedis ? "fresh_redis" : "fresh_plain");
    redis = withRedis ? await startRedis() : undefined;
    a = await startInstance(database.url, redis?.url);
    b = await startInstance(database.url, redis?.url);
    key = (await createKey(database.db, "fresh-aff")).secret;
    otherKey = (await createKey(database.db, "other-aff")).secret;
    await ingestClient(a).upsertUsers({
      users: [
        { id: "p1", affiliateId: "fresh-aff", username: "alice", avatar: "" },
        { id: "p2", affiliateId: "fresh-aff", username: "bob", avatar: "" },
        { id: "q1", affiliateId: "other-aff", username: "carol", avatar: "" },
      ],
    });
    await ingestClient(a).recordWagers({
      wagers: [
        { id: "base-1", userId: "p1", amount: "100", placedAt: BigInt(IN_RUNNING) },
        { id: "base-2", userId: "p1", amount: "100", placedAt: BigInt(IN_SETTLED) },
        { id: "base-3", userId: "q1", amount: "5", placedAt: BigInt(IN_RUNNING) },
      ],
    });
  }, 60_000);

  afterAll(async () => {
    for (const instance of [a, b]) for (const s of instance?.sessions ?? []) s.abort();
    await Promise.all([a?.server.stop(), b?.server.stop()]);
    await redis?.stop();
    await database?.drop();
  });

  const periods = [
    ["running", RUNNING, IN_RUNNING],
    ["settled", SETTLED, IN_SETTLED],
  ] as const;

  it.each(periods)(
    "shows a wager recorded through A on B within 1 s (%s period, REST and gRPC)",
    async (_p, period, at) => {
      // Warm B's cache for both protocols, and wait until it answers from its cache.
      const before = await restBoard(b, key, period);
      expect(await grpcBoard(b, key, period)).toEqual(before.map(([n, t]) => [n, t]));
      wagerNumber += 1;
      await ingestClient(a).recordWagers({
        wagers: [{ id: `new-${wagerNumber}`, userId: "p2", amount: "1000.5", placedAt: BigInt(at) }],
      });
      const committed = Date.now();
      const bob = (board: Board) => board.some(([name, total]) => name === "bob" && total.startsWith("1000.5"));
      expect(await visibleWithin(committed, () => restBoard(b, key, period), bob)).toBeLessThanOrEqual(1000);
      expect(await visibleWithin(committed, () => grpcBoard(b, key, period), bob)).toBeLessThanOrEqual(1000);
    },
  );

  it("shows a void through A on B within 1 s", async () => {
    await restBoard(b, key, RUNNING);
    await ingestClient(a).voidWagers({ wagerIds: ["base-1"] });
    const committed = Date.now();
    const aliceGone = (board: Board) => !board.some(([name]) => name === "alice");
    expect(await visibleWithin(committed, () => restBoard(b, key, RUNNING), aliceGone)).toBeLessThanOrEqual(1000);
    expect(await visibleWithin(committed, () => grpcBoard(b, key, RUNNING), aliceGone)).toBeLessThanOrEqual(1000);
  });

  it("shows a username change through A on B within 1 s", async () => {
    await restBoard(b, key, SETTLED);
    await ingestClient(a).upsertUsers({
      users: [{ id: "p1", affiliateId: "fresh-aff", username: "alice 2", avatar: "" }],
    });
    const committed = Date.now();
    const renamed = (board: Board) => board.some(([name]) => name === "alice 2");
    expect(await visibleWithin(committed, () => restBoard(b, key, SETTLED), renamed)).toBeLessThanOrEqual(1000);
    expect(await visibleWithin(committed, () => grpcBoard(b, key, SETTLED), renamed)).toBeLessThanOrEqual(1000);
  });

  it("shows wagers written by the import command on both instances within 1 s", async () => {
    await restBoard(a, key, RUNNING);
    await restBoard(b, key, RUNNING);
    const file = path.join(tmpdir(), `topwagers-fresh-${process.pid}-${withRedis ? "r" : "p"}.jsonl`);
    await writeFile(
      file,
      `{"type":"wager","id":"imported-1","userId":"p1","amount":"5000","placedAt":${IN_RUNNING}}\n`,
    );
    const result = await runCli(["import", file], database.url);
    expect(result.code).toBe(0);
    const committed = Date.now();
    const imported = (board: Board) => board[0]?.[1] === "5000";
    expect(await visibleWithin(committed, () => restBoard(a, key, RUNNING), imported)).toBeLessThanOrEqual(1000);
    expect(await visibleWithin(committed, () => restBoard(b, key, RUNNING), imported)).toBeLessThanOrEqual(1000);
  });

  it("keeps serving an unrelated affiliate's answer from B's cache", async () => {
    const first = await restBoard(b, otherKey, RUNNING);
    expect(first).toEqual([["carol", "5"]]);
    await ingestClient(a).recordWagers({
      wagers: [{ id: "unrelated-trigger", userId: "p2", amount: "1", placedAt: BigInt(IN_RUNNING) }],
    });
    await new Promise((resolve) => setTimeout(resolve, 600)); // B has read the change by now
    // B serves its cache only while its change feed is current (a poll can be late on a loaded machine).
    for (let i = 0; i < 100 && (await metric(b, "topwagers_change_feed_lag_seconds")) > 0.4; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const hits = await metric(b, "topwagers_result_cache_hits_total");
    const misses = await metric(b, "topwagers_result_cache_misses_total");
    expect(await restBoard(b, otherKey, RUNNING)).toEqual(first);
    expect(await metric(b, "topwagers_result_cache_hits_total")).toBe(hits + 1);
    expect(await metric(b, "topwagers_result_cache_misses_total")).toBe(misses);
  });
});
