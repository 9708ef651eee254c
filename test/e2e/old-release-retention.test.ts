/**
 * Retention beside the real older releases (issue 47, items 1 and 2): each one built from its commit
 * (support/old-release.ts: 0.1.0 db9b50e, 0.2.0 b23d45e, 0.3.0 ff1c643, 0.4.0 c718237) and run as a process on the
 * same MariaDB and Redis as this build, with retention on (30 days of raw wagers).
 *
 * While 0.1.0 serves from the database (it registers nothing and cannot read a horizon), this build's retention
 * records no horizon and deletes nothing: a warn line names the connections, topwagers_retention_blocked
 * {reason="unregistered_clients"} is 1, `topwagers instances` exits 1. Both answer a 40-day-old period that needs
 * raw wagers with the same 200. Once 0.1.0 stops, the first horizon is recorded: this build refuses the period
 * (its cached 200 dropped) with "will be deleted", and with "were deleted" once the wagers are gone. Then 0.1.0
 * cannot start on the database (`Table 'affiliates' already exists`), or starts without migrating and is never
 * ready (503 migrations_pending, schema 0), and this build answers none of 20 pruned periods with 200 while it runs
 * on the same Redis fleet name; 0.2.0, 0.3.0 and 0.4.0 are refused likewise (0.3.0, and 0.4.0 once this build's
 * release is newer, by the release floor).
 */
import { spawn } from "node:child_process";
import type { RowDataPacket } from "mysql2/promise";
import semver from "semver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Heartbeat, startInstanceHeartbeat } from "../../src/jobs/instance-heartbeat.js";
import { createLogger } from "../../src/platform/logger.js";
import { LATEST_SCHEMA_VERSION } from "../../src/schema/schema-migrations.js";
import { DAY, dayStart } from "../../src/values/calendar.js";
import { type CliResult, closed, collectOutput, runCli } from "../support/cli.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { addBoard, createKey } from "../support/fixtures.js";
import { MOVED_CLOCK } from "../support/moved-clock.js";
import { OLD_RELEASES, type OldRelease, oldRelease } from "../support/old-release.js";
import { freePort, internalPortOf, type ServerProcess, sleep, startServerProcess } from "../support/processes.js";
import { RELEASE } from "../support/release.js";
import { errorBody, restTop } from "../support/rest.js";

const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
const AVATAR = "https://img.example.test/o.png";
const NOW = Math.floor(Date.now() / 1000);
/** 40 days ago, 00:00 UTC: 10 days before the 30-day horizon. */
const OLD_DAY = dayStart(NOW) - 40 * DAY;
const HORIZON = dayStart(NOW - 30 * DAY);
/** 00:30 to 00:59:59 of that day: it starts inside an hour, so it needs the raw wagers. */
const PERIOD = { startTimestamp: OLD_DAY + 1800, endTimestamp: OLD_DAY + 3599, numUsers: 10 };
const ANSWERED = {
  status: 200,
  json: {
    data: [
      { username: "ann", avatar: AVATAR, totalWagered: 7.25 },
      { username: "bob", avatar: AVATAR, totalWagered: 3 },
    ],
    errors: null,
  },
};
const refusal = (deleted: string) => ({
  status: 400,
  json: errorBody({
    code: "out_of_range",
    message:
      `this period needs raw wagers from before the retention horizon ${new Date(HORIZON * 1000).toISOString().slice(0, 10)} ` +
      `UTC (Unix time ${HORIZON}) and those ${deleted}. Before the horizon a period must start and end on whole UTC hours`,
  }),
});

let database: TestDatabase;
/** This test's own connections, registered as a CLI command's are (else they would keep retention waiting). */
let registered: Heartbeat | undefined;
let key: string;
const releases = new Map<string, OldRelease>();
const fleetName = `old-release-${process.pid}`;
const running: ServerProcess[] = [];

/** This build's server, or an older release's (`release`), on the test's database, Redis and fleet name. */
async function server(env: Record<string, string>, release?: OldRelease): Promise<ServerProcess> {
  const started = await startServerProcess(
    { DATABASE_URL: database.url, REDIS_URL, FLEET_NAME: fleetName, ...env },
    release === undefined ? {} : { entry: release.entry },
  );
  running.push(started);
  return started;
}

