/**
 * Read replicas: a GTID primary and a replica applying with MASTER_DELAY=2 s,
 * two server processes with DATABASE_READ_URL (A waits 500 ms for the replica
 * and so skips it after each write; B waits 3 s and so answers from the
 * caught-up replica). Ingest goes through A. Each instance's answers reach
 * the new totals and never go back; a new and a revoked key behave within 1 s
 * whatever the lag; a killed replica is skipped with no 5xx and used again
 * when back; with the primary killed, reads answer 200 and ingest answers
 * unavailable. A race frozen while replication is stopped holds a void committed on the primary
 * during its review (the freeze reads the primary); the stale replica alone would not have it, and the
 * live read through the replica rules skips it and answers with the void too.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mariadbIngest } from "../../src/ingest/sql/ingest-store.js";
import { type Database, openDatabase } from "../../src/platform/database/database.js";
import { runCli } from "../support/cli.js";
import { type NodeProcess, queryOne, Topology, until } from "../support/mariadb-topology.js";
import { ingestClientOn, internalPortOf, type ServerProcess, sleep } from "../support/processes.js";
import { instanceRaces, ok, raceNamed, raceTable } from "../support/races.js";

const exec = promisify(execFile);
const TOKEN = "replica-ingest-token-0123456789abcdef";
const DB = "tw_replicas";
const JAN = { startTimestamp: 1735689600, endTimestamp: 1738367999 };

let topology: Topology | undefined;
let primary: NodeProcess;
let replica: NodeProcess;
let a: ServerProcess;
let b: ServerProcess;
let key = "";

const DROP_ANONYMOUS = "SET sql_log_bin = 0; DROP USER IF EXISTS ''@'localhost'; SET sql_log_bin = 1;";

async function startReplication(): Promise<void> {
  const connection = await replica.admin();
  await connection.query(
    `CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=${primary.port}, MASTER_USER='repl',
       MASTER_PASSWORD='repl', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1, MASTER_DELAY=2;
     START SLAVE;`,
  );
  await connection.end();
  await until("replication running", async () => {
    const status = await queryOne(replica, "SHOW SLAVE STATUS");
    return status.Slave_IO_Running === "Yes" && status.Slave_SQL_Running === "Yes";
  });
}

async function startInstance(waitMs: number): Promise<ServerProcess> {
  return (topology as Topology).startServer({
    DATABASE_URL: primary.url("root", DB),
    DATABASE_READ_URL: replica.url("root", DB),
    DATABASE_REPLICA_WAIT_MS: String(waitMs),
    INGEST_TOKEN: TOKEN,
    RATE_LIMIT_POINTS: "1000000",
  });
}

let internalPortOfA = 0;

async function board(server: ServerProcess, apiKey = key, period: object = JAN): Promise<[number, string]> {
  const response = await fetch(`${server.baseUrl}/top-affiliate-wagers-by-period`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ ...period, numUsers: 10 }),
  });
  const body = (await response.json()) as { data?: { username: string; totalWagered: number }[] };
  return [response.status, JSON.stringify(body.data?.map((e) => [e.username, e.totalWagered]) ?? body)];
}

/** Calls until the key is accepted (within 5 s); returns when, after `since`, the first accepted call was sent. */
async function acceptedAfter(server: ServerProcess, key: string, since: number): Promise<number> {
  for (;;) {
    const sentAt = Date.now();
    const [status] = await board(server, key);
    if (status === 200) return sentAt - since;
    expect(status).toBe(401);
    if (Date.now() - since > 5_000) throw new Error("the key was not accepted within 5 s");
    await sleep(50);
  }
}

