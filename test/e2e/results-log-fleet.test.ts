/**
 * The results log across real processes (issue 46 part 2): two server processes on one database freeze races and run
 * their sequencers; one of them is stopped and started again while races end. Both serve one tree: the same
 * checkpoint, which Go's golang.org/x/mod/sumdb/note and tlog (test/support/go/tlogcheck.go, Debian's packages)
 * open with the verifier key, whose root they recompute from the tiles served, every entry's inclusion proved and
 * every tile rebuilt byte for byte; the checkpoint taken before the restart and more freezes is proved a prefix of
 * the one after, on each instance. Each race is logged once, indexes dense, each checkpoint signed within two
 * seconds of the freezes it holds. A copy of the log with one byte changed (a tile, a bundle, the checkpoint) fails.
 * `topwagers log verify` holds for the log, and names a result the database has that the log has not.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { useTestDatabase } from "../support/database.js";
import { NOV_1 } from "../support/dates.js";
import { addBoard, affiliateKey } from "../support/fixtures.js";
import { until } from "../support/polling.js";
import { type ServerProcess, startServerProcess } from "../support/processes.js";
import { instanceRaces, ok } from "../support/races.js";
import { activeSigningKey } from "../support/signed-races.js";
import { buildTlogcheck, mirrorLog, run } from "../support/tlogcheck.js";

const database = useTestDatabase("results_log_fleet");
const AFFILIATES = ["fleet-a", "fleet-b", "fleet-c"];
const env = () => ({
  DATABASE_URL: database.url,
  ISSUER: "https://casino.example",
  WEBHOOK_SECRET_KEY: "3c".repeat(32),
  RACE_CLOCK_MS: "200",
  LOG_SEQUENCE_MS: "200",
});
const dir = mkdtempSync(join(tmpdir(), "results-log-fleet-"));
let tlogcheck = "";
let made = 0;
const servers: ServerProcess[] = [];

/** `count` one-hour races of November 1st (past: the servers' clocks freeze them at once), over the affiliates. */
async function races(count: number): Promise<string[]> {
  const instance = instanceRaces(database.db, { now: () => NOV_1 - 100 });
  const ids: string[] = [];
  for (let i = 0; i < count; i++, made++) {
    const affiliate = await affiliateKey(database.db.read, AFFILIATES[made % 3] as string);
    const start = NOV_1 + made * 60;
    const race = ok(
      await instance.create(affiliate, {
        ...{ slug: `hour-${made}`, title: `Hour ${made}`, startTimestamp: start, endTimestamp: start + 3_599 },
        ...{ prizes: ["5.00"], reviewSeconds: 0 },
      }),
    );
    ids.push(race.race.id);
  }
  return ids;
}

/** The checkpoint `server` serves, once its tree holds `size` entries. */
async function checkpointOf(server: ServerProcess, size: number): Promise<string> {
  return until(
    `checkpoint of ${size} on ${server.baseUrl}`,
    async () => (await fetch(`${server.baseUrl}/log/checkpoint`)).text(),
    (text) => Number(text.split("\n")[1]) >= size,
    20_000,
  );
}

async function logRows(): Promise<{ idx: number; race: string }[]> {
  const [rows] = await database.db.read.query<RowDataPacket[]>(
    "SELECT idx, race_public_id FROM log_entries ORDER BY idx",
  );
  return rows.map((row) => ({ idx: Number(row.idx), race: String(row.race_public_id) }));
}

let vkey = "";

beforeAll(async () => {
  tlogcheck = await buildTlogcheck(join(dir, "go"));
  await activeSigningKey(database.db);
  for (const affiliate of AFFILIATES) await addBoard(database.db, affiliate, [["u1", "ann", "", ["10", NOV_1 + 5]]]);
  servers.push(await startServerProcess(env()), await startServerProcess(env()));
}, 120_000);

afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  rmSync(dir, { recursive: true, force: true });
});

