/**
 * Database faults (docs/contract.md, the 503 row): a throwaway MariaDB (temporary data
 * directory, free port) behind a spawned server, with REST, Connect and gRPC
 * traffic running. Stopping the database turns every call into 503
 * `unavailable` with Retry-After (the envelope on REST, the code on RPC) and
 * /readyz into 503: no crash, never a 500. Starting it again on the same data
 * directory and port brings 200s back within 5 s, with no restart of the
 * service. A statement that waits too long is cut by the statement timeout and
 * answered the same way. Live streams opened before the outage stay open
 * through it (heartbeats go on) and get the next change after it.
 */
import { Code, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import mysql from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../../src/platform/database/database.js";
import { rpcTop, type Timed } from "../support/calls.js";
import { JAN_1_2025 } from "../support/dates.js";
import { addUsers, addWagers, createKey, wager } from "../support/fixtures.js";
import { boardEvents, connectEsWatch, type OpenStream, RawHttp1Stream } from "../support/live.js";
import { until } from "../support/polling.js";
import {
  type MariaDbProcess,
  mariaDbAvailable,
  type ServerProcess,
  sleep,
  startServerOnOwnMariaDb,
} from "../support/processes.js";
import { RELEASE } from "../support/release.js";
import { restTop } from "../support/rest.js";

const available = mariaDbAvailable();
if (!available) {
  console.warn(
    "database-faults: SKIPPED, mariadb-install-db / mariadbd are not installed (apt-get install mariadb-server)",
  );
}

const DATABASE = "topwagers_faults";
const QUERY_TIMEOUT_MS = 1_000;
const UNAVAILABLE_MESSAGE = "the leaderboard database is unavailable right now. Retry shortly";
const UNAVAILABLE_BODY = { data: null, errors: [{ code: "unavailable", message: UNAVAILABLE_MESSAGE }] };
const GOOD_BODY = {
  data: [{ username: "ann", avatar: "https://img.example/ann.png", totalWagered: 30.25 }],
  errors: null,
};

const PROTOCOLS = ["rest", "connect", "grpc", "readyz"] as const;
type Protocol = (typeof PROTOCOLS)[number];

interface Sample extends Timed {
  readonly protocol: Protocol;
  /** HTTP status (REST, readyz) or "ok" / the Connect code name (RPC). */
  readonly result: number | string;
  readonly body?: unknown;
  readonly retryAfter?: string | undefined;
  readonly message?: string;
}

let mariadb: MariaDbProcess | undefined;
let server: ServerProcess | undefined;
let key = "";
const samples: Sample[] = [];
const sessions: Http2SessionManager[] = [];
let connect: Transport;
let grpc: Transport;
let trafficRunning = false;
/** The day after the traffic's period: the live streams' board, changed without touching the traffic's answers. */
const DAY_2 = { startTimestamp: JAN_1_2025 + 86_400, endTimestamp: JAN_1_2025 + 2 * 86_400 - 1, numUsers: 5 };
let liveGrpc: OpenStream | undefined;
let liveSse: RawHttp1Stream | undefined;
let traffic: Promise<void> = Promise.resolve();

async function withFixtures<T>(work: (db: Database) => Promise<T>): Promise<T> {
  const db = await openDatabase({ url: mariadb?.url(DATABASE) ?? "", poolSize: 1 });
  try {
    return await work(db);
  } finally {
    await db.close();
  }
}

/** The first day of January 2025, top 5. */
const FIRST_DAY = { startTimestamp: JAN_1_2025, endTimestamp: JAN_1_2025 + 86_399, numUsers: 5 };

async function sampleOnce(protocol: Protocol): Promise<Sample> {
  const base = server?.baseUrl ?? "";
  const startedAt = Date.now();
  try {
    if (protocol === "readyz") {
      const response = await fetch(`${base}/readyz`);
      return { protocol, startedAt, endedAt: Date.now(), result: response.status, body: await response.json() };
    }
    if (protocol === "rest") {
      const reply = await restTop(base, key, FIRST_DAY);
      return {
        protocol,
        startedAt,
        endedAt: Date.now(),
        result: reply.status,
        body: reply.json,
        retryAfter: reply.headers["retry-after"],
      };
    }
    const reply = await rpcTop(protocol === "connect" ? connect : grpc, key, FIRST_DAY);
    return {
      protocol,
      startedAt,
      endedAt: Date.now(),
      result: reply.code === 0 ? "ok" : Code[reply.code],
      retryAfter: reply.headers["retry-after"],
      message: reply.message,
    };
  } catch (error) {
    return { protocol, startedAt, endedAt: Date.now(), result: `client error ${String(error)}` };
  }
}

/** One sequential loop per protocol, a few ms apart, until stopped. */
function startTraffic() {
  trafficRunning = true;
  traffic = Promise.all(
    PROTOCOLS.map(async (protocol) => {
      while (trafficRunning) {
        samples.push(await sampleOnce(protocol));
        await sleep(10);
      }
    }),
  ).then(() => undefined);
}

async function stopTraffic() {
  trafficRunning = false;
  await traffic;
}

function between(from: number, to: number, protocol?: Protocol): Sample[] {
  return samples.filter(
    (s) => s.startedAt >= from && s.endedAt <= to && (protocol === undefined || s.protocol === protocol),
  );
}

/** The answer every protocol gives while the database is away. */
function expectUnavailable(s: Sample) {
  if (s.protocol === "readyz") {
    expect({ result: s.result, body: s.body }).toEqual({
      result: 503,
      body: { status: "database_unavailable", ...RELEASE },
    });
  } else if (s.protocol === "rest") {
    expect({ result: s.result, body: s.body, retryAfter: s.retryAfter }).toEqual({
      result: 503,
      body: UNAVAILABLE_BODY,
      retryAfter: "1",
    });
  } else {
    expect({ protocol: s.protocol, result: s.result, message: s.message, retryAfter: s.retryAfter }).toEqual({
      protocol: s.protocol,
      result: "Unavailable",
      message: UNAVAILABLE_MESSAGE,
      retryAfter: "1",
    });
  }
}

function expectServing(s: Sample) {
  if (s.protocol === "readyz") expect(s.result).toBe(200);
  else if (s.protocol === "rest") expect({ result: s.result, body: s.body }).toEqual({ result: 200, body: GOOD_BODY });
  else expect({ protocol: s.protocol, result: s.result }).toEqual({ protocol: s.protocol, result: "ok" });
}

beforeAll(async () => {
  if (!available) return;
  ({ mariadb, server } = await startServerOnOwnMariaDb(DATABASE, {
    CACHE_TTL_MS: "0",
    QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
    RATE_LIMIT_POINTS: "1000000",
    STREAM_HEARTBEAT_S: "1",
  }));
  key = await withFixtures(async (db) => {
    await addUsers(db, [{ id: "u-ann", affiliateId: "aff-f", username: "ann", avatar: "https://img.example/ann.png" }]);
    await addWagers(db, [
      wager("u-ann", "10.25", JAN_1_2025 + 60),
      wager("u-ann", "20", JAN_1_2025 + 120),
      wager("u-ann", "1", DAY_2.startTimestamp + 60),
    ]);
    return (await createKey(db, "aff-f")).secret;
  });
  const h2 = new Http2SessionManager(server.baseUrl);
  sessions.push(h2);
  connect = createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" });
  grpc = createGrpcTransport({ baseUrl: server.baseUrl, sessionManager: h2 });
}, 90_000);

afterAll(async () => {
  liveGrpc?.close();
  liveSse?.close();
  await stopTraffic();
  for (const manager of sessions) manager.abort();
  await server?.stop("SIGTERM");
  await mariadb?.destroy();
});

/** The samples taken between two instants; more than `moreThan` of every protocol. */
function samplesOfEach(from: number, to: number, moreThan: number): Sample[] {
  const found = between(from, to);
  for (const protocol of PROTOCOLS) {
    expect(found.filter((s) => s.protocol === protocol).length, protocol).toBeGreaterThan(moreThan);
  }
  return found;
}

describe.skipIf(!available)("MariaDB stopped mid-traffic, then started again", () => {
  it("serves every protocol while the database is up", async () => {
    startTraffic();
    const from = Date.now();
    await sleep(1_000);
    const up = samplesOfEach(from, Date.now(), 5);
    for (const s of up) expectServing(s);
  });

  it("opens live streams (gRPC and SSE) on another day's board before the outage", async () => {
    const h2 = new Http2SessionManager(server?.baseUrl ?? "");
    sessions.push(h2);
    liveGrpc = connectEsWatch(
      "gRPC",
      createGrpcTransport({ baseUrl: server?.baseUrl ?? "", sessionManager: h2 }),
      key,
      DAY_2,
    );
    liveSse = new RawHttp1Stream(
      server?.port ?? 0,
      `/top-affiliate-wagers-by-period/stream?startTimestamp=${DAY_2.startTimestamp}&endTimestamp=${DAY_2.endTimestamp}&numUsers=5`,
      { authorization: `Bearer ${key}` },
    );
    expect((await liveGrpc.collected.board(1)).data.map((e) => e.totalWageredDecimal)).toEqual(["1"]);
    await liveSse.until((r) => (boardEvents(r).length === 1 ? true : undefined));
  });

  it("answers 503 unavailable with Retry-After on every protocol while it is down, never 500, no crash", async () => {
    const stopping = Date.now();
    await mariadb?.stop();
    const gone = Date.now();
    // Longer than the key cache (2 s): both the key lookup and the leaderboard query meet the outage.
    await sleep(3_500);
    // On a busy machine calls come slower (a clean-clone CI had 16 REST calls in those 3.5 s): the outage goes on
    // until every protocol has answered more than 20 times in it, each answer checked below.
    await until(
      "calls of each protocol (rest, connect, grpc, readyz) while the database is down",
      async () => PROTOCOLS.map((protocol) => between(gone, Date.now(), protocol).length),
      (counts) => counts.every((count) => count > 20),
      30_000,
    );
    const down = samplesOfEach(gone, Date.now(), 20);
    for (const s of down) expectUnavailable(s);
    // Calls that overlapped the shutdown itself: served or unavailable, nothing else.
    for (const s of samples.filter((x) => x.endedAt >= stopping && x.startedAt < gone)) {
      expect(["ok", 200, "Unavailable", 503]).toContain(s.result);
    }
    expect(server?.child.exitCode).toBeNull();
    expect(server?.otherOutput).toEqual([]);
    console.log(
      `database down: ${down.length} calls in ${Date.now() - gone} ms, all unavailable (REST ${down.filter((s) => s.protocol === "rest").length}, Connect ${down.filter((s) => s.protocol === "connect").length}, gRPC ${down.filter((s) => s.protocol === "grpc").length}, readyz ${down.filter((s) => s.protocol === "readyz").length}); mariadbd took ${gone - stopping} ms to stop`,
    );
  }, 60_000);

  it("serves 200 again within 5 s of the database being back, without a restart", async () => {
    await mariadb?.start();
    const ready = Date.now();
    // Give the service 5 s (plus one call's time) to be back.
    await sleep(5_500);
    const recovery: Record<string, number> = {};
    for (const protocol of PROTOCOLS) {
      const after = samples.filter((s) => s.protocol === protocol && s.startedAt >= ready);
      const firstGood = after.find((s) => s.result === 200 || s.result === "ok");
      expect(firstGood, `${protocol} never recovered`).toBeDefined();
      recovery[protocol] = (firstGood?.endedAt ?? Number.POSITIVE_INFINITY) - ready;
      expect(recovery[protocol]).toBeLessThanOrEqual(5_000);
      // Once back, it stays back: everything from the first success on is served.
      for (const s of after.filter((x) => x.startedAt >= (firstGood?.endedAt ?? 0))) expectServing(s);
      // Before that, only the outage answer.
      for (const s of after.filter((x) => x.endedAt < (firstGood?.startedAt ?? 0))) expectUnavailable(s);
    }
    console.log(
      `recovery after mariadbd accepted logins again: REST ${recovery.rest} ms, Connect ${recovery.connect} ms, gRPC ${recovery.grpc} ms, /readyz ${recovery.readyz} ms`,
    );
    await stopTraffic();
    // Never a 5xx other than 503, never an unexpected RPC code, over the whole run.
    const unexpected = samples.filter((s) => ![200, 503, "ok", "Unavailable"].includes(s.result));
    expect(unexpected).toEqual([]);
    expect(server?.child.exitCode).toBeNull();
    expect(server?.otherOutput).toEqual([]);
  }, 60_000);

  it("kept the live streams open through the outage with heartbeats, and delivers the next change after it", async () => {
    const outage = samples.filter((s) => s.result === 503 || s.result === "Unavailable");
    const from = Math.min(...outage.map((s) => s.startedAt));
    const to = Math.max(...outage.map((s) => s.endedAt));
    expect(to - from).toBeGreaterThan(3_000);
    const beats = (liveGrpc?.collected.heartbeats ?? []).filter((h) => {
      const at = performance.timeOrigin + h.at;
      return at >= from && at <= to;
    });
    expect(beats.length).toBeGreaterThanOrEqual(2);
    expect(liveGrpc?.collected.ended).toBeUndefined();
    expect(liveSse?.reply?.ended).toBe(false);
    expect(liveSse?.reply?.events.filter((e) => e.comment === "heartbeat").length).toBeGreaterThanOrEqual(2);
    const since = performance.now();
    await withFixtures((db) => addWagers(db, [wager("u-ann", "2.5", DAY_2.startTimestamp + 30)]));
    const board = await liveGrpc?.collected.board(2, 3_000);
    expect(board?.data.map((e) => e.totalWageredDecimal)).toEqual(["3.5"]);
    expect((board?.at ?? Number.POSITIVE_INFINITY) - since).toBeLessThan(1_500);
    const events = await liveSse?.until((r) => (boardEvents(r).length === 2 ? boardEvents(r) : undefined), 3_000);
    expect(events?.[1]?.data).toEqual({
      data: [{ username: "ann", avatar: "https://img.example/ann.png", totalWagered: 3.5 }],
      errors: null,
    });
    liveGrpc?.close();
    liveSse?.close();
  });

  it("logs the outage once: a warn line when the database went away and an info line when it came back", () => {
    const outage = (server?.logs ?? []).filter(
      (l) => l.msg.startsWith("database unreachable") || l.msg.startsWith("database reachable again"),
    );
    expect(outage.map((l) => [l.level, l.msg.replace(/[\d.]+ s$/, "N s")])).toEqual([
      [40, "database unreachable; calls that need it answer unavailable until it is back"],
      [30, "database reachable again after N s"],
    ]);
    // Down from the first failed probe during the outage (3.5 s or more) until the first good one after the restart.
    expect(outage[1]?.downSeconds).toBeGreaterThan(3);
    expect(outage[1]?.downSeconds).toBeLessThan(60);
  });

  it("cuts a statement that waits past QUERY_TIMEOUT_MS and answers 503 unavailable, then serves again", async () => {
    // A fresh key (held in memory: no statement), and a leaderboard query that waits on locked tables.
    const fresh = await withFixtures(async (db) => (await createKey(db, "aff-f")).secret);
    const locker = await mysql.createConnection({
      host: "127.0.0.1",
      port: mariadb?.port ?? 0,
      user: "root",
      database: DATABASE,
    });
    try {
      await locker.query(
        "LOCK TABLES wagers WRITE, wager_hourly WRITE, wager_daily WRITE, wager_halfmonthly WRITE, wager_monthly WRITE, users WRITE",
      );
      const started = Date.now();
      const blocked = await restTop(server?.baseUrl ?? "", fresh, {
        startTimestamp: JAN_1_2025,
        endTimestamp: JAN_1_2025 + 86_399,
        numUsers: 5,
      });
      const took = Date.now() - started;
      expect({ status: blocked.status, body: blocked.json, retryAfter: blocked.headers["retry-after"] }).toEqual({
        status: 503,
        body: UNAVAILABLE_BODY,
        retryAfter: "1",
      });
      expect(took).toBeGreaterThanOrEqual(QUERY_TIMEOUT_MS - 50);
      expect(took).toBeLessThan(QUERY_TIMEOUT_MS + 2_000);
      console.log(
        `statement timeout: a lookup blocked by a table lock answered 503 after ${took} ms (QUERY_TIMEOUT_MS=${QUERY_TIMEOUT_MS})`,
      );
    } finally {
      await locker.query("UNLOCK TABLES");
      await locker.end();
    }
    const after = await restTop(server?.baseUrl ?? "", fresh, {
      startTimestamp: JAN_1_2025,
      endTimestamp: JAN_1_2025 + 86_399,
      numUsers: 5,
    });
    expect({ status: after.status, body: after.json }).toEqual({ status: 200, body: GOOD_BODY });
  }, 30_000);
});
