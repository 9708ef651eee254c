/**
 * No single race stops the race clock (issue 40, item 1). A race whose freeze fails on the database (a
 * trigger refuses its result rows) is put off with a growing wait and reported once per wait, while another
 * affiliate's race due after it still freezes on time; once the fault is gone it freezes. And a finalized
 * event whose paid ranks carry 64-code-point CJK names and a wide tie stays under the 20 KB body limit by
 * construction (only the paid ranks that fit, marked), where it used to roll the freeze back forever.
 */
import type { RowDataPacket } from "mysql2/promise";
import { beforeAll, describe, expect, it } from "vitest";
import type { Races } from "../../src/races/core/races.js";
import type { StepFailure } from "../../src/races/core/step-retry.js";
import { useTestDatabase } from "../support/database.js";
import { NOV_1, NOV_16 } from "../support/dates.js";
import { addUsers, addWagers, affiliateKey, wager } from "../support/fixtures.js";
import { instanceRaces, ok, subscribeToRaceEvents } from "../support/races.js";

const database = useTestDatabase("race_clock_failures");
const END = NOV_16 - 1;
let now = NOV_1 - 100;

function instance(): Races {
  return instanceRaces(database.db, { now: () => now, freeze: "primary" });
}

/** Ticks once; the failures it reported, without their errors. */
async function tick(races: Races): Promise<Omit<StepFailure, "error">[]> {
  const failures: Omit<StepFailure, "error">[] = [];
  await races.tick(({ error: _error, ...failure }) => failures.push(failure));
  return failures;
}

async function nextStepAt(id: string): Promise<number | null> {
  const [rows] = await database.db.write.query<RowDataPacket[]>("SELECT next_step_at FROM races WHERE public_id = ?", [
    id,
  ]);
  return rows[0]?.next_step_at === null ? null : Number(rows[0]?.next_step_at);
}

beforeAll(async () => {
  await addUsers(database.db, [
    { id: "s1", affiliateId: "stuck-aff", username: "sam", avatar: "" },
    { id: "o1", affiliateId: "other-aff", username: "olga", avatar: "" },
  ]);
  await addWagers(database.db, [wager("s1", "50", NOV_1 + 10), wager("o1", "70", NOV_1 + 20)]);
});

