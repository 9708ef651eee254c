/**
 * `seed` is deterministic and its bulk path writes exactly what the ingest
 * path writes; `verify` is clean on seeded data and reports each corrupted
 * rollup row (different, missing, superfluous) with exit status 1.
 */
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seedDatabase } from "../../src/cli/seed.js";
import { affiliateSizes } from "../../src/ingest/core/seed-data.js";
import { runCli } from "../support/cli.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { toPicoUnits, toUnits } from "../support/decimals.js";

const END = Date.UTC(2026, 10, 1, 5) / 1000; // 2026-11-01T05:00:00Z
const START = Date.UTC(2026, 8, 1, 5) / 1000; // two calendar months earlier
const SEED = ["seed", "--seed", "7", "--affiliates", "5", "--users", "300", "--wagers", "20000", "--months", "2"];
const ARGS = [...SEED, "--end", String(END)];

let record: TestDatabase;
let bulk: TestDatabase;
let inserts: TestDatabase;

/**
 * Every table's content by the platform's ids (creation times excepted), in key order. Internal keys of
 * wagers are left out: InnoDB allocates AUTO_INCREMENT values in blocks for INSERT … SELECT and LOAD DATA, so
 * their gaps differ between write paths.
 */
async function dump(database: TestDatabase): Promise<Record<string, unknown[]>> {
  const rollup = (table: string) =>
    `SELECT a.external_id AS affiliate, r.bucket, u.external_id AS user, r.total, r.wagers
       FROM ${table} r JOIN affiliates a ON a.id = r.affiliate_id JOIN users u ON u.id = r.user_id
      ORDER BY a.external_id, r.bucket, u.external_id`;
  const queries: Record<string, string> = {
    affiliates: "SELECT external_id FROM affiliates ORDER BY external_id",
    users: `SELECT u.external_id, a.external_id AS affiliate, u.username, u.avatar_url
              FROM users u JOIN affiliates a ON a.id = u.affiliate_id ORDER BY u.external_id`,
    wagers: `SELECT w.external_id, u.external_id AS user, a.external_id AS affiliate, w.amount, w.placed_at
               FROM wagers w JOIN users u ON u.id = w.user_id JOIN affiliates a ON a.id = w.affiliate_id
              ORDER BY w.external_id`,
    wager_hourly: rollup("wager_hourly"),
    wager_daily: rollup("wager_daily"),
    wager_halfmonthly: rollup("wager_halfmonthly"),
    wager_monthly: rollup("wager_monthly"),
  };
  const out: Record<string, unknown[]> = {};
  for (const [table, sql] of Object.entries(queries)) out[table] = (await database.db.read.query(sql))[0] as unknown[];
  return out;
}

async function one(database: TestDatabase, sql: string): Promise<RowDataPacket> {
  const [rows] = await database.db.read.query<RowDataPacket[]>(sql);
  return rows[0] as RowDataPacket;
}

beforeAll(async () => {
  [record, bulk, inserts] = await Promise.all([
    createTestDatabase("seed_record"),
    createTestDatabase("seed_bulk"),
    createTestDatabase("seed_inserts"),
  ]);
});

afterAll(async () => {
  await Promise.all([record?.drop(), bulk?.drop(), inserts?.drop()]);
});

describe("seed", () => {
  it("writes the same tables through the ingest path, LOAD DATA and multi-row INSERTs", async () => {
    const [viaRecord, viaBulk] = await Promise.all([
      runCli([...ARGS, "--method", "record"], record.url),
      runCli([...ARGS, "--method", "bulk"], bulk.url),
    ]);
    expect(viaRecord.code).toBe(0);
    expect(viaRecord.stdout).toMatch(
      /^Seeded 5 affiliates, 300 users and 20,000 wagers \(20,000 new, 0 already there\) by record in \d+:\d\d\.\n/,
    );
    expect(viaRecord.stdout).toContain(
      `Same data again: npm run cli -- seed --seed 7 --affiliates 5 --users 300 --wagers 20000 --months 2 --end ${END} --prefix s7-\n`,
    );
    expect(viaBulk.code).toBe(0);
    expect(viaBulk.stdout).toMatch(/ by bulk \(load-data\) in /);
    await seedDatabase(
      inserts.db,
      { seed: 7, affiliates: 5, users: 300, wagers: 20_000, months: 2, end: END, prefix: "s7-" },
      { method: "bulk", bulkLoad: "insert" },
    );
    const expected = await dump(record);
    expect(expected.wagers).toHaveLength(20_000);
    expect(await dump(bulk)).toEqual(expected);
    expect(await dump(inserts)).toEqual(expected);
  });

  it("has the research's shape: Zipf-like affiliates, 8-decimal amounts within the window", async () => {
    const [sizes] = await record.db.read.query<RowDataPacket[]>(
      "SELECT a.external_id AS affiliate, COUNT(*) AS n FROM users u JOIN affiliates a ON a.id = u.affiliate_id GROUP BY a.id ORDER BY n DESC",
    );
    expect(sizes.map((r) => [r.affiliate, Number(r.n)])).toEqual(
      affiliateSizes(5, 300).map((n, i) => [`s7-aff-${i + 1}`, n]),
    );
    expect(affiliateSizes(2000)[0]).toBe(100_000);
    expect(affiliateSizes(2000).reduce((a, b) => a + b, 0)).toBe(590_835);
    const range = await one(
      record,
      "SELECT MIN(placed_at) AS first, MAX(placed_at) AS last, MIN(amount) AS least, MAX(amount) AS most FROM wagers",
    );
    expect(Number(range.first)).toBeGreaterThanOrEqual(START);
    expect(Number(range.last)).toBeLessThan(END);
    expect(Number(range.least)).toBeGreaterThanOrEqual(0.01);
    expect(Number(range.most)).toBeLessThanOrEqual(1_000_000);
    const odd = await one(record, "SELECT COUNT(*) AS n FROM wagers WHERE amount * 100 <> FLOOR(amount * 100)");
    expect(Number(odd.n)).toBeGreaterThan(19_000); // sub-cent digits are used, not just cents
  });

  it("changes nothing when run again with the same options", async () => {
    const before = await dump(bulk);
    const again = await runCli([...ARGS, "--method", "bulk"], bulk.url);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/\(0 new, 20,000 already there\) by bulk \(load-data\)/);
    expect(await dump(bulk)).toEqual(before);
  });

  it("refuses an end in the future and bad options with a usage error", async () => {
    const future = await runCli([...SEED, "--end", String(Math.floor(Date.now() / 1000) + 3600)], record.url);
    expect(future.code).toBe(2);
    expect(future.stderr).toContain("--end must not lie more than 5 minutes in the future");
    const typo = await runCli(["seed", "--wager", "10"], record.url);
    expect(typo.code).toBe(2);
  });
});

