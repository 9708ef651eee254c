/**
 * Migrations 7 and 8 on a database that holds data from before them: made
 * with migrations 1 to 6 only and filled the way the previous version wrote
 * (raw wagers, rollups, an applied and a pending void; no weight anywhere),
 * then migrated. Plain totals are unchanged to the last digit, every weighted
 * total equals its plain total, verify is clean, the raw-edge index carries
 * the weight, old voids and new weighted wagers mix exactly, and running the
 * steps again changes nothing.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RankBy } from "../../gen/topwagers/v1/top_wagers_pb.js";
import { mulberry32 } from "../../src/ingest/core/seed-data.js";
import { ROLLUPS } from "../../src/ingest/sql/rollups.js";
import { upsertUserBatch } from "../../src/ingest/sql/users.js";
import { verifyRollups } from "../../src/ingest/sql/verify.js";
import { migrate } from "../../src/schema/migration-runner.js";
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from "../../src/schema/schema-migrations.js";
import { createDatabaseAtVersion, type TestDatabase } from "../support/database.js";
import { NOV_1, OCT_1 } from "../support/dates.js";
import { toPicoUnits, toUnits, unitsToDecimal } from "../support/decimals.js";
import { createKey, usersWithoutAvatar } from "../support/fixtures.js";
import { type IngestServers, startIngestServers, TEST_INGEST_TOKEN, wagerMessage } from "../support/ingest.js";

let database: TestDatabase;
let servers: IngestServers;
/** Every rollup row before migrating: table → "affiliate:bucket:user" → [total, wagers]. */
const before = new Map<string, Map<string, [string, number]>>();
const migrationLines: string[] = [];

interface OldWager {
  readonly id: string;
  readonly user: number;
  readonly amount: string;
  readonly placedAt: number;
}
const oldWagers: OldWager[] = [];

async function rows(sql: string, params: unknown[] = []): Promise<RowDataPacket[]> {
  return (await database.db.read.query<RowDataPacket[]>(sql, params))[0];
}

async function rollupRows(table: string): Promise<Map<string, [string, number]>> {
  const found = await rows(`SELECT affiliate_id, bucket, user_id, total, wagers FROM ${table}`);
  return new Map(
    found.map((r) => [
      `${r.affiliate_id}:${r.bucket}:${r.user_id}`,
      [String(r.total), Number(r.wagers)] as [string, number],
    ]),
  );
}

/** What the previous version wrote: the raw wagers, and rollups grouped from them (the SQL of then). */
async function writeAsBeforeWeights(): Promise<void> {
  const next = mulberry32(606);
  for (let n = 0; n < 400; n++) {
    oldWagers.push({
      id: `old-${n}`,
      user: Math.floor(next() * 6),
      amount: `${Math.floor(next() * 10_000)}.${String(Math.floor(next() * 100_000_000)).padStart(8, "0")}`,
      placedAt: OCT_1 + Math.floor(next() * 30 * 86_400),
    });
  }
  const write = database.db.write;
  const [users] = await write.query<RowDataPacket[]>("SELECT id, external_id, affiliate_id FROM users");
  const userRow = (n: number) => users.find((u) => String(u.external_id) === `m-u${n}`) as RowDataPacket;
  await write.query("INSERT INTO wagers (external_id, user_id, affiliate_id, amount, placed_at) VALUES ?", [
    oldWagers.map((w) => [w.id, userRow(w.user).id, userRow(w.user).affiliate_id, w.amount, w.placedAt]),
  ]);
  // A void applied by the previous version: its content moved to wager_voids, no weight column then.
  const voided = oldWagers[0] as OldWager;
  await write.query(
    `INSERT INTO wager_voids (external_id, requested_at, applied_at, user_id, affiliate_id, amount, placed_at)
     SELECT external_id, placed_at, placed_at, user_id, affiliate_id, amount, placed_at FROM wagers WHERE external_id = ?`,
    [voided.id],
  );
  await write.query("DELETE FROM wagers WHERE external_id = ?", [voided.id]);
  // A pending void: its wager has not arrived yet.
  await write.query("INSERT INTO wager_voids (external_id, requested_at) VALUES ('late-1', ?)", [OCT_1]);
  for (const rollup of ROLLUPS) {
    await write.query(
      `INSERT INTO ${rollup.table} (affiliate_id, bucket, user_id, total, wagers)
       SELECT affiliate_id, ${rollup.bucketOf("placed_at")} AS b, user_id, SUM(amount), COUNT(*)
         FROM wagers GROUP BY affiliate_id, b, user_id`,
    );
  }
}

/** Four users of aff-m1 and two of aff-m2, written before the weights. */
const MIGRATED_USERS = usersWithoutAvatar(6, (i) => ({
  id: `m-u${i}`,
  affiliateId: i < 4 ? "aff-m1" : "aff-m2",
  username: `migrated ${i}`,
}));