beforeAll(async () => {
  const pair = new Topology("replicas");
  topology = pair;
  await pair.install("primary");
  await exec("cp", ["-a", pair.dir("primary"), pair.dir("replica")]);
  await pair.giveToMysql();
  primary = await pair.node("primary", ["--server-id=1", "--log-bin=mysql-bin", "--binlog-format=ROW"]);
  replica = await pair.node("replica", [
    "--server-id=2",
    "--skip-log-bin",
    "--relay-log=relay-bin",
    "--read-only=1",
    "--skip-slave-start",
  ]);
  await Promise.all([primary.start(), replica.start()]);
  const p = await primary.admin();
  await p.query(
    `${DROP_ANONYMOUS} SET sql_log_bin = 0; CREATE USER 'repl'@'127.0.0.1' IDENTIFIED BY 'repl';
     GRANT REPLICATION SLAVE ON *.* TO 'repl'@'127.0.0.1'; SET sql_log_bin = 1;`,
  );
  await p.end();
  const r = await replica.admin();
  await r.query(DROP_ANONYMOUS.replaceAll("SET sql_log_bin = 0;", "").replaceAll("SET sql_log_bin = 1;", ""));
  await r.end();
  await startReplication();
  a = await startInstance(500); // creates the database and migrates on the primary
  b = await startInstance(3_000);
  internalPortOfA = await internalPortOf(a);
  const created = await runCli(["keys", "create", "--affiliate", "aff-r", "--json"], primary.url("root", DB));
  expect(created.code).toBe(0);
  key = String((JSON.parse(created.stdout) as { key: string }).key);
  await ingestClientOn(internalPortOfA, TOKEN).upsertUsers({
    users: [
      { id: "u-1", affiliateId: "aff-r", username: "alice", avatar: "" },
      { id: "u-2", affiliateId: "aff-r", username: "bob", avatar: "" },
    ],
  });
}, 90_000);

afterAll(async () => {
  await topology?.remove();
}, 60_000);

