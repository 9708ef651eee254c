/**
 * A fleet of three server processes on one database and one Redis: a board watched on all three is computed by one
 * of them (its leader) and the other two take its answer; a POST for the watched board, on any instance, reads no
 * row of the wager tables (MariaDB's per-table statistics, `userstat`, counted for this test's database alone); and
 * when the leader is killed (SIGKILL), the others take the board over within 2 s, every viewer left sees the next
 * change, and a viewer of the killed instance resumes on another one from its last version (Last-Event-ID).
 * Without Redis nothing is shared: test/e2e/freshness-across-instances.test.ts and the rest of the suite.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { createKey } from "../support/fixtures.js";
import { boardEvents, RawHttp1Stream, type RawReply } from "../support/live.js";
import {
  ingestClientOn,
  internalPortOf,
  type RedisProcess,
  type ServerProcess,
  startRedis,
  startServerProcess,
} from "../support/processes.js";

const TOKEN = "fleet-ingest-token-0123456789abcdef";
const NOW = Math.floor(Date.now() / 1000);
const MONTH_START = Date.UTC(new Date(NOW * 1000).getUTCFullYear(), new Date(NOW * 1000).getUTCMonth(), 1) / 1000;
const PERIOD = { startTimestamp: MONTH_START, endTimestamp: MONTH_START + 40 * 86_400 };
/** Another period of the same affiliate, watched by nobody. */
const UNWATCHED = { startTimestamp: MONTH_START, endTimestamp: MONTH_START + 39 * 86_400 };
const PLACED = Math.max(MONTH_START, NOW - 120);
const STREAM = `/top-affiliate-wagers-by-period/stream?startTimestamp=${PERIOD.startTimestamp}&endTimestamp=${PERIOD.endTimestamp}&numUsers=10`;
const WAGER_TABLES = ["wagers", "wager_hourly", "wager_daily", "wager_halfmonthly", "wager_monthly"];

interface Instance {
  readonly server: ServerProcess;
  readonly internalPort: number;
  readonly viewers: RawHttp1Stream[];
}

let database: TestDatabase;
let schema = "";
let redis: RedisProcess;
let instances: Instance[] = [];
let key = "";
let userstatBefore = 0;
let wagerNumber = 0;

async function metric(instance: Instance, series: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${instance.internalPort}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return Number(line?.split(" ")[1] ?? Number.NaN);
}

/** Board answers computed here (in full, or from the changed users) and taken from the leader. */
const computations = async (instance: Instance) => ({
  here:
    (await metric(instance, 'topwagers_board_computations_total{kind="full"}')) +
    (await metric(instance, 'topwagers_board_computations_total{kind="incremental"}')),
  remote: await metric(instance, 'topwagers_board_computations_total{kind="remote"}'),
});

/** Rows read from this database's wager tables since the server started counting (userstat). */
async function wagerRowsRead(): Promise<number> {
  const [rows] = await database.db.write.query(
    "SELECT COALESCE(SUM(ROWS_READ), 0) AS n FROM information_schema.TABLE_STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME IN (?)",
    [schema, WAGER_TABLES],
  );
  return Number((rows as { n: number | string }[])[0]?.n);
}

async function record(via: Instance, userId: string, amount: string): Promise<void> {
  wagerNumber += 1;
  await ingestClientOn(via.internalPort, TOKEN).recordWagers({
    wagers: [{ id: `fleet-w${wagerNumber}`, userId, amount, placedAt: BigInt(PLACED) }],
  });
}

async function post(instance: Instance, period: typeof PERIOD, numUsers: number): Promise<string> {
  const response = await fetch(`${instance.server.baseUrl}/top-affiliate-wagers-by-period`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ ...period, numUsers }),
  });
  expect(response.status).toBe(200);
  return response.text();
}

function watch(instance: Instance, lastEventId?: string): RawHttp1Stream {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (lastEventId !== undefined) headers["last-event-id"] = lastEventId;
  const viewer = new RawHttp1Stream(instance.server.port, STREAM, headers);
  instance.viewers.push(viewer);
  return viewer;
}

const lastBoard = (reply: RawReply) => boardEvents(reply).at(-1);
const totalOf = (board: { data: unknown } | undefined, username: string) =>
  (board?.data as { data: { username: string; totalWagered: number }[] } | undefined)?.data.find(
    (e) => e.username === username,
  )?.totalWagered;

/** Waits until the viewer's last board shows `username` with `total`; returns that board's id (version). */
function showing(viewer: RawHttp1Stream, username: string, total: number, timeoutMs = 5_000): Promise<string> {
  return viewer.until(
    (reply) => {
      const board = lastBoard(reply);
      return totalOf(board, username) === total ? board?.id : undefined;
    },
    timeoutMs,
    `${username} at ${total}`,
  );
}

async function startInstance(): Promise<Instance> {
  const server = await startServerProcess({
    DATABASE_URL: database.url,
    INGEST_TOKEN: TOKEN,
    REDIS_URL: redis.url,
    RATE_LIMIT_POINTS: "100000",
    STREAM_HEARTBEAT_S: "1",
  });
  return { server, internalPort: await internalPortOf(server), viewers: [] };
}

