/**
 * `import` with weights: weightBps / weight_bps in JSON Lines and CSV (an empty
 * CSV cell counts fully), bad weights reported with their line and the bound,
 * a re-sent line with another weight refused as a conflict, exact weighted
 * totals (BigInt) in the rollups, and verify clean.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { importFile } from "../../src/cli/import-file.js";
import { WagerIngest } from "../../src/ingest/core/wager-ingest.js";
import { mariadbIngest } from "../../src/ingest/sql/ingest-store.js";
import { verifyRollups } from "../../src/ingest/sql/verify.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { NOV_1, OCT_1 } from "../support/dates.js";
import { picoUnitsToDecimal, toPicoUnits, toUnits, unitsToDecimal, weightedUnits } from "../support/decimals.js";

let database: TestDatabase;
let dir: string;
let ingest: WagerIngest;

beforeAll(async () => {
  database = await createTestDatabase("import_weights");
  dir = await mkdtemp(join(tmpdir(), "tw-import-weights-"));
  ingest = new WagerIngest(mariadbIngest(database.db.write), { now: () => NOV_1 });
}, 30_000);

afterAll(async () => {
  await database?.drop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

async function run(name: string, text: string) {
  const path = join(dir, name);
  await writeFile(path, text);
  const bad: string[] = [];
  const report = await importFile(ingest, path, {
    now: () => NOV_1,
    onBadLine: (line, problem) => bad.push(`${line}: ${problem}`),
  });
  return { report, bad };
}

/** Month totals per user: [username, plain, weighted], as canonical decimals. */
async function monthTotals(affiliate: string): Promise<[string, string, string][]> {
  const [rows] = await database.db.read.query<RowDataPacket[]>(
    `SELECT u.username, m.total, m.weighted_total FROM wager_monthly m
       JOIN users u ON u.id = m.user_id JOIN affiliates a ON a.id = m.affiliate_id
      WHERE a.external_id = ? AND m.bucket = ? ORDER BY u.username`,
    [affiliate, OCT_1],
  );
  return rows.map((r) => [
    String(r.username),
    unitsToDecimal(toUnits(String(r.total))),
    picoUnitsToDecimal(toPicoUnits(String(r.weighted_total))),
  ]);
}

describe("import with weights", () => {
  it("reads weightBps and weight_bps from JSON Lines, as numbers or digit strings", async () => {
    const lines = [
      { type: "user", id: "ij-1", affiliateId: "aff-ij", username: "jay" },
      { type: "user", id: "ij-2", affiliateId: "aff-ij", username: "kay" },
      { type: "wager", id: "jw-1", userId: "ij-1", amount: "100.00000001", placedAt: OCT_1 + 60, weightBps: 5000 },
      { type: "wager", id: "jw-2", userId: "ij-1", amount: "0.33333333", placedAt: OCT_1 + 120, weight_bps: "3333" },
      { type: "wager", id: "jw-3", user_id: "ij-2", amount: "7", placed_at: OCT_1 + 180 },
      { type: "wager", id: "jw-4", userId: "ij-2", amount: "12.5", placedAt: OCT_1 + 240, weightBps: 0 },
      { type: "wager", id: "jw-5", userId: "ij-2", amount: "1", placedAt: OCT_1 + 300, weightBps: 10_001 },
      { type: "wager", id: "jw-6", userId: "ij-2", amount: "1", placedAt: OCT_1 + 360, weightBps: 12.5 },
      { type: "wager", id: "jw-7", userId: "ij-2", amount: "1", placedAt: OCT_1 + 420, weightBps: "half" },
      // The same id again with another weight: refused; with the same weight: a repeat.
      { type: "wager", id: "jw-1", userId: "ij-1", amount: "100.00000001", placedAt: OCT_1 + 60, weightBps: 5001 },
      { type: "wager", id: "jw-1", userId: "ij-1", amount: "100.00000001", placedAt: OCT_1 + 60, weightBps: 5000 },
    ];
    const { report, bad } = await run("weights.jsonl", `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`);
    expect(bad).toEqual([
      "7: weightBps must be a whole number from 0 to 10000 basis points (got 10001)",
      "8: weightBps must be a whole number of basis points from 0 to 10000, got 12.5",
      '9: weightBps must be a whole number of basis points from 0 to 10000, got "half"',
      '10: wager "jw-1" repeats the id of line 3 with another user, amount, time or weight',
    ]);
    expect(report).toMatchObject({ users: 2, recorded: 4, duplicates: 1, badLines: 4 });
    const jay = weightedUnits("100.00000001", 5000) + weightedUnits("0.33333333", 3333);
    const kay = weightedUnits("7", 10_000) + weightedUnits("12.5", 0);
    expect(await monthTotals("aff-ij")).toEqual([
      ["jay", "100.33333334", picoUnitsToDecimal(jay)],
      ["kay", "19.5", picoUnitsToDecimal(kay)],
    ]);
    // 100.00000001 × 0.5 + 0.33333333 × 0.3333 = 50.000000005 + 0.111099998889
    expect(picoUnitsToDecimal(jay)).toBe("50.111100003889");

    // A later file re-sending a recorded wager with another weight: the conflict names the weight.
    const again = await run(
      "again.jsonl",
      `${JSON.stringify({ type: "wager", id: "jw-2", userId: "ij-1", amount: "0.33333333", placedAt: OCT_1 + 120 })}\n`,
    );
    expect(again.bad).toEqual(['1: wager "jw-2" was already recorded with another user, amount, time or weight']);
  });

  it("reads a weight column in CSV, in any order and either spelling; an empty cell counts fully", async () => {
    const csv = [
      "type,id,affiliate_id,username,user_id,amount,weight_bps,placed_at",
      "user,ic-1,aff-ic,ivy,,,,",
      "user,ic-2,aff-ic,ike,,,,",
      `wager,cw-1,,,ic-1,2.5,1000,${OCT_1 + 10}`,
      `wager,cw-2,,,ic-1,3,,${OCT_1 + 20}`,
      `wager,cw-3,,,ic-2,999999999999.99999999,9999,${OCT_1 + 30}`,
      `wager,cw-4,,,ic-2,1,-1,${OCT_1 + 40}`,
    ].join("\n");
    const { report, bad } = await run("weights.csv", `${csv}\n`);
    expect(bad).toEqual(["7: weightBps must be a whole number from 0 to 10000 basis points (got -1)"]);
    expect(report).toMatchObject({ users: 2, recorded: 3, badLines: 1 });
    expect(await monthTotals("aff-ic")).toEqual([
      ["ike", "999999999999.99999999", "999899999999.999999990001"],
      ["ivy", "5.5", picoUnitsToDecimal(weightedUnits("2.5", 1000) + weightedUnits("3", 10_000))],
    ]);
    const wagersOnly = await run("wagers.csv", `id,userId,amount,placedAt,weightBps\ncw-9,ic-2,4,${OCT_1 + 50},2500\n`);
    expect(wagersOnly.report).toMatchObject({ recorded: 1, badLines: 0 });
  });

  it("leaves every rollup equal to the raw wagers (verify)", async () => {
    const report = await verifyRollups(database.db.read);
    expect(report.mismatchCount).toBe(0);
    expect(report.wagers).toBe(8);
  });
});
