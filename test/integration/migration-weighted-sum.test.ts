/**
 * Migration 12 (the stored weighted total) on a database at migration 11 that holds data written the
 * way version 11 wrote it (rollups with total, weight_discount and wagers). The backfill runs in
 * batches of 7 rows, is stopped in the middle of a table (a crash) and resumed by `migrate`; while
 * it is half done, boards equal the naive GROUP BY (they read the virtual column until migration 12
 * is recorded), and writers of both versions (the previous version's upserts and voids, this
 * version's ingest) keep working. Afterwards every stored value equals the raw wagers' weighted
 * sums, verify checks it, boards read the stored column, and this version's writers keep it exact
 * with the trigger dropped (what a later migration that drops the trigger relies on).
 */
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RankedRow, topUsersFromBuckets } from "../../src/boards/sql/leaderboard-queries.js";
import { mariadbStandings } from "../../src/boards/sql/standings-store.js";
import { mulberry32 } from "../../src/ingest/core/seed-data.js";
import { bucketRanges } from "../../src/ingest/sql/period-buckets.js";
import { ROLLUPS, WEIGHT_DISCOUNT_OF_WAGER } from "../../src/ingest/sql/rollups.js";
import { upsertUserBatch } from "../../src/ingest/sql/users.js";
import { verifyRollups } from "../../src/ingest/sql/verify.js";
import { voidWagerBatch } from "../../src/ingest/sql/voids.js";
import { recordWagerBatch } from "../../src/ingest/sql/wagers.js";
import { backfillWeightedSums, weightedSumTrigger } from "../../src/ingest/sql/weighted-backfill.js";
import { migrate } from "../../src/schema/migration-runner.js";
import { MIGRATIONS } from "../../src/schema/schema-migrations.js";
import { canonicalDecimal } from "../../src/values/decimal.js";
import type { RankBy } from "../../src/values/weights.js";
import { createDatabaseAtVersion, type TestDatabase } from "../support/database.js";
import { NOV_1, OCT_1, OCT_16, SEP_1 } from "../support/dates.js";
import { toPicoUnits } from "../support/decimals.js";
import { usersWithoutAvatar } from "../support/fixtures.js";
import { topUsersFromRawWagers } from "../support/naive-leaderboard.js";

let database: TestDatabase;
const migration12 = MIGRATIONS.find((m) => m.version === 12);
const migrationLines: string[] = [];
const WEIGHTS = [10_000, 10_000, 5_000, 3_333, 1_000, 0];
let affiliateIds: number[] = [];

async function rows(sql: string, params: unknown[] = []): Promise<RowDataPacket[]> {
  return (await database.db.read.query<RowDataPacket[]>(sql, params))[0];
}

/** Raw wagers and their rollups as version 11 wrote them (its SQL: no weighted_sum column then). */
async function writeAsVersion11(): Promise<void> {
  const next = mulberry32(1212);
  const [users] = await database.db.write.query<RowDataPacket[]>(
    "SELECT id, affiliate_id FROM users WHERE external_id LIKE 'ws-u%' ORDER BY id",
  );
  const wagers = Array.from({ length: 600 }, (_, n) => {
    const user = users[Math.floor(next() * users.length)] as RowDataPacket;
    const amount = `${Math.floor(next() * 5_000)}.${String(Math.floor(next() * 1e8)).padStart(8, "0")}`;
    const weight = WEIGHTS[Math.floor(next() * WEIGHTS.length)] as number;
    return [`v11-${n}`, user.id, user.affiliate_id, amount, SEP_1 + Math.floor(next() * 75 * 86_400), weight];
  });
  // Two users tied exactly at the top of October, with no other wagers (a tie at a board's cut).
  const [tied] = await database.db.write.query<RowDataPacket[]>(
    "SELECT id, affiliate_id FROM users WHERE external_id LIKE 'ws-tie-%' ORDER BY external_id",
  );
  for (const [i, user] of tied.entries()) {
    wagers.push([`v11-tie-${i}`, user.id, user.affiliate_id, "90000.5", OCT_1 + 3_600 * (i + 1), 5_000]);
  }
  await database.db.write.query(
    "INSERT INTO wagers (external_id, user_id, affiliate_id, amount, placed_at, weight_bps) VALUES ?",
    [wagers],
  );
  for (const rollup of ROLLUPS) {
    await database.db.write.query(
      `INSERT INTO ${rollup.table} (affiliate_id, bucket, user_id, total, weight_discount, wagers)
       SELECT affiliate_id, ${rollup.bucketOf("placed_at")} AS b, user_id, SUM(amount), SUM(${WEIGHT_DISCOUNT_OF_WAGER}), COUNT(*)
         FROM wagers GROUP BY affiliate_id, b, user_id`,
    );
  }
}

