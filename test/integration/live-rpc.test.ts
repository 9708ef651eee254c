/**
 * WatchTopAffiliateWagersByPeriod on every protocol, with real clients over
 * real sockets (connect-es: Connect over HTTP/1.1 and HTTP/2, binary and
 * JSON, gRPC, gRPC-Web; @grpc/grpc-js), changes made through the internal
 * ingest service: each reaches every open stream within 1.5 s with the
 * totals the POST answers (computed here independently with BigInt);
 * another affiliate's change and a change that leaves the answer as it was
 * send nothing; resume; heartbeats; the unary call's errors.
 */
import { Code, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_AVATAR_URL } from "../../src/platform/config.js";
import { rpcTop } from "../support/calls.js";
import { JAN_1_2025, JANUARY } from "../support/dates.js";
import { toUnits, unitsToDecimal } from "../support/decimals.js";
import { createKey } from "../support/fixtures.js";
import { TEST_INGEST_TOKEN, useIngestServers } from "../support/ingest.js";
import {
  type Board,
  connectEsWatch,
  grpcJsWatch,
  metricSample,
  type OpenStream,
  type WatchFields,
} from "../support/live.js";
import { restTop } from "../support/rest.js";

const AFFILIATE = "aff-live";
const OTHER = "aff-else";
/** The contract's promise: a committed change is on every open stream within this. */
const PUSH_WITHIN_MS = 1_500;

/** What the test knows it sent: per user, January's total in 10^-8 units, and the profile. */
const ledger = new Map<string, { username: string; avatar: string; units: bigint; affiliate: string }>();
const wagers = new Map<string, { userId: string; units: bigint }>();
const servers = useIngestServers("live_rpc", {
  INGEST_TOKEN: TEST_INGEST_TOKEN,
  STREAM_HEARTBEAT_S: "1",
  // Every client here is 127.0.0.1 (live-limits.test.ts covers the limit).
  STREAM_LIMIT_PER_ADDRESS: "1000",
});
let key = "";
let otherKey = "";
const sessions: Http2SessionManager[] = [];
const grpcClients: grpc.Client[] = [];
const open: OpenStream[] = [];
let wagerNumber = 0;

/** The board the contract says the affiliate has now: total desc, then username (code points), then user id. */
function expectedBoard(numUsers: number, affiliate = AFFILIATE) {
  return [...ledger.entries()]
    .filter(([, u]) => u.affiliate === affiliate && u.units > 0n)
    .sort(([aId, a], [bId, b]) =>
      a.units !== b.units
        ? a.units > b.units
          ? -1
          : 1
        : a.username < b.username
          ? -1
          : a.username > b.username
            ? 1
            : aId < bId
              ? -1
              : 1,
    )
    .slice(0, numUsers)
    .map(([userId, u], i) => ({
      username: u.username,
      avatar: u.avatar === "" ? DEFAULT_AVATAR_URL : u.avatar,
      totalWageredDecimal: unitsToDecimal(u.units),
      userId,
      rank: i + 1,
    }));
}

/** The POST's answer, as the same entries (REST shows username, avatar and the total). */
async function postBoard(numUsers: number, apiKey = key) {
  const reply = await restTop(servers.publicUrl, apiKey, { ...JANUARY, numUsers });
  expect(reply.status).toBe(200);
  // The exact decimal text of each total, as written in the body.
  return [
    ...reply.text.matchAll(/"username":("(?:[^"\\]|\\.)*"),"avatar":("(?:[^"\\]|\\.)*"),"totalWagered":([0-9.]+)/g),
  ].map((m) => ({ username: JSON.parse(m[1] as string), avatar: JSON.parse(m[2] as string), total: m[3] }));
}

function asPosted(board: Board) {
  return board.data.map((e) => ({ username: e.username, avatar: e.avatar, total: e.totalWageredDecimal }));
}

async function upsert(userId: string, username: string, avatar: string, affiliate: string) {
  await servers.client("grpc").upsertUsers({ users: [{ id: userId, affiliateId: affiliate, username, avatar }] });
  const known = ledger.get(userId);
  ledger.set(userId, { username, avatar, units: known?.units ?? 0n, affiliate });
}