/** An older release's `serve` that is expected to stop: its exit code and the `msg` of its fatal (level 60) lines. */
async function refusedStart(
  release: OldRelease,
  env: Record<string, string>,
): Promise<{ code: number | null; fatal: string[] }> {
  const child = spawn(process.execPath, [release.entry], {
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      ...MOVED_CLOCK,
      DATABASE_URL: database.url,
      PORT: String(await freePort()),
      INTERNAL_PORT: String(await freePort()),
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const killer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const result: CliResult = await closed(child, collectOutput(child)).finally(() => clearTimeout(killer));
  const fatal = result.stderr
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as { level: number; msg: string })
    .filter((line) => line.level === 60)
    .map((line) => line.msg);
  return { code: result.code, fatal };
}

async function board(on: ServerProcess, body: object = PERIOD) {
  const reply = await restTop(on.baseUrl, key, body);
  return { status: reply.status, json: reply.json };
}

async function readyz(on: ServerProcess) {
  const reply = await fetch(`${on.baseUrl}/readyz`);
  return { status: reply.status, body: (await reply.json()) as Record<string, unknown> };
}

/** One series of the server's /metrics by its full name with labels. */
async function metric(on: ServerProcess, series: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${await internalPortOf(on)}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? Number.NaN : Number(line.split(" ")[1]);
}

async function query(sql: string): Promise<unknown[]> {
  const [rows] = await database.db.write.query<RowDataPacket[]>(sql);
  return rows.map((r) => ({ ...r }));
}

beforeAll(async () => {
  for (const version of Object.keys(OLD_RELEASES) as (keyof typeof OLD_RELEASES)[]) {
    const release = await oldRelease(version);
    releases.set(version, release);
    // What building it costs (first run on a machine; later runs find it built).
    if (release.built !== undefined)
      console.log(`built ${version}: npm ci ${release.built.install} s, transpile ${release.built.transpile} s`);
  }
  database = await createTestDatabase("old_release");
  registered = startInstanceHeartbeat({
    database: database.db,
    role: "cli",
    keys: { seals: "", opens: [] },
    logger: createLogger("silent"),
    everyMs: 1_000,
  });
  key = (await createKey(database.db, "aff-o")).secret;
  await addBoard(database.db, "aff-o", [
    ["o-1", "ann", AVATAR, ["7.25", OLD_DAY + 2400], ["1", NOW - DAY]],
    ["o-2", "bob", AVATAR, ["3", OLD_DAY + 2700]],
  ]);
}, 600_000);

afterAll(async () => {
  await Promise.all(running.map((s) => s.stop().catch(() => undefined)));
  await registered?.stop();
  await database?.drop();
}, 60_000);

const release = (version: string) => releases.get(version) as OldRelease;

describe("retention beside the real older releases", () => {
  let current: ServerProcess;

  it("0.1.0 connected: nothing is pruned, both answer the same; stopped: the horizon holds, cached answers go", async () => {
    const old = await server({}, release("0.1.0"));
    current = await server({ WAGER_RETENTION_DAYS: "30", RETENTION_EVERY_S: "1" });
    // 0.1.0 reads the newest version recorded in schema_migrations, this build's latest, and serves beside it.
    expect(await readyz(old)).toEqual({ status: 200, body: { status: "ready", schemaVersion: LATEST_SCHEMA_VERSION } });
    expect(await board(old)).toEqual(ANSWERED);
    expect(await board(current)).toEqual(ANSWERED);

    const waited = await current.waitForLog((l) => l.msg.startsWith("retention: nothing pruned:"), 30_000);
    expect(waited.level).toBe(40);
    expect(waited.msg).toMatch(
      /^retention: nothing pruned: \d+ connection\(s\) to this database belong to no registered instance \(an older release, which cannot read the retention horizon, or another client\): /,
    );
    expect(await metric(current, 'topwagers_retention_blocked{reason="unregistered_clients"}')).toBe(1);
    const listed = await runCli(["instances"], database.url);
    expect(listed.code).toBe(1);
    expect(listed.stdout.split("\n")[0]).toMatch(/^ID +ROLE +RELEASE +COMMIT +HOST +PID +STARTED +SEEN +HORIZONS$/);
    expect(listed.stdout).toMatch(new RegExp(`\\n[0-9a-f]{24} +serve +${RELEASE.version.replaceAll(".", "\\.")} `));
    expect(listed.stdout).toMatch(/\n\d+ connection\(s\) to this database belong to no registered instance/);
    expect(await query("SELECT kind, horizon FROM retention_horizons WHERE kind = 'wagers'")).toEqual([
      { kind: "wagers", horizon: 0 },
    ]);
    expect(await board(current)).toEqual(ANSWERED); // cached now, settled: kept an hour

    await old.stop();
    await current.waitForLog((l) => l.msg.startsWith("retention: the first horizon is recorded"), 30_000);
    const seen = new Set<number>();
    for (const deadline = Date.now() + 15_000; Date.now() < deadline; await sleep(200)) {
      const answer = await board(current);
      seen.add(answer.status);
      if (answer.status !== 200) {
        expect(answer).toEqual(refusal("will be deleted"));
        break;
      }
      expect(answer).toEqual(ANSWERED);
    }
    expect([...seen].pop()).toBe(400);
    expect(await query("SELECT version FROM schema_migrations")).toEqual([{ version: 0 }]);
    expect(await query("SELECT oldest_release, set_by_migration FROM schema_release_floor")).toEqual([
      { oldest_release: RELEASE.version, set_by_migration: 17 },
    ]);
    expect((await runCli(["instances"], database.url)).code).toBe(0);

    // A minute later, as far as the grace is concerned: the wagers before the horizon go.
    await database.db.write.query("UPDATE retention_horizons SET moved_at = moved_at - 61 WHERE kind = 'wagers'");
    await current.waitForLog(
      (l) => l.msg === "retention: raw wagers and hourly rows before the horizon deleted",
      30_000,
    );
    expect(await query(`SELECT COUNT(*) AS n FROM wagers WHERE placed_at < ${HORIZON}`)).toEqual([{ n: "0" }]);
    // Its next heartbeat reads that the rows are going (the pruned mark): "were deleted" from then on.
    let last = await board(current);
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(200)) {
      last = await board(current);
      if (JSON.stringify(last) !== JSON.stringify(refusal("will be deleted"))) break;
    }
    expect(last).toEqual(refusal("were deleted"));
  }, 120_000);

  it("0.1.0 cannot start on the pruned database; started without migrating it is never ready, and the fleet refuses", async () => {
    expect(await refusedStart(release("0.1.0"), {})).toEqual({
      code: 1,
      fatal: ["could not start: Table 'affiliates' already exists"],
    });
    const old = await server({ MIGRATE_ON_START: "false" }, release("0.1.0"));
    expect(await readyz(old)).toEqual({
      status: 503,
      body: { status: "migrations_pending", schemaVersion: 0, expected: 12 },
    });
    // Twenty periods that need pruned raw wagers, asked of this build while 0.1.0 runs on the same Redis fleet name.
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) {
      const body = { startTimestamp: OLD_DAY + 60 + i * 600, endTimestamp: OLD_DAY + 86_399 - i * 60, numUsers: 10 };
      statuses.push((await board(current, body)).status);
    }
    expect(statuses).toEqual(Array(20).fill(400));
    await old.stop();
  }, 60_000);

  it("0.2.0, 0.3.0 and 0.4.0 are refused too", async () => {
    const floorRefusal = (version: string) =>
      `could not start: this release (${version}) is older than the oldest release this database's schema allows ` +
      `(${RELEASE.version}, set by migration 17): run ${RELEASE.version} or newer. Going back below it means ` +
      'restoring the backup taken before migration 17 (docs/operations.md, "Rolling back")';
    const tableExists = "could not start: Table 'affiliates' already exists";
    const refusedBy = (version: string) => (semver.lt(version, RELEASE.version) ? floorRefusal(version) : tableExists);
    expect(await refusedStart(release("0.2.0"), {})).toEqual({ code: 1, fatal: [tableExists] });
    expect(await refusedStart(release("0.3.0"), {})).toEqual({ code: 1, fatal: [refusedBy("0.3.0")] });
    expect(await refusedStart(release("0.4.0"), {})).toEqual({ code: 1, fatal: [refusedBy("0.4.0")] });
    expect(await refusedStart(release("0.3.0"), { MIGRATE_ON_START: "false" })).toEqual({
      code: 1,
      fatal: [floorRefusal("0.3.0")],
    });
  }, 120_000);
});