describe("verify", () => {
  it("is clean on seeded data", async () => {
    const rows = await one(
      record,
      `SELECT (SELECT COUNT(*) FROM wager_hourly) AS h, (SELECT COUNT(*) FROM wager_daily) AS d,
              (SELECT COUNT(*) FROM wager_halfmonthly) AS hm, (SELECT COUNT(*) FROM wager_monthly) AS m`,
    );
    const result = await runCli(["verify"], record.url);
    expect(result.code).toBe(0);
    const n = (v: unknown) => Number(v).toLocaleString("en-US");
    expect(result.stdout).toMatch(
      new RegExp(
        `^verify OK: ${n(rows.h)} hourly, ${n(rows.d)} daily, ${n(rows.hm)} half-month and ${n(rows.m)} monthly rows all equal the totals of 20,000 raw wagers \\(checked in \\d+:\\d\\d\\)\\.\\n$`,
      ),
    );
  });

  it("reports a changed, a missing and a superfluous rollup row and exits 1", async () => {
    const daily = await one(
      record,
      `SELECT r.affiliate_id, r.bucket, r.user_id, r.total, r.weighted_total, r.wagers, a.external_id AS affiliate,
              u.external_id AS user
         FROM wager_daily r JOIN affiliates a ON a.id = r.affiliate_id JOIN users u ON u.id = r.user_id
        ORDER BY r.affiliate_id, r.bucket, r.user_id LIMIT 1`,
    );
    const monthly = await one(
      record,
      `SELECT r.affiliate_id, r.bucket, r.user_id, r.total, r.weighted_total, r.wagers, a.external_id AS affiliate,
              u.external_id AS user
         FROM wager_monthly r JOIN affiliates a ON a.id = r.affiliate_id JOIN users u ON u.id = r.user_id
        ORDER BY r.affiliate_id DESC, r.bucket DESC, r.user_id DESC LIMIT 1`,
    );
    const write = record.db.write;
    await write.query(
      "UPDATE wager_daily SET total = total + 0.00000001 WHERE affiliate_id = ? AND bucket = ? AND user_id = ?",
      [daily.affiliate_id, daily.bucket, daily.user_id],
    );
    await write.query("DELETE FROM wager_monthly WHERE affiliate_id = ? AND bucket = ? AND user_id = ?", [
      monthly.affiliate_id,
      monthly.bucket,
      monthly.user_id,
    ]);
    await write.query(
      "INSERT INTO wager_hourly (affiliate_id, bucket, user_id, total, wagers) VALUES (?, 3600, ?, 5, 1)",
      [daily.affiliate_id, daily.user_id],
    );

    const result = await runCli(["verify"], record.url);
    expect(result.code).toBe(1);
    const iso = (bucket: unknown) => new Date(Number(bucket) * 1000).toISOString();
    const units = toUnits(String(daily.total)) + 1n;
    const bumped = `${units / 100_000_000n}.${(units % 100_000_000n).toString().padStart(8, "0")}`;
    // The weighted total is shown where the seed's weights make it differ; a bumped total bumps it too.
    const weighted = (row: Record<string, unknown>) =>
      toPicoUnits(String(row.weighted_total)) === toUnits(String(row.total)) * 10_000n
        ? ""
        : ` (weighted ${row.weighted_total})`;
    const pico = toPicoUnits(String(daily.weighted_total)) + 10_000n;
    const bumpedWeighted = `${pico / 10n ** 12n}.${(pico % 10n ** 12n).toString().padStart(12, "0")}`;
    expect(weighted(daily)).not.toBe("");
    expect(result.stdout.split("\n").filter((line) => line.startsWith("MISMATCH"))).toEqual([
      `MISMATCH hourly affiliate "${daily.affiliate}" user "${daily.user}" bucket 3600 (1970-01-01T01:00:00.000Z): raw wagers give no row, rollup has total 5.00000000 in 1 wagers`,
      `MISMATCH daily affiliate "${daily.affiliate}" user "${daily.user}" bucket ${daily.bucket} (${iso(daily.bucket)}): raw wagers give total ${daily.total}${weighted(daily)} in ${daily.wagers} wagers, rollup has total ${bumped} (weighted ${bumpedWeighted}) in ${daily.wagers} wagers`,
      `MISMATCH monthly affiliate "${monthly.affiliate}" user "${monthly.user}" bucket ${monthly.bucket} (${iso(monthly.bucket)}): raw wagers give total ${monthly.total}${weighted(monthly)} in ${monthly.wagers} wagers, rollup has no row`,
    ]);
    expect(result.stdout).toMatch(
      /\nverify FAILED: 3 rollup rows disagree with the raw wagers; checked 20,000 wagers against /,
    );
  });
});