async function record(userId: string, amount: string, placedAt = JAN_1_2025 + 3_600): Promise<string> {
  wagerNumber += 1;
  const id = `live-w${wagerNumber}`;
  await servers.client("grpc").recordWagers({ wagers: [{ id, userId, amount, placedAt: BigInt(placedAt) }] });
  const user = ledger.get(userId);
  if (user === undefined) throw new Error(`unknown user ${userId}`);
  if (placedAt >= JANUARY.startTimestamp && placedAt <= JANUARY.endTimestamp) {
    user.units += toUnits(amount);
    wagers.set(id, { userId, units: toUnits(amount) });
  }
  return id;
}

function streams(fields: WatchFields, apiKey = key): OpenStream[] {
  const base = servers.publicUrl;
  const h2 = () => {
    const manager = new Http2SessionManager(base);
    sessions.push(manager);
    return manager;
  };
  const grpcClient = new grpc.Client(base.replace("http://", ""), grpc.credentials.createInsecure());
  grpcClients.push(grpcClient);
  const watch = (name: string, transport: Transport) => connectEsWatch(name, transport, apiKey, fields);
  const list = [
    watch(
      "Connect binary HTTP/1.1",
      createConnectTransport({ baseUrl: base, httpVersion: "1.1", useBinaryFormat: true }),
    ),
    watch("Connect JSON HTTP/1.1", createConnectTransport({ baseUrl: base, httpVersion: "1.1" })),
    watch(
      "Connect binary HTTP/2",
      createConnectTransport({ baseUrl: base, httpVersion: "2", useBinaryFormat: true, sessionManager: h2() }),
    ),
    watch("Connect JSON HTTP/2", createConnectTransport({ baseUrl: base, httpVersion: "2", sessionManager: h2() })),
    watch("gRPC (connect-es)", createGrpcTransport({ baseUrl: base, sessionManager: h2() })),
    watch("gRPC-Web HTTP/1.1", createGrpcWebTransport({ baseUrl: base, httpVersion: "1.1", useBinaryFormat: true })),
    watch("gRPC-Web JSON HTTP/1.1", createGrpcWebTransport({ baseUrl: base, httpVersion: "1.1" })),
    grpcJsWatch(grpcClient, apiKey, fields),
  ];
  open.push(...list);
  return list;
}

/** Waits for board `n` on every stream; each must arrive within PUSH_WITHIN_MS of `since`. */
async function nextOnAll(list: readonly OpenStream[], n: number, since: number): Promise<Board[]> {
  const boards = await Promise.all(list.map((s) => s.collected.board(n, 5_000)));
  for (const [i, board] of boards.entries()) {
    expect(board.at - since, `${list[i]?.name} took ${Math.round(board.at - since)} ms`).toBeLessThanOrEqual(
      PUSH_WITHIN_MS,
    );
  }
  return boards;
}

const metricValue = (series: string) => metricSample(servers.app.metrics, series);

beforeAll(async () => {
  key = (await createKey(servers.database.db, AFFILIATE)).secret;
  otherKey = (await createKey(servers.database.db, OTHER)).secret;
  await upsert("u-ann", "ann", "https://img.example/ann.png", AFFILIATE);
  await upsert("u-ben", "ben", "", AFFILIATE);
  await upsert("u-cat", "cat", "https://img.example/cat.png", AFFILIATE);
  await upsert("u-dan", "dan", "https://img.example/dan.png", AFFILIATE);
  await upsert("u-eli", "eli", "", OTHER);
  await record("u-ann", "100.5");
  await record("u-ann", "0.00000001", JAN_1_2025);
  await record("u-ben", "250");
  await record("u-cat", "75.25", JANUARY.endTimestamp);
  await record("u-dan", "10");
  await record("u-dan", "1000", JAN_1_2025 - 1); // before the period
  await record("u-eli", "5000");
}, 60_000);

afterAll(async () => {
  for (const stream of open) stream.close();
  for (const client of grpcClients) client.close();
  for (const session of sessions) session.abort();
});