/**
 * What the previous version does to a rollup row: its upsert and then its void (which deletes a row
 * left with no wagers), naming no weighted_sum. Returns the stored values found wrong in between.
 */
async function writeAsPreviousVersion(table: string, affiliateId: number, bucket: number, userId: number) {
  const key = [affiliateId, bucket, userId];
  await database.db.write.query(
    `INSERT INTO ${table} (affiliate_id, bucket, user_id, total, weight_discount, wagers) VALUES (?, ?, ?, 10.5, 2.25, 1)
     ON DUPLICATE KEY UPDATE total = ${table}.total + VALUES(total),
       weight_discount = ${table}.weight_discount + VALUES(weight_discount), wagers = ${table}.wagers + VALUES(wagers)`,
    key,
  );
  const [between] = await rows(
    `SELECT COUNT(*) AS n FROM ${table} WHERE affiliate_id = ? AND bucket = ? AND user_id = ?
        AND NOT (weighted_sum <=> total - weight_discount)`,
    key,
  );
  await database.db.write.query(
    `UPDATE ${table} SET total = total - 10.5, weight_discount = weight_discount - 2.25, wagers = wagers - 1
      WHERE affiliate_id = ? AND bucket = ? AND user_id = ?`,
    key,
  );
  await database.db.write.query(
    `DELETE FROM ${table} WHERE affiliate_id = ? AND bucket = ? AND user_id = ? AND wagers = 0`,
    key,
  );
  return Number(between?.n);
}

const PERIODS: readonly [string, number, number][] = [
  ["october (one monthly bucket)", OCT_1, NOV_1 - 1],
  ["second half of october (one half-month bucket)", OCT_16, NOV_1 - 1],
  ["october 16 (one daily bucket)", OCT_16, OCT_16 + 86_399],
  ["september to november, misaligned", SEP_1 + 1_837, NOV_1 + 20 * 86_400 - 911],
  ["october, misaligned", OCT_1 + 1_837, NOV_1 - 912],
];

const toPico = (value: string | undefined) => toPicoUnits(value ?? "NaN");

/** A NULL sum (read from rows not backfilled) shows as "null". */
const decimalOrNull = (value: string) => (value === "null" ? value : canonicalDecimal(value));

const canonical = (board: readonly RankedRow[]) =>
  board.map((r) => [r.userExternalId, decimalOrNull(r.total), decimalOrNull(r.weightedTotal)]);

/** A board as the service reads it (the standings store). */
const servedBoard = (a: number, s: number, e: number, n: number, r: RankBy) =>
  mariadbStandings(database.db.read).topUsers(a, s, e, n, r);

/** A board read from the stored weighted column (`weighted_sum`), whatever migration 12's state. */
const storedColumnBoard = (a: number, s: number, e: number, n: number, r: RankBy) =>
  topUsersFromBuckets(database.db.read, {
    affiliateId: a,
    ranges: bucketRanges(s, e),
    limit: n,
    rankBy: r,
    weighted: "weighted_sum",
  });

/** Every board of every affiliate and period, ranked both ways, as the store answers and as the naive query does. */
async function boardsAgainstNaive(
  read: (a: number, s: number, e: number, n: number, r: RankBy) => Promise<RankedRow[]>,
) {
  const answers: unknown[] = [];
  const naive: unknown[] = [];
  for (const affiliateId of affiliateIds) {
    for (const [, start, end] of PERIODS) {
      for (const rankBy of ["wagered", "weighted"] as const) {
        for (const limit of [1, 3, 50]) {
          answers.push(canonical(await read(affiliateId, start, end, limit, rankBy)));
          naive.push(canonical(await topUsersFromRawWagers(database.db.read, affiliateId, start, end, limit, rankBy)));
        }
      }
    }
  }
  return { answers, naive };
}

