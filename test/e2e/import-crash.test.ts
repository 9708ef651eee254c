/**
 * `import` survives being killed: kill -9 midway leaves only whole batches
 * (raw wagers and rollups together), and running the same import again
 * records exactly the rest, with exact totals. Bad lines are reported with
 * their line numbers and the rest of the file still goes in.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyRollups } from "../../src/ingest/sql/verify.js";
import { importFile, runCli, startCli } from "../support/cli.js";
import { type TestDatabase, useTestDatabase, wagerTotals } from "../support/database.js";
import { OCT_1 } from "../support/dates.js";
import { toUnits, unitsToDecimal } from "../support/decimals.js";

const WAGERS = 50_000;
const USERS = 400;

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "topwagers-import-"));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function count(database: TestDatabase): Promise<number> {
  const [rows] = await database.db.read.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM wagers");
  return Number(rows[0]?.n);
}

describe("kill -9 in the middle of an import", () => {
  const database = useTestDatabase("import_crash");
  let file: string;
  const expected = new Map<string, [bigint, number]>();

  beforeAll(async () => {
    const lines: string[] = [];
    for (let u = 0; u < USERS; u++) {
      lines.push(JSON.stringify({ type: "user", id: `user-${u}`, affiliateId: `aff-${u % 7}`, username: `p${u}` }));
    }
    for (let n = 0; n < WAGERS; n++) {
      const user = `user-${(n * 7919) % USERS}`;
      const amount = `${(n % 5000) + 1}.${String((n * 2_654_435_761) % 100_000_000).padStart(8, "0")}`;
      const [units, k] = expected.get(user) ?? [0n, 0];
      expected.set(user, [units + toUnits(amount), k + 1]);
      lines.push(
        JSON.stringify({
          type: "wager",
          id: `wager-${n}`,
          userId: user,
          amount,
          placedAt: OCT_1 + ((n * 97) % 2_600_000),
        }),
      );
    }
    file = path.join(dir, "history.jsonl");
    await writeFile(file, `${lines.join("\n")}\n`);
  });

  it("keeps whole batches only, then a re-run records exactly the rest", async () => {
    const first = startCli(["import", file], database.url);
    // Wait until some batches have committed, then kill without warning.
    for (let i = 0; i < 3000 && (await count(database)) < 5000; i++) await new Promise((r) => setTimeout(r, 10));
    first.child.kill("SIGKILL");
    const killed = await first.done;
    expect(killed.signal).toBe("SIGKILL");
    const before = await count(database);
    expect(before).toBeGreaterThanOrEqual(5000);
    expect(before).toBeLessThan(WAGERS);
    expect(before % 1000).toBe(0); // all or nothing per batch of 1000
    const half = await verifyRollups(database.db.read);
    expect({ mismatches: half.mismatchCount, wagers: half.wagers }).toEqual({ mismatches: 0, wagers: before });

    const second = await runCli(["import", file], database.url);
    expect(second.stderr.split("\n").filter((l) => l.includes(".jsonl:"))).toEqual([]);
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(
      new RegExp(
        `^Imported ${file.replaceAll(".", "\\.")} \\(jsonl\\) in \\d+:\\d\\d: 50,400 lines, 400 users upserted, ` +
          `${(WAGERS - before).toLocaleString("en-US")} wagers recorded, ${before.toLocaleString("en-US")} already recorded, 0 bad lines\\.\\n$`,
      ),
    );
    expect(await wagerTotals(database)).toEqual(
      [...expected.entries()]
        .sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
        .map(([user, [units, n]]) => [user, unitsToDecimal(units), n]),
    );
    const report = await verifyRollups(database.db.read);
    expect({ mismatches: report.mismatchCount, wagers: report.wagers }).toEqual({ mismatches: 0, wagers: WAGERS });
  });
});

describe("bad lines", () => {
  const database = useTestDatabase("import_bad_lines");

  it("are reported with their line numbers while every good line goes in (JSON Lines)", async () => {
    const file = importFile(dir, "mixed.jsonl", [
      '{"type":"user","id":"u1","affiliateId":"aff-1","username":"alice","avatar":"https://img.example.com/a.png"}',
      '{"type":"wager","id":"w1","userId":"u1","amount":"10.5","placedAt":1790812800}',
      "this is not json",
      '{"type":"wager","id":"w2","userId":"u1","amount":10.5,"placedAt":1790812800}',
      '{"type":"wager","id":"w3","userId":"u1","amount":"1e3","placedAt":1790812800}',
      "",
      '{"type":"wager","id":"w4","userId":"nobody","amount":"1","placedAt":1790812800}',
      '{"type":"bet","id":"w5"}',
      '{"type":"user","id":"u2","affiliate_id":"aff-1","username":"bob"}',
      '{"type":"wager","id":"w6","user_id":"u2","amount":"0.00000001","placed_at":"1790812801"}',
      '{"type":"wager","id":"w1","userId":"u1","amount":"10.50","placedAt":1790812800}',
      '{"type":"wager","id":"w1","userId":"u1","amount":"11","placedAt":1790812800}',
      '{"type":"user","id":"u3","affiliateId":"aff-1","username":"","avatar":""}',
      '{"type":"wager","id":"w7","userId":"u1","amount":"2","placedAt":1790812800.5}',
    ]);
    const result = await runCli(["import", file], database.url);
    expect(result.code).toBe(1);
    const reported = result.stderr
      .split("\n")
      .filter((line) => line.startsWith(`${file}:`))
      .sort((a, b) => Number(a.split(":")[1]) - Number(b.split(":")[1]));
    expect(reported).toEqual([
      `${file}:3: not valid JSON (Unexpected token 'h', "this is not json" is not valid JSON)`,
      `${file}:4: amount must be a string in JSON (e.g. "12.5") so that no digit is lost`,
      `${file}:5: amount must not use exponent notation (write 1500 not 1.5e3)`,
      `${file}:7: user "nobody" is unknown (not among the user lines so far, not stored)`,
      `${file}:8: "type" must be "user", "wager" or "void", got "bet"`,
      `${file}:12: wager "w1" repeats the id of line 2 with another user, amount, time or weight`,
      `${file}:13: username is required`,
      `${file}:14: placedAt must be whole Unix seconds, got 1790812800.5`,
    ]);
    expect(result.stdout).toMatch(
      /14 lines, 2 users upserted, 2 wagers recorded, 1 already recorded, 8 bad lines\.\n$/,
    );
    const [rows] = await database.db.read.query<RowDataPacket[]>(
      "SELECT external_id, amount FROM wagers ORDER BY external_id",
    );
    expect(rows).toEqual([
      { external_id: "w1", amount: "10.50000000" },
      { external_id: "w6", amount: "0.00000001" },
    ]);
    // Once recorded, the id is taken: another content for it in a later run is refused.
    const again = path.join(dir, "again.jsonl");
    await writeFile(again, '{"type":"wager","id":"w1","userId":"u1","amount":"99","placedAt":1790812800}\n');
    const second = await runCli(["import", again], database.url);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(
      `${again}:1: wager "w1" was already recorded with another user, amount, time or weight\n`,
    );
  });

  it("are reported for CSV too; headers name the columns in any order, quoted fields keep commas and quotes", async () => {
    const users = path.join(dir, "users.csv");
    await writeFile(
      users,
      'id,affiliate_id,username,avatar\nc1,aff-2,"Smith, Jane",https://img.example.com/j.png\nc2,aff-2,"say ""hi""",\n',
    );
    const wagers = path.join(dir, "wagers.csv");
    await writeFile(
      wagers,
      'user_id,id,amount,placed_at\nc1,cw1,5.25,1790812800\nc2,cw2,"0.75",1790812801\nc1,cw3,5.25\nc3,cw4,1,1790812800\n',
    );
    const mixed = path.join(dir, "mixed.csv");
    await writeFile(
      mixed,
      "type,id,userId,affiliateId,username,avatar,amount,placedAt\nuser,m1,,aff-3,mary,,,\nwager,mw1,m1,,,,3,1790812800\n",
    );
    const first = await runCli(["import", users], database.url);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(
      /\(csv\) in \d+:\d\d: 3 lines, 2 users upserted, 0 wagers recorded, 0 already recorded, 0 bad lines\.\n$/,
    );
    const second = await runCli(["import", wagers], database.url);
    expect(second.code).toBe(1);
    expect(second.stderr.split("\n").filter((line) => line.startsWith(`${wagers}:`))).toEqual([
      `${wagers}:4: expected 4 fields, found 3`,
      `${wagers}:5: user "c3" is unknown (not among the user lines so far, not stored)`,
    ]);
    expect(second.stdout).toMatch(/5 lines, 0 users upserted, 2 wagers recorded, 0 already recorded, 2 bad lines\.\n$/);
    const third = await runCli(["import", mixed], database.url);
    expect(third.code).toBe(0);
    expect(third.stdout).toMatch(/3 lines, 1 users upserted, 1 wagers recorded, 0 already recorded, 0 bad lines\.\n$/);
    const [rows] = await database.db.read.query<RowDataPacket[]>(
      `SELECT u.external_id AS id, u.username, u.avatar_url, COALESCE(SUM(w.amount), 0) AS total
         FROM users u LEFT JOIN wagers w ON w.user_id = u.id WHERE u.external_id IN ('c1', 'c2', 'm1')
        GROUP BY u.id ORDER BY u.external_id`,
    );
    expect(rows).toEqual([
      { id: "c1", username: "Smith, Jane", avatar_url: "https://img.example.com/j.png", total: "5.25000000" },
      { id: "c2", username: 'say "hi"', avatar_url: null, total: "0.75000000" },
      { id: "m1", username: "mary", avatar_url: null, total: "3.00000000" },
    ]);
  });
});