describe("WatchTopAffiliateWagersByPeriod", () => {
  let main: OpenStream[] = [];

  it("starts every protocol's stream with the board the POST answers, one version for all", async () => {
    main = streams({ ...JANUARY, numUsers: 10 });
    const firsts = await Promise.all(main.map((s) => s.collected.board(1)));
    const expected = expectedBoard(10);
    expect(expected.map((e) => e.totalWageredDecimal)).toEqual(["250", "100.50000001", "75.25", "10"]);
    const posted = await postBoard(10);
    const now = Math.floor(Date.now() / 1000);
    for (const [i, board] of firsts.entries()) {
      expect(board.data, main[i]?.name).toEqual(expected);
      expect(asPosted(board)).toEqual(posted);
      expect(board.heartbeat).toBe(false);
      expect(board.version).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(board.version).toBe(firsts[0]?.version);
      expect(Math.abs(board.asOf - now)).toBeLessThanOrEqual(5);
    }
  });

  it("delivers a recorded wager to every stream within 1.5 s, with the POST's totals", async () => {
    const since = performance.now();
    await record("u-dan", "500.12345678");
    const boards = await nextOnAll(main, 2, since);
    const expected = expectedBoard(10);
    expect(expected[0]).toMatchObject({ username: "dan", totalWageredDecimal: "510.12345678", rank: 1 });
    const posted = await postBoard(10);
    for (const board of boards) {
      expect(board.data).toEqual(expected);
      expect(asPosted(board)).toEqual(posted);
      expect(board.version).not.toBe(main[0]?.collected.boards[0]?.version);
    }
  });

  it("delivers a void to every stream within 1.5 s", async () => {
    const [annWager] =
      [...wagers.entries()].find(([, w]) => w.userId === "u-ann" && w.units === toUnits("100.5")) ?? [];
    const since = performance.now();
    await servers.client("connect").voidWagers({ wagerIds: [annWager as string] });
    (ledger.get("u-ann") as { units: bigint }).units -= toUnits("100.5");
    const boards = await nextOnAll(main, 3, since);
    const expected = expectedBoard(10);
    expect(expected.find((e) => e.username === "ann")?.totalWageredDecimal).toBe("0.00000001");
    const posted = await postBoard(10);
    for (const board of boards) {
      expect(board.data).toEqual(expected);
      expect(asPosted(board)).toEqual(posted);
    }
  });

  it("delivers a renamed user to every stream within 1.5 s", async () => {
    const since = performance.now();
    await upsert("u-ben", "Benny <b>", "https://img.example/benny.png", AFFILIATE);
    const boards = await nextOnAll(main, 4, since);
    const expected = expectedBoard(10);
    expect(expected.find((e) => e.userId === "u-ben")).toMatchObject({
      username: "Benny <b>",
      avatar: "https://img.example/benny.png",
    });
    const posted = await postBoard(10);
    for (const board of boards) {
      expect(board.data).toEqual(expected);
      expect(asPosted(board)).toEqual(posted);
    }
  });

  it("sends nothing for another affiliate's change", async () => {
    const counts = main.map((s) => s.collected.boards.length);
    await record("u-eli", "777");
    await servers.app.caughtUp();
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(main.map((s) => s.collected.boards.length)).toEqual(counts);
    // The other affiliate's own stream shows its change.
    const [other] = streams({ ...JANUARY, numUsers: 10 }, otherKey);
    expect((await other?.collected.board(1))?.data).toEqual(expectedBoard(10, OTHER));
  });

  it("computes a board again after a change that touches it, and sends nothing when its answer stayed the same", async () => {
    const top1 = streams({ ...JANUARY, numUsers: 1 });
    await Promise.all(top1.map((s) => s.collected.board(1)));
    const recomputes = await metricValue("topwagers_board_recomputes_total");
    const since = performance.now();
    // cat is third: the top-1 board's answer stays the same; the full board shows the new total.
    await record("u-cat", "1");
    const boards = await nextOnAll(main, 5, since);
    for (const board of boards) expect(board.data).toEqual(expectedBoard(10));
    await servers.app.caughtUp();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await metricValue("topwagers_board_recomputes_total")).toBe(recomputes + 2);
    expect(top1.map((s) => s.collected.boards.length)).toEqual(top1.map(() => 1));
    for (const s of top1) s.close();
  });

  it("resumes with the current version silently, and with an old one at once", async () => {
    const current = main[0]?.collected.boards.at(-1) as Board;
    const old = main[0]?.collected.boards[0] as Board;
    const resumed = streams({ ...JANUARY, numUsers: 10, resumeVersion: current.version });
    const stale = streams({ ...JANUARY, numUsers: 10, resumeVersion: old.version });
    // A heartbeat (STREAM_HEARTBEAT_S=1) carries the current version; no board came before it.
    const heartbeats = await Promise.all(
      resumed.map((s) => s.collected.until(() => s.collected.heartbeats[0], 3_000, "heartbeat")),
    );
    for (const [i, heartbeat] of heartbeats.entries()) {
      expect(heartbeat.version, resumed[i]?.name).toBe(current.version);
      expect(resumed[i]?.collected.boards).toEqual([]);
    }
    for (const s of stale) {
      const first = await s.collected.board(1);
      expect(first.version).toBe(current.version);
      expect(first.data).toEqual(expectedBoard(10));
    }
    const since = performance.now();
    await record("u-ann", "0.5");
    const boards = await nextOnAll(resumed, 1, since);
    for (const board of boards) expect(board.data).toEqual(expectedBoard(10));
    for (const s of [...resumed, ...stale]) s.close();
  });

  it("sends a heartbeat with the current version and no entries after STREAM_HEARTBEAT_S without a board", async () => {
    const list = streams({ ...JANUARY, numUsers: 3 });
    const firsts = await Promise.all(list.map((s) => s.collected.board(1)));
    const beats = await Promise.all(
      list.map((s) => s.collected.until(() => s.collected.heartbeats[1], 4_000, "two heartbeats")),
    );
    for (const [i, s] of list.entries()) {
      const [first, second] = s.collected.heartbeats;
      expect(first?.version).toBe(firsts[i]?.version);
      expect(first?.data).toEqual([]);
      expect(first?.heartbeat).toBe(true);
      expect((first?.at ?? 0) - (firsts[i]?.at ?? 0)).toBeLessThan(1_600);
      expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThan(700);
      expect(beats[i]?.version).toBe(firsts[i]?.version);
    }
    for (const s of list) s.close();
  });

  it("answers a bad request or key with the unary call's code and message on every protocol", async () => {
    const cases: { fields: WatchFields; apiKey: string; code: Code }[] = [
      { fields: { ...JANUARY, numUsers: 0 }, apiKey: key, code: Code.InvalidArgument },
      { fields: { startTimestamp: 5, numUsers: 500 }, apiKey: key, code: Code.InvalidArgument },
      { fields: JANUARY, apiKey: "tw_live_not_a_key", code: Code.Unauthenticated },
    ];
    for (const c of cases) {
      const unary = await rpcTop(createGrpcTransport({ baseUrl: servers.publicUrl }), c.apiKey, c.fields);
      expect(unary.code).toBe(c.code);
      const list = streams(c.fields, c.apiKey);
      for (const s of list) {
        const { error } = await s.collected.ending();
        expect(error?.code, s.name).toBe(c.code);
        expect(error?.message, s.name).toBe(unary.message);
        expect(s.collected.boards).toEqual([]);
      }
    }
  });

  it("counts open streams by protocol and the distinct boards", async () => {
    // Closed streams leave as soon as the server sees their connection or stream close.
    for (let i = 0; i < 50; i++) {
      if ((await metricValue("topwagers_live_boards")) === 2) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const sample = metricValue;
    // main: Connect ×4, gRPC ×2 (connect-es, grpc-js), gRPC-Web ×2; plus the other affiliate's 8.
    expect(await sample('topwagers_streams{protocol="connect"}')).toBe(8);
    expect(await sample('topwagers_streams{protocol="grpc"}')).toBe(4);
    expect(await sample('topwagers_streams{protocol="grpc-web"}')).toBe(4);
    expect(await sample('topwagers_streams{protocol="sse"}')).toBe(0);
    expect(await sample("topwagers_live_boards")).toBe(2);
  });
});