describe("primary + replica with MASTER_DELAY=2", () => {
  it("a new key works on both instances within 1 s although the replica lags", async () => {
    const created = await runCli(["keys", "create", "--affiliate", "aff-r", "--json"], primary.url("root", DB));
    const fresh = String((JSON.parse(created.stdout) as { key: string }).key);
    const since = Date.now();
    for (const server of [a, b]) {
      // Keys come from the primary: what counts is when the first accepted call was sent (the answer itself may
      // wait up to DATABASE_REPLICA_WAIT_MS for the lagging replica).
      expect(await acceptedAfter(server, fresh, since)).toBeLessThan(1_000);
    }
  });

  it("after each write, both instances reach the new totals and never go back", async () => {
    const batches = [
      [{ id: "w-1", userId: "u-1", amount: "10.10", placedAt: 1735689600n }],
      [{ id: "w-2", userId: "u-2", amount: "12.00", placedAt: 1735689700n }],
      [{ id: "w-3", userId: "u-1", amount: "5.25", placedAt: 1735689800n }],
    ];
    const expected = [
      JSON.stringify([["alice", 10.1]]),
      JSON.stringify([
        ["bob", 12],
        ["alice", 10.1],
      ]),
      JSON.stringify([
        ["alice", 15.35],
        ["bob", 12],
      ]),
    ];
    const seen: Record<string, string[]> = { a: [], b: [] };
    await caughtUp();
    await sleep(2_100); // past the skip window of anything before
    const skipsBefore = { a: skips(a), b: skips(b) };
    for (const [step, batch] of batches.entries()) {
      await ingestClientOn(internalPortOfA, TOKEN).recordWagers({ wagers: batch });
      const since = Date.now();
      const reached = await Promise.all(
        [a, b].map(async (server, index) => {
          const name = index === 0 ? "a" : "b";
          for (;;) {
            const [status, answer] = await board(server);
            expect(status).toBe(200);
            seen[name]?.push(answer);
            if (answer === expected[step]) return Date.now() - since;
            if (Date.now() - since > 6_000) throw new Error(`${name} stuck at ${answer}`);
            await sleep(50);
          }
        }),
      );
      console.log(
        `write ${step + 1}: visible on A (waits 500 ms) after ${reached[0]} ms, on B (waits 3 s) after ${reached[1]} ms`,
      );
    }
    // A (waits 500 ms < 2 s lag) skipped the replica after each write and answered from the
    // primary (then left it alone for 2 s); B (waits 3 s) waited for the replica and never skipped it.
    expect(skips(a) - skipsBefore.a).toBeGreaterThanOrEqual(1);
    expect(skips(b) - skipsBefore.b).toBe(0);
    // Never back: every answer an instance gave is one of the expected states, in order.
    for (const name of ["a", "b"]) {
      const order = (seen[name] ?? []).map((answer) => [JSON.stringify([]), ...expected].indexOf(answer));
      expect(order.every((index) => index >= 0)).toBe(true);
      expect(order).toEqual([...order].sort((x, y) => x - y));
    }
  });

  it("a key revoked on the primary is refused by both instances within 1 s", async () => {
    const created = await runCli(["keys", "create", "--affiliate", "aff-r", "--json"], primary.url("root", DB));
    const { id, key: doomed } = JSON.parse(created.stdout) as { id: string; key: string };
    const since = Date.now();
    for (const server of [a, b]) expect(await acceptedAfter(server, doomed, since)).toBeLessThan(1_000);
    const revoked = await runCli(["keys", "revoke", id], primary.url("root", DB));
    expect(revoked.code).toBe(0);
    // A call may take up to the replica wait, so polling cannot time the flip finely: 1 s after the revocation
    // returned, both refuse it (a refusal needs no database: it answers at once).
    await sleep(1_000);
    for (const server of [a, b]) expect((await board(server, doomed))[0]).toBe(401);
  });

  it("a race frozen while replication is stopped holds a void committed on the primary during review", async () => {
    // A period after the servers' real clock: only the instances here, with their own clock, move this race.
    const START = Date.UTC(new Date().getUTCFullYear() + 4, 0, 1) / 1000; // 1 January, four years ahead
    const END = START + 86_399;
    const REVIEW = 600;
    let now = START - 100;
    const skipped: string[] = [];
    const dbs: Database[] = [];
    const open = async (options: Parameters<typeof openDatabase>[0]) => {
      const db = await openDatabase(options);
      dbs.push(db);
      return db;
    };
    const racesOn = (db: Database) => instanceRaces(db, { now: () => now, boards: db.leaderboard });
    let stopped = false;
    try {
      // The app's rules: the primary plus the replica for leaderboard reads, waiting at most 500 ms for it.
      const app = await open({
        url: primary.url("root", DB),
        readUrls: [replica.url("root", DB)],
        replicaWaitMs: 500,
        poolSize: 4,
        onEvent: (event) => skipped.push(event),
      });
      // The replica alone, as a read with no position to wait for would see it.
      const replicaOnly = await open({ url: replica.url("root", DB), poolSize: 2 });
      const races = racesOn(app);
      const ingestStore = mariadbIngest(app.write);
      await ingestStore.upsertUsers([
        { id: "rr-1", affiliateId: "aff-race", username: "carol", avatar: "" },
        { id: "rr-2", affiliateId: "aff-race", username: "dave", avatar: "" },
      ]);
      expect(
        await ingestStore.recordWagers([
          { id: "rrw-1", userId: "rr-1", amount: "30.50", placedAt: START + 10 },
          { id: "rrw-2", userId: "rr-2", amount: "20.00", placedAt: START + 20 },
          { id: "rrw-3", userId: "rr-1", amount: "15.00", placedAt: START + 30 },
        ]),
      ).toEqual({ kind: "recorded", recorded: 3, duplicates: 0 });
      const affiliate = await queryOne(primary, `SELECT id FROM ${DB}.affiliates WHERE external_id = 'aff-race'`);
      const affiliateId = Number(affiliate.id);
      const race = ok(
        await races.create(
          affiliateId,
          raceNamed("replica-race", "Replica race", [START, END], {
            prizes: ["10.00", "5.00"],
            reviewSeconds: REVIEW,
          }),
        ),
      );
      // The replica has everything so far, then stops applying.
      await caughtUp();
      const r = await replica.admin();
      await r.query("STOP SLAVE");
      await r.end();
      stopped = true;
      const skipsAtStop = skipped.filter((event) => event === "read replica skipped").length;
      now = END + 10;
      const before = [
        [1, "carol", "45.5", "10.00"],
        [2, "dave", "20", "5.00"],
      ];
      expect(raceTable(ok(await races.get(affiliateId, race.race.id)))).toEqual(before);
      // During review a void is committed on the primary; the stopped replica never sees it.
      expect(await ingestStore.voidWagers(["rrw-3"])).toMatchObject({ voided: 1 });
      const after = [
        [1, "carol", "30.5", "10.00"],
        [2, "dave", "20", "5.00"],
      ];
      expect(raceTable(ok(await racesOn(replicaOnly).get(affiliateId, race.race.id)))).toEqual(before);
      // A live read through the app answers from the primary, the void there too: the stopped replica, which
      // never catches up, was skipped by this read or by one less than retryAfterMs (2 s) before it (a skipped
      // replica is left alone that long), never used (it would answer `before`).
      const live = ok(await races.get(affiliateId, race.race.id));
      expect([live.state, raceTable(live)]).toEqual(["reviewing", after]);
      expect(skipped.filter((event) => event === "read replica skipped").length).toBeGreaterThan(skipsAtStop);
      // The freeze reads the primary: the void is in the frozen result.
      now = END + REVIEW + 1;
      expect((await races.tick()).frozen).toBe(1);
      const frozen = ok(await races.get(affiliateId, race.race.id));
      expect([frozen.state, frozen.race.frozenAt, raceTable(frozen)]).toEqual(["final", END + REVIEW + 1, after]);
      const rows = await queryOne(
        primary,
        `SELECT GROUP_CONCAT(rr.username, ':', rr.total ORDER BY rr.position) AS result
           FROM ${DB}.race_results rr JOIN ${DB}.races r ON r.id = rr.race_id WHERE r.public_id = ?`,
        [race.race.id],
      );
      expect(String(rows.result)).toBe("carol:30.50000000,dave:20.00000000");
    } finally {
      if (stopped) {
        const r = await replica.admin();
        await r.query("START SLAVE");
        await r.end();
      }
      await Promise.all(dbs.map((db) => db.close()));
    }
  }, 60_000);

  it("a killed replica is skipped with no 5xx, and used again once it is back", async () => {
    await caughtUp();
    await replica.kill();
    const statuses: number[] = [];
    const until5s = Date.now() + 5_000;
    let period = 0;
    while (Date.now() < until5s) {
      for (const server of [a, b]) {
        // A new period each time: a cache miss, so the database is asked.
        statuses.push((await board(server, key, { ...JAN, endTimestamp: JAN.endTimestamp - ++period }))[0]);
      }
    }
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    // The skips are counted for operators.
    const metrics = await (await fetch(`http://127.0.0.1:${internalPortOfA}/metrics`)).text();
    const skipped = Number(/^topwagers_db_events_total\{event="replica_skipped"\} (\d+)$/m.exec(metrics)?.[1] ?? 0);
    expect(skipped).toBeGreaterThan(0);
    await replica.start();
    const r = await replica.admin();
    await r.query("START SLAVE");
    await r.end();
    const back = Date.now();
    const selects = async () => Number((await queryOne(replica, "SHOW GLOBAL STATUS LIKE 'Com_select'")).Value);
    const before = await selects();
    await until(
      "the replica answers leaderboard queries again",
      async () => {
        await board(b, key, { ...JAN, endTimestamp: JAN.endTimestamp - ++period });
        return (await selects()) > before;
      },
      8_000,
    );
    console.log(`replica used again ${Date.now() - back} ms after it accepted logins`);
  });

  it("with the primary killed, reads answer 200 from the replica and ingest answers unavailable", async () => {
    await caughtUp();
    await primary.kill();
    const since = Date.now();
    let period = 1000;
    for (const server of [a, b]) {
      const [status, answer] = await board(server, key, { ...JAN, endTimestamp: JAN.endTimestamp - ++period });
      expect([status, answer]).toEqual([200, expected3()]);
    }
    expect((await board(a))[0]).toBe(200);
    const failure = await ingestClientOn(internalPortOfA, TOKEN)
      .recordWagers({ wagers: [{ id: "w-9", userId: "u-1", amount: "1", placedAt: 1735689900n }] })
      .then(
        () => undefined,
        (error: unknown) => ConnectError.from(error).code,
      );
    expect(failure).toBe(Code.Unavailable);
    console.log(`primary down: reads answered 200 from the replica ${Date.now() - since} ms after the kill`);
  });
});

function skips(server: ServerProcess): number {
  return server.logs.filter((line) => line.msg === "read replica skipped").length;
}

/** Waits until the replica has applied everything the primary has committed so far. */
async function caughtUp(): Promise<void> {
  const position = String((await queryOne(primary, "SELECT @@global.gtid_binlog_pos AS p")).p);
  const waited = await queryOne(replica, "SELECT MASTER_GTID_WAIT(?, 10) AS r", [position]);
  expect(Number(waited.r)).toBe(0);
}

function expected3(): string {
  return JSON.stringify([
    ["alice", 15.35],
    ["bob", 12],
  ]);
}