async function storedAgainstRaw(): Promise<{ nulls: number; wrong: number; rows: number }> {
  let nulls = 0;
  let wrong = 0;
  let total = 0;
  for (const rollup of ROLLUPS) {
    const [found] = await rows(
      `SELECT COUNT(*) AS n, SUM(weighted_sum IS NULL) AS nulls, SUM(weighted_sum <> total - weight_discount) AS wrong
         FROM ${rollup.table}`,
    );
    total += Number(found?.n);
    nulls += Number(found?.nulls ?? 0);
    wrong += Number(found?.wrong ?? 0);
  }
  return { nulls, wrong, rows: total };
}

beforeAll(async () => {
  database = await createDatabaseAtVersion("migration_weighted_sum", 11);
  await upsertUserBatch(
    database.db.write,
    usersWithoutAvatar(12, (i) => ({
      id: `ws-u${i}`,
      affiliateId: i < 9 ? "aff-ws1" : "aff-ws2",
      username: `user ${i % 5}`,
    })),
  );
  await upsertUserBatch(database.db.write, [
    { id: "ws-tie-b", affiliateId: "aff-ws1", username: "tied", avatar: "" },
    { id: "ws-tie-a", affiliateId: "aff-ws1", username: "tied", avatar: "" },
  ]);
  affiliateIds = (await rows("SELECT id FROM affiliates ORDER BY id")).map((r) => Number(r.id));
  await writeAsVersion11();
}, 60_000);

afterAll(async () => {
  await database?.drop();
});