beforeAll(async () => {
  database = await createDatabaseAtVersion("migration_weights", 6);
  await upsertUserBatch(database.db.write, MIGRATED_USERS);
  await writeAsBeforeWeights();
  for (const rollup of ROLLUPS) before.set(rollup.table, await rollupRows(rollup.table));
  await migrate(database.db.write, MIGRATIONS, { onProgress: (line) => migrationLines.push(line) });
  servers = await startIngestServers(database, { INGEST_TOKEN: TEST_INGEST_TOKEN }, { now: () => NOV_1 });
}, 60_000);

afterAll(async () => {
  await servers?.close();
});

describe("migrating a database that holds data from before weights", () => {
  it("applies 7 and 8 and swaps the raw-edge index for one with the weight, quietly on a small table", async () => {
    const applied = await rows("SELECT version FROM schema_migrations WHERE version BETWEEN 7 AND 8 ORDER BY version");
    expect(applied.map((r) => Number(r.version))).toEqual([7, 8]);
    expect(LATEST_SCHEMA_VERSION).toBeGreaterThanOrEqual(8);
    // One line as each pending migration starts (issue 38); beyond those, progress lines come only while a build
    // runs longer than a few seconds (measured at 50M: docs/operations.md).
    const pending = MIGRATIONS.filter((m) => m.version > 6);
    expect(migrationLines).toEqual(pending.map((m) => `applying migration ${m.version}: ${m.name}`));
    const indexes = await rows(
      `SELECT INDEX_NAME, GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX) AS columns FROM information_schema.STATISTICS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'wagers' AND INDEX_NAME LIKE 'ix_%' GROUP BY INDEX_NAME`,
    );
    expect(indexes.map((r) => [String(r.INDEX_NAME), String(r.columns)])).toEqual([
      ["ix_wagers_affiliate_time_weight", "affiliate_id,placed_at,user_id,amount,weight_bps"],
    ]);
  });

  it("leaves every plain total as it was, and every weighted total equal to it", async () => {
    for (const rollup of ROLLUPS) {
      expect(await rollupRows(rollup.table), rollup.table).toEqual(before.get(rollup.table));
      const [differ] = await rows(
        `SELECT COUNT(*) AS n FROM ${rollup.table} WHERE weighted_total <> total OR weight_discount <> 0`,
      );
      expect(Number(differ?.n), rollup.table).toBe(0);
    }
    const [weights] = await rows("SELECT COUNT(*) AS n, MIN(weight_bps) AS lo, MAX(weight_bps) AS hi FROM wagers");
    expect([Number(weights?.n), Number(weights?.lo), Number(weights?.hi)]).toEqual([399, 10_000, 10_000]);
    // The plain month total per affiliate, against BigInt sums of what was written.
    const expected = new Map<string, bigint>();
    for (const w of oldWagers.slice(1)) {
      const affiliate = w.user < 4 ? "aff-m1" : "aff-m2";
      expected.set(affiliate, (expected.get(affiliate) ?? 0n) + toUnits(w.amount));
    }
    const monthly = await rows(
      `SELECT a.external_id, SUM(m.total) AS total, SUM(m.weighted_total) AS weighted FROM wager_monthly m
         JOIN affiliates a ON a.id = m.affiliate_id GROUP BY a.external_id ORDER BY a.external_id`,
    );
    expect(monthly.map((r) => [String(r.external_id), unitsToDecimal(toUnits(String(r.total)))])).toEqual(
      [...expected.entries()].sort().map(([a, units]) => [a, unitsToDecimal(units)]),
    );
    expect(monthly.map((r) => toPicoUnits(String(r.weighted)))).toEqual(
      monthly.map((r) => toUnits(String(r.total)) * 10_000n),
    );
    expect((await verifyRollups(database.db.read)).mismatchCount).toBe(0);
  });

  it("answers over REST and Connect as before: plain totals exact, and the weighted board the same board", async () => {
    const key = (await createKey(database.db, "aff-m1")).secret;
    const totals = new Map<number, bigint>();
    for (const w of oldWagers.slice(1))
      if (w.user < 4) totals.set(w.user, (totals.get(w.user) ?? 0n) + toUnits(w.amount));
    const board = [...totals.entries()]
      .sort(([a, x], [b, y]) => (x === y ? a - b : x > y ? -1 : 1))
      .map(([user, units]) => ({ user, total: unitsToDecimal(units) }));
    expect(board.length).toBe(4);
    const entry = (e: { user: number; total: string }) =>
      `{"username":"migrated ${e.user}","avatar":${JSON.stringify(servers.config.defaultAvatarUrl)},"totalWagered":${e.total}`;
    const rest = async (extra: Record<string, unknown>) => {
      const response = await fetch(`${servers.publicUrl}/top-affiliate-wagers-by-period`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ startTimestamp: OCT_1, endTimestamp: NOV_1 - 1, numUsers: 10, ...extra }),
      });
      return [response.status, await response.text()];
    };
    expect(await rest({})).toEqual([200, `{"data":[${board.map((e) => `${entry(e)}}`).join(",")}],"errors":null}`]);
    expect(await rest({ rankBy: "weighted" })).toEqual([
      200,
      `{"data":[${board.map((e) => `${entry(e)},"weightedWagered":${e.total}}`).join(",")}],"errors":null}`,
    ]);
    for (const rankBy of [RankBy.WAGERED, RankBy.WEIGHTED]) {
      const answer = await servers.publicClient(key).getTopAffiliateWagersByPeriod({
        startTimestamp: BigInt(OCT_1),
        endTimestamp: BigInt(NOV_1 - 1),
        numUsers: 10,
        rankBy,
      });
      expect(answer.data.map((e) => [e.userId, e.totalWageredDecimal, e.weightedWageredDecimal])).toEqual(
        board.map((e) => [`m-u${e.user}`, e.total, e.total]),
      );
    }
  });

  it("treats a void applied before weights as a full-weight wager, and applies a pending one with its weight", async () => {
    const client = servers.client("connect");
    const voided = oldWagers[0] as OldWager;
    const again = wagerMessage(voided.id, `m-u${voided.user}`, voided.amount, voided.placedAt);
    expect(await client.recordWagers({ wagers: [again] })).toMatchObject({ recorded: 0, duplicates: 1 });
    const other = await client.recordWagers({ wagers: [{ ...again, weightBps: 5000 }] }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(other).toBeInstanceOf(ConnectError);
    expect((other as ConnectError).code).toBe(Code.AlreadyExists);
    expect(
      await client.recordWagers({ wagers: [wagerMessage("late-1", "m-u1", "9.5", OCT_1 + 5, 2000)] }),
    ).toMatchObject({
      recorded: 1,
      duplicates: 0,
    });
    const [late] = await rows(
      "SELECT applied_at IS NOT NULL AS applied, weight_bps FROM wager_voids WHERE external_id = 'late-1'",
    );
    expect([Number(late?.applied), Number(late?.weight_bps)]).toEqual([1, 2000]);
  });

  it("adds new weighted wagers to rows written before weights, exactly", async () => {
    const target = oldWagers[5] as OldWager;
    const [row] = await rows(
      `SELECT m.total FROM wager_monthly m JOIN users u ON u.id = m.user_id
        WHERE u.external_id = ? AND m.bucket = ?`,
      [`m-u${target.user}`, OCT_1],
    );
    const plainBefore = toUnits(String(row?.total));
    await servers.client("grpc").recordWagers({
      wagers: [
        wagerMessage("new-1", `m-u${target.user}`, "100.00000001", OCT_1 + 100, 3333),
        wagerMessage("new-2", `m-u${target.user}`, "0.5", OCT_1 + 200, 0),
      ],
    });
    const [after] = await rows(
      `SELECT m.total, m.weighted_total FROM wager_monthly m JOIN users u ON u.id = m.user_id
        WHERE u.external_id = ? AND m.bucket = ?`,
      [`m-u${target.user}`, OCT_1],
    );
    // Plain: + 100.50000001. Weighted: the old plain total + 100.00000001 × 0.3333 (+ 0.5 × 0).
    expect(unitsToDecimal(toUnits(String(after?.total)))).toBe(unitsToDecimal(plainBefore + 10_050_000_001n));
    const weighted = plainBefore * 10_000n + 10_000_000_001n * 3333n;
    expect(String(after?.weighted_total)).toBe(
      `${weighted / 1_000_000_000_000n}.${(weighted % 1_000_000_000_000n).toString().padStart(12, "0")}`,
    );
    expect((await verifyRollups(database.db.read)).mismatchCount).toBe(0);
  });

  it("changes nothing when its steps run again (an interrupted or doubled run)", async () => {
    const connection = await database.db.write.getConnection();
    try {
      for (const migration of MIGRATIONS.filter((m) => m.version >= 7 && m.version <= 8)) {
        for (const step of migration.statements) {
          if (typeof step === "string") throw new Error("migrations 7 and 8 are made of checked steps");
          await step({ connection, progress: () => undefined });
        }
      }
    } finally {
      connection.release();
    }
    expect((await migrate(database.db.write)).applied).toEqual([]);
    expect((await verifyRollups(database.db.read)).mismatchCount).toBe(0);
  });
});