beforeAll(async () => {
  database = await createTestDatabase("fleet_boards");
  schema = new URL(database.url).pathname.slice(1);
  const [flag] = await database.db.write.query("SELECT @@GLOBAL.userstat AS on_");
  userstatBefore = Number((flag as { on_: number }[])[0]?.on_);
  await database.db.write.query("SET GLOBAL userstat = 1");
  redis = await startRedis();
  instances = await Promise.all([startInstance(), startInstance(), startInstance()]);
  key = (await createKey(database.db, "fleet-aff")).secret;
  await ingestClientOn(instances[0]?.internalPort ?? 0, TOKEN).upsertUsers({
    users: ["ann", "ben", "cat"].map((name) => ({ id: name, affiliateId: "fleet-aff", username: name, avatar: "" })),
  });
  await record(instances[0] as Instance, "ann", "100");
  await record(instances[0] as Instance, "ben", "50");
}, 60_000);

afterAll(async () => {
  for (const instance of instances) for (const viewer of instance.viewers) viewer.socket.destroy();
  await Promise.all(instances.map((instance) => instance.server.stop()));
  await redis?.stop();
  if (userstatBefore === 0) await database?.db.write.query("SET GLOBAL userstat = 0");
  await database?.drop();
});

describe("three instances with Redis", () => {
  let leader: Instance;
  let followers: Instance[] = [];

  it("compute a board watched on all three once, on one instance, and the others take its answer", async () => {
    // Every instance knows the other two (heartbeats every 250 ms).
    for (const instance of instances) {
      await expect.poll(() => metric(instance, "topwagers_fleet_members"), { timeout: 5_000 }).toBe(3);
      // The operator's line: one per change of the members, naming the fleet (by default a hash of the database).
      const line = await instance.server.waitForLog((l) => l.msg === "fleet members changed" && l.members === 3);
      expect(line.fleet).toMatch(/^[0-9a-f]{16}$/);
    }
    const viewers = instances.map((instance) => watch(instance));
    for (const viewer of viewers) await showing(viewer, "ann", 100);
    const before = await Promise.all(instances.map(computations));
    await record(instances[1] as Instance, "ben", "100"); // ben: 150, first
    const versions = await Promise.all(viewers.map((viewer) => showing(viewer, "ben", 150)));
    expect(new Set(versions).size).toBe(1);
    const after = await Promise.all(instances.map(computations));
    const here = after.map((a, i) => a.here - (before[i]?.here ?? 0));
    const remote = after.map((a, i) => a.remote - (before[i]?.remote ?? 0));
    // One computation in the whole fleet; the two other instances took it from the leader.
    expect(here.reduce((a, b) => a + b, 0)).toBe(1);
    const leaderIndex = here.indexOf(1);
    expect(remote.filter((_, i) => i !== leaderIndex)).toEqual([1, 1]);
    expect(remote[leaderIndex]).toBe(0);
    leader = instances[leaderIndex] as Instance;
    followers = instances.filter((_, i) => i !== leaderIndex);
    expect(await metric(leader, "topwagers_fleet_boards_led")).toBe(1);
    for (const follower of followers) expect(await metric(follower, "topwagers_fleet_boards_led")).toBe(0);
  });

  it("answers POSTs for the watched board on every instance without reading a wager row", async () => {
    const watchedBody = await post(leader, PERIOD, 10);
    const rowsBefore = await wagerRowsRead();
    for (const instance of instances) {
      for (const numUsers of [1, 3, 10, 100]) {
        const body = await post(instance, PERIOD, numUsers);
        if (numUsers >= 10) expect(body).toBe(watchedBody);
      }
    }
    expect(await wagerRowsRead()).toBe(rowsBefore);
    // The measure can fail: a board nobody watches is computed (by its leader), and reads rows.
    await post(followers[0] as Instance, UNWATCHED, 10);
    expect(await wagerRowsRead()).toBeGreaterThan(rowsBefore);
  });

  it("hands the board over within 2 s when its leader is killed; every viewer sees the next change and resumes", async () => {
    const orphan = leader.viewers[0] as RawHttp1Stream;
    const orphanVersion = lastBoard(orphan.reply as RawReply)?.id as string;
    const killedAt = performance.now();
    await leader.server.stop("SIGKILL", 5_000);
    for (const follower of followers) {
      await expect.poll(() => metric(follower, "topwagers_fleet_members"), { timeout: 2_000, interval: 50 }).toBe(2);
    }
    const handedOver = performance.now() - killedAt;
    expect(handedOver).toBeLessThanOrEqual(2_000);
    const takenOver = await Promise.all(followers.map((f) => metric(f, "topwagers_fleet_handovers_total")));
    expect(takenOver.reduce((a, b) => a + b, 0)).toBe(1);
    await record(followers[0] as Instance, "cat", "500"); // cat: first
    const versions = await Promise.all(
      followers.map((follower) => showing(follower.viewers[0] as RawHttp1Stream, "cat", 500, 3_000)),
    );
    expect(new Set(versions).size).toBe(1);
    // The killed instance's viewer reconnects to a survivor from its last version: it gets the board it missed.
    const resumed = watch(followers[1] as Instance, orphanVersion);
    expect(await showing(resumed, "cat", 500)).toBe(versions[0]);
    // One that already shows the current version gets no board until the next change, only heartbeats.
    const current = watch(followers[0] as Instance, versions[0]);
    await current.until((r) => (r.events.some((e) => e.comment === "heartbeat") ? true : undefined), 3_000);
    expect(boardEvents(current.reply as RawReply)).toEqual([]);
    await record(followers[1] as Instance, "ann", "1000");
    await showing(current, "ann", 1100);
  });
});