describe("the race clock with a failing race", () => {
  it("puts the failing race off (1 s, 2 s, …), reports it once per wait, and freezes another affiliate's race on time", async () => {
    const races = instance();
    const stuckAff = await affiliateKey(database.db.read, "stuck-aff");
    const otherAff = await affiliateKey(database.db.read, "other-aff");
    const base = { title: "November", startTimestamp: NOV_1, prizes: ["10"], reviewSeconds: 0 };
    // The stuck race is due first: the scan meets it before the other one.
    const stuck = ok(await races.create(stuckAff, { ...base, slug: "stuck", endTimestamp: END - 1 })).race;
    const other = ok(await races.create(otherAff, { ...base, slug: "other", endTimestamp: END })).race;
    await database.db.write.query(
      `CREATE TRIGGER refuse_stuck BEFORE INSERT ON race_results FOR EACH ROW
         IF NEW.race_id = (SELECT id FROM races WHERE public_id = '${stuck.id}') THEN
           SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused by the test';
         END IF`,
    );
    now = NOV_1 + 5;
    expect(await tick(races)).toEqual([]);

    now = END + 1;
    const first = { raceId: stuck.id, affiliateId: "stuck-aff", slug: "stuck", step: "freeze" };
    expect(await tick(races)).toEqual([{ ...first, failures: 1, overdueSeconds: 1, retryAt: END + 2 }]);
    expect(ok(await races.get(otherAff, other.id)).state).toBe("final");
    expect(ok(await races.get(otherAff, other.id)).race.frozenAt).toBe(END + 1);
    expect(ok(await races.get(stuckAff, stuck.id)).state).toBe("reviewing");
    expect(await nextStepAt(stuck.id)).toBe(END + 2);
    // The gauge's reading: the stuck race's end has been owed since END (its start was announced).
    expect(await races.overdueSeconds()).toBe(1);
    // Within its wait the race is not tried (nor reported) again.
    expect(await tick(races)).toEqual([]);
    now = END + 2;
    expect(await tick(races)).toEqual([{ ...first, failures: 2, overdueSeconds: 2, retryAt: END + 4 }]);
    now = END + 4;
    expect(await tick(races)).toEqual([{ ...first, failures: 3, overdueSeconds: 4, retryAt: END + 8 }]);
    expect(await races.overdueSeconds()).toBe(4);

    await database.db.write.query("DROP TRIGGER refuse_stuck");
    now = END + 8;
    expect(await tick(races)).toEqual([]);
    expect(ok(await races.get(stuckAff, stuck.id)).race.frozenAt).toBe(END + 8);
    expect(ok(await races.get(stuckAff, stuck.id)).entries.map((e) => [e.username, e.prize])).toEqual([["sam", "10"]]);
    expect(await races.overdueSeconds()).toBe(0);
  });

  it("sends a finalized event under 20 KB for 100 prizes, 64-code-point CJK names and a 130-way tie", async () => {
    const races = instance();
    // 220 users, each named with 64 CJK code points (192 bytes of UTF-8): 90 with distinct totals, then
    // 130 tied at rank 91, across the last 10 prizes.
    const name = (i: number) => String.fromCodePoint(0x4e00 + i).repeat(4) + "漢".repeat(60);
    const users = Array.from({ length: 220 }, (_, i) => ({
      id: `c${String(i).padStart(3, "0")}`,
      affiliateId: "cjk-aff",
      username: name(i),
      avatar: "",
    }));
    await addUsers(database.db, users);
    const cjk = await affiliateKey(database.db.write, "cjk-aff");
    await subscribeToRaceEvents(database.db.write, "ep_cjk", "cjk-aff");
    await addWagers(
      database.db,
      users.map((user, i) => wager(user.id, i < 90 ? String(1000 - i) : "5", NOV_1 + 30)),
    );
    const race = ok(
      await races.create(
        cjk,
        {
          slug: "cjk",
          title: "大きなレース",
          startTimestamp: NOV_1,
          endTimestamp: END,
          prizes: Array.from({ length: 100 }, () => "1.00"),
          reviewSeconds: 0,
        },
        [],
        undefined,
        // The clock has passed END already (the test before moved it): the race is made as history on purpose.
        true,
      ),
    ).race;
    now = END + 1;
    expect(await tick(races)).toEqual([]);
    const view = ok(await races.get(cjk, race.id));
    expect(view.state).toBe("final");
    const paid = view.entries.filter((e) => e.prize !== "0.00");
    expect(paid).toHaveLength(220);
    expect(paid[219]).toMatchObject({ rank: 91, prize: "0.07" });

    const [rows] = await database.db.write.query<RowDataPacket[]>(
      "SELECT type, body FROM webhook_events WHERE affiliate_id = ? ORDER BY id",
      [cjk],
    );
    expect(rows.map((row) => String(row.type))).toEqual(["race.started", "race.ended", "race.finalized"]);
    const body = Buffer.from(rows[2]?.body as Buffer).toString("utf8");
    const bytes = Buffer.byteLength(body, "utf8");
    expect(bytes).toBeLessThan(20 * 1024);
    const data = (JSON.parse(body) as { data: Record<string, unknown> }).data;
    expect(data.entriesTruncated).toBe(true);
    expect(data.paidEntries).toBe(220);
    const listed = data.entries as { rank: number; userId: string; username: string; prize: string }[];
    expect(listed.length).toBeGreaterThan(0);
    // The listed entries are the best paid ranks, as GetRace shows them…
    expect(listed.map((e) => [e.rank, e.userId, e.username, e.prize])).toEqual(
      paid.slice(0, listed.length).map((e) => [e.rank, e.userId, e.username, e.prize]),
    );
    // …and as many as fit: one more would reach the limit.
    const nextEntry = paid[listed.length];
    if (nextEntry === undefined) throw new Error("every paid rank fit");
    const oneMore = JSON.stringify({
      rank: nextEntry.rank,
      userId: nextEntry.userId,
      username: nextEntry.username,
      totalWageredDecimal: nextEntry.totalWagered,
      weightedWageredDecimal: nextEntry.weightedWagered,
      prize: nextEntry.prize,
    });
    expect(bytes + 1 + Buffer.byteLength(oneMore, "utf8")).toBeGreaterThanOrEqual(20 * 1024);
  });
});