describe("the log on two instances and a restart", () => {
  it("serves one tree on both instances, which Go checks entry by entry and tile by tile", async () => {
    await races(20);
    const [a, b] = servers as [ServerProcess, ServerProcess];
    const [onA, onB] = [await checkpointOf(a, 20), await checkpointOf(b, 20)];
    expect(onA).toBe(onB);
    vkey = (await (await fetch(`${b.baseUrl}/log/vkey`)).text()).trim();
    expect(vkey).toMatch(/^casino\.example\/topwagers\+[0-9a-f]{8}\+/);
    writeFileSync(join(dir, "checkpoint-20"), onA);
    const checked = await run(tlogcheck, ["log", `${a.baseUrl}/log`, vkey]);
    expect(checked.stderr).toBe("");
    const lines = checked.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { index?: number; entry?: string });
    const rows = await logRows();
    expect(lines.slice(1).map((l) => [l.index, JSON.parse(l.entry ?? "{}").raceId])).toEqual(
      rows.map((r) => [r.idx, r.race]),
    );
  });

  it("keeps one tree when an instance stops and starts again while races end: checkpoints consistent", async () => {
    const [a, b] = servers as [ServerProcess, ServerProcess];
    await a.stop();
    await races(16);
    await checkpointOf(b, 36);
    servers[0] = await startServerProcess(env());
    await races(10);
    const restarted = servers[0] as ServerProcess;
    const [onA, onB] = [await checkpointOf(restarted, 46), await checkpointOf(b, 46)];
    expect(Number(onA.split("\n")[1])).toBe(46);
    expect(onA).toBe(await (await fetch(`${b.baseUrl}/log/checkpoint`)).text());
    expect(onB.split("\n")[1]).toBe("46");
    for (const server of [restarted, b]) {
      const proof = await run(tlogcheck, ["consistency", `${server.baseUrl}/log`, vkey, join(dir, "checkpoint-20")]);
      expect(proof).toEqual({ code: 0, stdout: "consistent 20 -> 46\n", stderr: "" });
      const checked = await run(tlogcheck, ["log", `${server.baseUrl}/log`, vkey]);
      expect([checked.code, checked.stderr]).toEqual([0, ""]);
    }
  });

  it("logs each race once, at dense indexes, each in a checkpoint signed within two seconds of its freeze", async () => {
    const rows = await logRows();
    expect(rows.map((r) => r.idx)).toEqual(Array.from({ length: 46 }, (_, i) => i));
    expect(new Set(rows.map((r) => r.race)).size).toBe(46);
    const [late] = await database.db.read.query<RowDataPacket[]>(
      `SELECT e.idx, r.frozen_at,
              (SELECT MIN(c.signed_at) FROM log_checkpoints c WHERE c.tree_size > e.idx) AS signed_at
         FROM log_entries e JOIN races r ON r.public_id = e.race_public_id`,
    );
    const delays = late.map((row) => Number(row.signed_at) - Number(row.frozen_at));
    expect(Math.max(...delays)).toBeLessThanOrEqual(2);
    // Each size was signed once, ever, and every checkpoint is the tree of the entries below it (log verify).
    const [sizes] = await database.db.read.query<RowDataPacket[]>("SELECT tree_size FROM log_checkpoints");
    expect(new Set(sizes.map((s) => Number(s.tree_size))).size).toBe(sizes.length);
  });

  it("fails Go's check of a copy of the log with one byte changed in a tile, a bundle or the checkpoint", async () => {
    const copy = join(dir, "copy");
    const base = `${(servers[1] as ServerProcess).baseUrl}/log`;
    await mirrorLog(copy, 46, async (path) => new Uint8Array(await (await fetch(`${base}/${path}`)).arrayBuffer()));
    expect((await run(tlogcheck, ["log", copy, vkey])).code).toBe(0);
    for (const [file, at] of [
      ["tile/0/000.p/46", 200],
      ["tile/entries/000.p/46", 100],
      ["checkpoint", 27],
    ] as const) {
      const path = join(copy, file);
      const original = readFileSync(path);
      const changed = Buffer.from(original);
      changed[at] = (changed[at] as number) ^ 0x20;
      writeFileSync(path, changed);
      const checked = await run(tlogcheck, ["log", copy, vkey]);
      expect([file, checked.code]).toEqual([file, 1]);
      writeFileSync(path, original);
    }
  });

  it("topwagers log verify holds, and names a final result the log does not hold", async () => {
    const held = await runCli(["log", "verify", "--json"], database.url);
    expect(held.code).toBe(0);
    const report = JSON.parse(held.stdout) as Record<string, unknown>;
    expect(report).toMatchObject({ ok: true, entries: 46, finals: 46, treeSize: 46, racesChecked: 46, problems: [] });
    expect(report.verifierKey).toBe(vkey);
    // A race frozen behind the log's back, as a release without the log would freeze it (the servers stopped).
    await Promise.all(servers.map((server) => server.stop()));
    const [unlogged] = await races(1);
    const at = Math.floor(Date.now() / 1000); // after the log began: it should be logged
    await database.db.write.query("UPDATE races SET frozen_at = ?, digest = ? WHERE public_id = ?", [
      at,
      "a".repeat(64),
      unlogged,
    ]);
    const text = await runCli(["log", "verify"], database.url);
    expect(text.code).toBe(1);
    const when = new Date(at * 1000).toISOString();
    expect(text.stdout).toContain(`PROBLEM race ${unlogged} (final at ${when}): not in the log\n`);
    expect(text.stdout).toContain("1 problems");
  });
});