describe("migration 12 on a database written by version 11", () => {
  it("backfills in batches, stops in the middle of a table and is resumed by migrate", async () => {
    if (migration12 === undefined) throw new Error("no migration 12");
    const steps = migration12.statements.slice(0, -1);
    const connection = await database.db.write.getConnection();
    try {
      const context = { connection, progress: () => undefined };
      for (const step of steps) {
        if (typeof step === "string") throw new Error("migration 12 is made of checked steps");
        await step(context);
      }
      const crash = backfillWeightedSums({
        batchRows: 7,
        beforeBatch: (table, batch) => {
          if (table === "wager_daily" && batch === 5) throw new Error("crash");
        },
      })(context);
      await expect(crash).rejects.toThrow("crash");
    } finally {
      connection.release();
    }
    const [hourly, daily] = ROLLUPS.map((r) => r.table);
    const progress = await rows("SELECT name, rows_done, done_at FROM schema_backfill_progress ORDER BY name");
    expect(progress.map((r) => [String(r.name), Number(r.rows_done), r.done_at !== null])).toEqual([
      [`weighted_sum:${daily}`, 28, false],
      [`weighted_sum:${hourly}`, Number((await rows(`SELECT COUNT(*) AS n FROM ${hourly}`))[0]?.n), true],
    ]);
    const dailyNulls = await rows(`SELECT COUNT(*) AS n FROM ${daily} WHERE weighted_sum IS NULL`);
    expect(Number(dailyNulls[0]?.n)).toBe(Number((await rows(`SELECT COUNT(*) AS n FROM ${daily}`))[0]?.n) - 28);
    const count = async (table: string) => Number((await rows(`SELECT COUNT(*) AS n FROM ${table}`))[0]?.n);
    const stats = await storedAgainstRaw();
    expect(stats.wrong).toBe(0);
    expect(stats.nulls).toBe(
      (await count(daily as string)) - 28 + (await count("wager_halfmonthly")) + (await count("wager_monthly")),
    );
  });

  it("answers every board exactly while the backfill is half done (the virtual column), and would not from the stored one", async () => {
    const { answers, naive } = await boardsAgainstNaive(servedBoard);
    expect(answers).toEqual(naive);
    // Shows that the half-done state matters: read from the stored column now, weighted boards would be wrong.
    const early = await boardsAgainstNaive(storedColumnBoard);
    expect(early.answers).not.toEqual(early.naive);
  });

  it("keeps writes of both versions exact during the backfill, then finishes it in migrate", async () => {
    const [first] = await rows("SELECT affiliate_id, user_id FROM wager_monthly ORDER BY 1, 2 LIMIT 1");
    const wrongBetween: number[] = [];
    for (const rollup of ROLLUPS) {
      // A backfilled row (hourly), a row not backfilled yet (the others), and a new row (bucket 86400).
      const [last] = await rows(`SELECT affiliate_id, bucket, user_id FROM ${rollup.table} ORDER BY 1, 2, 3 LIMIT 1`);
      wrongBetween.push(
        await writeAsPreviousVersion(
          rollup.table,
          Number(last?.affiliate_id),
          Number(last?.bucket),
          Number(last?.user_id),
        ),
        await writeAsPreviousVersion(rollup.table, Number(first?.affiliate_id), 86_400, Number(first?.user_id)),
      );
    }
    // Rows not backfilled yet stay NULL through an update (the trigger sets them, too); the others are exact.
    expect(wrongBetween).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    // This version's ingest and voids, on rows not backfilled yet and on new ones.
    const recorded = await recordWagerBatch(database.db.write, [
      { id: "v12-1", userId: "ws-u3", amount: "77.12345678", placedAt: OCT_16 + 100, weightBps: 2_500 },
      { id: "v12-2", userId: "ws-u10", amount: "5", placedAt: NOV_1 + 10 * 86_400, weightBps: 1 },
    ]);
    expect(recorded.kind).toBe("recorded");
    expect((await voidWagerBatch(database.db.write, ["v11-7", "v11-8"])).voided).toBe(2);
    expect((await storedAgainstRaw()).wrong).toBe(0);

    const report = await migrate(database.db.write, MIGRATIONS, { onProgress: (line) => migrationLines.push(line) });
    expect(report.applied.map((m) => m.version)).toEqual(
      MIGRATIONS.filter((m) => m.version >= 12).map((m) => m.version),
    );
    // A line as each migration starts; between 12's and 13's, the backfill's own lines.
    expect(migrationLines[0]).toBe(`applying migration 12: ${migration12?.name}`);
    const backfillLines = migrationLines.slice(
      1,
      migrationLines.indexOf(`applying migration 13: ${MIGRATIONS[12]?.name}`),
    );
    expect(backfillLines[0]).toMatch(/^weighted_sum backfill of wager_daily: resuming \(about \d+ rows\)$/);
    expect(backfillLines[backfillLines.length - 1]).toMatch(
      /^weighted_sum backfill of wager_daily: done in \d+\.\d s, \d+ rows set in all$/,
    );
    const progress = await rows("SELECT COUNT(*) AS n FROM schema_backfill_progress WHERE done_at IS NOT NULL");
    expect(Number(progress[0]?.n)).toBe(4);
    const stats = await storedAgainstRaw();
    expect({ nulls: stats.nulls, wrong: stats.wrong }).toEqual({ nulls: 0, wrong: 0 });
    expect(stats.rows).toBeGreaterThan(1_000);
    // Every stored value equals the raw wagers' weighted sums (verify reads the stored column).
    expect((await verifyRollups(database.db.read)).mismatchCount).toBe(0);
  });

  it("then answers every board from the stored column, exactly", async () => {
    const { answers, naive } = await boardsAgainstNaive(servedBoard);
    expect(answers).toEqual(naive);
    const stored = await boardsAgainstNaive(storedColumnBoard);
    expect(stored.answers).toEqual(naive);
    const store = mariadbStandings(database.db.read);
    // The tie at the top of October crosses the cut of a board of one: the user id breaks it (same username).
    for (const rankBy of ["wagered", "weighted"] as const) {
      const october = await store.topUsers(affiliateIds[0] as number, OCT_1, NOV_1 - 1, 1, rankBy);
      expect(canonical(october)).toEqual([["ws-tie-a", "90000.5", "45000.25"]]);
    }
  });

  it("keeps the value exact for the previous version's writes (default and trigger) after the migration", async () => {
    const [some] = await rows("SELECT affiliate_id, bucket, user_id FROM wager_hourly ORDER BY 3, 2, 1 LIMIT 1");
    const key = [Number(some?.affiliate_id), Number(some?.bucket), Number(some?.user_id)] as const;
    expect(await writeAsPreviousVersion("wager_hourly", ...key)).toBe(0);
    expect(await writeAsPreviousVersion("wager_monthly", key[0], 3_600 * 24 * 3, key[2])).toBe(0);
    expect((await verifyRollups(database.db.read)).mismatchCount).toBe(0);
  });

  it("keeps it exact without the trigger by this version's writers, and verify reports a wrong stored value", async () => {
    for (const rollup of ROLLUPS) await database.db.write.query(`DROP TRIGGER ${rollup.table}_weighted_sum`);
    try {
      const recorded = await recordWagerBatch(database.db.write, [
        { id: "v12-3", userId: "ws-u3", amount: "1.00000001", placedAt: OCT_16 + 100, weightBps: 3_333 },
        { id: "v12-4", userId: "ws-u4", amount: "250", placedAt: OCT_1 + 100, weightBps: 0 },
      ]);
      expect(recorded.kind).toBe("recorded");
      expect((await voidWagerBatch(database.db.write, ["v12-1", "v11-9"])).voided).toBe(2);
      expect((await verifyRollups(database.db.read)).mismatchCount).toBe(0);
      const [row] = await rows("SELECT affiliate_id, bucket, user_id FROM wager_daily ORDER BY 1, 2, 3 LIMIT 1");
      await database.db.write.query(
        "UPDATE wager_daily SET weighted_sum = weighted_sum + 0.000000000001 WHERE affiliate_id = ? AND bucket = ? AND user_id = ?",
        [row?.affiliate_id, row?.bucket, row?.user_id],
      );
      const report = await verifyRollups(database.db.read);
      expect(report.mismatches.map((m) => [m.level, m.bucket, m.expected?.total === m.found?.total])).toEqual([
        ["daily", Number(row?.bucket), true],
      ]);
      const found = toPico(report.mismatches[0]?.found?.weightedTotal);
      expect(found - toPico(report.mismatches[0]?.expected?.weightedTotal)).toBe(1n);
      await database.db.write.query(
        "UPDATE wager_daily SET weighted_sum = total - weight_discount WHERE affiliate_id = ? AND bucket = ? AND user_id = ?",
        [row?.affiliate_id, row?.bucket, row?.user_id],
      );
    } finally {
      const connection = await database.db.write.getConnection();
      try {
        for (const rollup of ROLLUPS) await weightedSumTrigger(rollup.table)({ connection, progress: () => undefined });
      } finally {
        connection.release();
      }
    }
    expect((await verifyRollups(database.db.read)).mismatchCount).toBe(0);
    const triggers = await rows(
      "SELECT COUNT(*) AS n FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND TRIGGER_NAME LIKE '%_weighted_sum'",
    );
    expect(Number(triggers[0]?.n)).toBe(4);
  });

  it("redoes a batch that waited too long for a row ingest holds, and finishes", async () => {
    const connection = await database.db.write.getConnection();
    const holder = await database.db.write.getConnection();
    const context = { connection, progress: () => undefined };
    try {
      // Three rows made NULL again (the trigger would set them on this UPDATE: dropped for it).
      await connection.query("DROP TRIGGER wager_monthly_weighted_sum");
      await connection.query(
        "UPDATE wager_monthly SET weighted_sum = NULL ORDER BY affiliate_id, bucket, user_id LIMIT 3",
      );
      await weightedSumTrigger("wager_monthly")(context);
      await connection.query("DELETE FROM schema_backfill_progress WHERE name = 'weighted_sum:wager_monthly'");
      await holder.query("START TRANSACTION");
      await holder.query("SELECT * FROM wager_monthly ORDER BY affiliate_id, bucket, user_id LIMIT 1 FOR UPDATE");
      await connection.query("SET SESSION innodb_lock_wait_timeout = 1");
      const started = Date.now();
      const backfill = backfillWeightedSums()(context);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      await holder.query("COMMIT");
      await backfill;
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
    } finally {
      await holder.query("ROLLBACK").catch(() => undefined);
      await connection.query("SET SESSION innodb_lock_wait_timeout = DEFAULT");
      holder.release();
      connection.release();
    }
    expect(await storedAgainstRaw()).toMatchObject({ nulls: 0, wrong: 0 });
    expect((await verifyRollups(database.db.read)).mismatchCount).toBe(0);
  });
});
