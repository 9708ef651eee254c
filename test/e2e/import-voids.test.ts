/**
 * `import` with void lines (JSON Lines and CSV): a void takes its wager out of
 * the totals whether the wager line comes before or after it; voids of ids
 * never recorded stay pending; a run killed midway and run again ends exact.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyRollups } from "../../src/ingest/sql/verify.js";
import { importFile, runCli, startCli } from "../support/cli.js";
import { useTestDatabase, wagerTotals } from "../support/database.js";
import { OCT_1 } from "../support/dates.js";
import { toUnits, unitsToDecimal } from "../support/decimals.js";

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "topwagers-import-voids-"));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function expectedTotals(wagers: Map<string, { user: string; amount: string }>, voided: Set<string>) {
  const sums = new Map<string, [bigint, number]>();
  for (const [id, w] of wagers) {
    if (voided.has(id)) continue;
    const [units, n] = sums.get(w.user) ?? [0n, 0];
    sums.set(w.user, [units + toUnits(w.amount), n + 1]);
  }
  return [...sums.entries()]
    .sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
    .map(([user, [units, n]]) => [user, unitsToDecimal(units), n]);
}

describe("void lines", () => {
  const database = useTestDatabase("import_voids");

  it("apply before or after their wager line, in JSON Lines and CSV, with exact counts", async () => {
    const jsonl = importFile(dir, "mixed.jsonl", [
      '{"type":"user","id":"u1","affiliateId":"a1","username":"one"}',
      '{"type":"user","id":"u2","affiliateId":"a1","username":"two"}',
      `{"type":"wager","id":"w1","userId":"u1","amount":"10.5","placedAt":${OCT_1}}`,
      `{"type":"wager","id":"w2","userId":"u1","amount":"20.25","placedAt":${OCT_1 + 60}}`,
      '{"type":"void","id":"w1"}',
      '{"type":"void","id":"w3"}',
      `{"type":"wager","id":"w3","userId":"u2","amount":"7","placedAt":${OCT_1 + 120}}`,
      '{"type":"void","id":"never-sent"}',
      '{"type":"void","id":"w1"}',
      '{"type":"void"}',
      "",
    ]);
    const result = await runCli(["import", jsonl, "--json"], database.url);
    expect(result.code).toBe(1); // the void line without an id
    expect(result.stderr).toContain(`${jsonl}:10: id is required`);
    const report = JSON.parse(result.stdout) as Record<string, unknown>;
    expect({ ...report, seconds: 0 }).toEqual({
      file: jsonl,
      format: "jsonl",
      lines: 10,
      usersUpserted: 2,
      wagersRecorded: 3,
      alreadyRecorded: 0,
      // w1 and w3 are both recorded by the time the voids are sent (wagers go first); w1 repeats.
      wagersVoided: 2,
      alreadyVoided: 0,
      pendingVoids: 1,
      badLines: 1,
      seconds: 0,
    });
    expect(await wagerTotals(database)).toEqual([["u1", "20.25", 1]]);

    const csv = importFile(dir, "mixed.csv", [
      "type,id,userId,amount,placedAt",
      "void,w2,,,",
      `wager,w4,u2,5.00000001,${OCT_1 + 7200}`,
      "void,never-sent,,,",
      "void,w3,,,",
      "",
    ]);
    const second = await runCli(["import", csv], database.url);
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(
      /^Imported .*mixed\.csv \(csv\) in \d+:\d\d: 5 lines, 0 users upserted, 1 wagers recorded, 0 already recorded, 1 wagers voided, 1 already voided, 1 voids pending \(wager not recorded yet\), 0 bad lines\.\n$/,
    );
    expect(await wagerTotals(database)).toEqual([["u2", "5.00000001", 1]]);
    const verify = await verifyRollups(database.db.read);
    expect({ mismatches: verify.mismatchCount, wagers: verify.wagers }).toEqual({ mismatches: 0, wagers: 1 });
    // The pending void applies when its wager finally arrives.
    const late = path.join(dir, "late.jsonl");
    await writeFile(late, `{"type":"wager","id":"never-sent","userId":"u1","amount":"99","placedAt":${OCT_1}}\n`);
    expect((await runCli(["import", late], database.url)).code).toBe(0);
    expect(await wagerTotals(database)).toEqual([["u2", "5.00000001", 1]]);
  }, 30_000);
});

describe("kill -9 in the middle of an import with voids", () => {
  const database = useTestDatabase("import_voids_crash");

  it("ends exact after the same import is run again", async () => {
    const wagers = new Map<string, { user: string; amount: string }>();
    const voided = new Set<string>();
    const lines: string[] = [];
    for (let u = 0; u < 50; u++) {
      lines.push(JSON.stringify({ type: "user", id: `user-${u}`, affiliateId: `aff-${u % 3}`, username: `p${u}` }));
    }
    for (let n = 0; n < 30_000; n++) {
      const user = `user-${(n * 31) % 50}`;
      const amount = `${(n % 900) + 1}.${String((n * 2_654_435_761) % 100_000_000).padStart(8, "0")}`;
      wagers.set(`w-${n}`, { user, amount });
      lines.push(
        JSON.stringify({ type: "wager", id: `w-${n}`, userId: user, amount, placedAt: OCT_1 + ((n * 97) % 2_000_000) }),
      );
      // Every 9th wager is voided a little later in the file; every 13th one before it appears.
      if (n % 9 === 0) {
        lines.push(JSON.stringify({ type: "void", id: `w-${n}` }));
        voided.add(`w-${n}`);
      }
      if (n % 13 === 0 && n + 50 < 30_000) {
        lines.push(JSON.stringify({ type: "void", id: `w-${n + 50}` }));
        voided.add(`w-${n + 50}`);
      }
    }
    const file = path.join(dir, "crash.jsonl");
    await writeFile(file, `${lines.join("\n")}\n`);

    const first = startCli(["import", file], database.url);
    const count = async () =>
      Number(
        (
          (
            await database.db.read.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM wager_voids")
          )[0][0] as RowDataPacket
        ).n,
      );
    for (let i = 0; i < 3000 && (await count()) < 1000; i++) await new Promise((r) => setTimeout(r, 10));
    first.child.kill("SIGKILL");
    expect((await first.done).signal).toBe("SIGKILL");
    expect((await verifyRollups(database.db.read)).mismatchCount).toBe(0);

    const again = await runCli(["import", file, "--json"], database.url);
    expect(again.code).toBe(0);
    expect(await wagerTotals(database)).toEqual(expectedTotals(wagers, voided));
    const report = await verifyRollups(database.db.read);
    expect({ mismatches: report.mismatchCount, wagers: report.wagers }).toEqual({
      mismatches: 0,
      wagers: wagers.size - voided.size,
    });
  }, 120_000);
});
