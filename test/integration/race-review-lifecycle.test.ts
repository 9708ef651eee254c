/**
 * Findings of the races review (notes/issue-29-review.md) through the Races service on MariaDB with a clock
 * the test moves: the frozen result holds every prize winner even past `shown` (and its digest covers them);
 * a later race of a series takes rule changes and a new start (its next race follows its own end);
 * cancelling a series' race before its end stops the series; next_step_at follows a definition change; the
 * clock's due scan reads ix_races_next_step's range with thousands of races waiting.
 */
import { createHash } from "node:crypto";
import type { RowDataPacket } from "mysql2/promise";
import { beforeAll, describe, expect, it } from "vitest";
import { mariadbStandings } from "../../src/boards/sql/standings-store.js";
import { newRaces, type Races } from "../../src/races/core/races.js";
import { mariadbRaces } from "../../src/races/sql/race-store.js";
import { DUE_RACES_SQL } from "../../src/races/sql/races.js";
import { useTestDatabase } from "../support/database.js";
import { NOV_1, NOV_16 } from "../support/dates.js";
import { addUsers, addWagers, affiliateKey } from "../support/fixtures.js";
import { ok, raceNamed, raceTable, recomputedDigest, subscribeToRaceEvents } from "../support/races.js";

const database = useTestDatabase("race_review");
const AVATAR = "https://cdn.example.com/default.png";
const END = NOV_16 - 1;
/** 2027-01-31, 2027-02-28, 2027-03-01, 2027-03-31, 2027-04-01, 2027-05-01 at 00:00 UTC. */
const JAN_31 = 1_801_353_600;
const FEB_28 = 1_803_772_800;
const MAR_1 = 1_803_859_200;
const MAR_31 = 1_806_451_200;
const APR_1 = 1_806_537_600;
const MAY_1 = 1_809_129_600;
/** 2027-01-04, 2027-01-11, 2027-01-18 at 00:00 UTC (Mondays). */
const JAN_4 = 1_799_020_800;
const JAN_11 = 1_799_625_600;
const JAN_18 = 1_800_230_400;
const WEEK = 7 * 86_400;

let now = NOV_1 - 100;
let affiliateId = 0;

function races(): Races {
  const db = database.db;
  return newRaces({
    store: mariadbRaces(db.write),
    standings: mariadbStandings(db.write),
    freezeStandings: mariadbStandings(db.write),
    defaultAvatarUrl: AVATAR,
    now: () => now,
  });
}

/** The series' races as [index, start, end, cancelled]. */
async function series(slug: string): Promise<[number, number, number, boolean][]> {
  const [rows] = await database.db.read.query<RowDataPacket[]>(
    "SELECT series_index, start_ts, end_ts, cancelled_at FROM races WHERE affiliate_id = ? AND slug = ? ORDER BY series_index",
    [affiliateId, slug],
  );
  return rows.map((r) => [Number(r.series_index), Number(r.start_ts), Number(r.end_ts), r.cancelled_at !== null]);
}

/** The outbox's race events of a series, in order: [type, race id]. */
async function eventsOf(slug: string): Promise<[string, string][]> {
  const [rows] = await database.db.read.query<RowDataPacket[]>("SELECT body FROM webhook_events ORDER BY id");
  return rows
    .map((row) => JSON.parse(String(row.body)) as { type: string; data: { id: string; slug: string } })
    .filter((body) => body.data.slug === slug)
    .map((body) => [body.type, body.data.id]);
}

beforeAll(async () => {
  const db = database.db;
  await addUsers(
    db,
    ["u1", "u2", "u3", "u4", "u5"].map((id) => ({ id, affiliateId: "review-aff", username: `name-${id}`, avatar: "" })),
  );
  await addWagers(db, [
    { id: "w1", userId: "u1", amount: "300", placedAt: NOV_1 + 10 },
    { id: "w2", userId: "u2", amount: "200", placedAt: NOV_1 + 20 },
    { id: "w3", userId: "u3", amount: "150", placedAt: NOV_1 + 30 },
    { id: "w4", userId: "u4", amount: "100", placedAt: NOV_1 + 40 },
    { id: "w5", userId: "u5", amount: "50", placedAt: NOV_1 + 50 },
  ]);
  affiliateId = await affiliateKey(db.read, "review-aff");
  await subscribeToRaceEvents(db.write, "ep_race_review", "review-aff");
});

describe("a race showing fewer places than it pays", () => {
  it("shows `shown` places live, and freezes every prize winner, the digest covering them", async () => {
    now = NOV_1 - 100;
    const created = ok(
      await races().create(
        affiliateId,
        raceNamed("few-shown", "Four paid, two shown", [NOV_1, END], {
          prizes: ["50", "30", "20", "10"],
          shown: 2,
          reviewSeconds: 0,
        }),
      ),
    );
    now = END;
    expect(raceTable(ok(await races().get(affiliateId, created.race.id)))).toEqual([
      [1, "name-u1", "300", "50"],
      [2, "name-u2", "200", "30"],
    ]);
    now = END + 1;
    expect(await races().tick()).toEqual({ started: 1, ended: 1, frozen: 1 });
    const final = ok(await races().get(affiliateId, created.race.id));
    expect(final.state).toBe("final");
    expect(raceTable(final)).toEqual([
      [1, "name-u1", "300", "50"],
      [2, "name-u2", "200", "30"],
      [3, "name-u3", "150", "20"],
      [4, "name-u4", "100", "10"],
    ]);
    expect(final.unallocated).toBe("0");
    expect(final.race.digest).toBe(recomputedDigest(final));
  });
});

describe("a race without prizes, won by a non-ASCII username", () => {
  it("freezes the username's exact text, and the digest is the SHA-256 of the documented canonical UTF-8 bytes", async () => {
    await addUsers(database.db, [{ id: "u-zoe", affiliateId: "review-aff", username: 'Zoë 🎰 "Z"', avatar: "" }]);
    await addWagers(database.db, [{ id: "w-zoe", userId: "u-zoe", amount: "1000.50", placedAt: NOV_1 + 60 }]);
    now = NOV_1 - 100;
    const created = ok(
      await races().create(
        affiliateId,
        raceNamed("no-prizes", "Bragging rights", [NOV_1, END], {
          shown: 1,
          reviewSeconds: 0,
        }),
      ),
    );
    expect([created.race.prizes, created.unallocated]).toEqual([[], "0"]);
    now = END + 1;
    await races().tick();
    const final = ok(await races().get(affiliateId, created.race.id));
    expect([final.state, raceTable(final), final.unallocated]).toEqual([
      "final",
      [[1, 'Zoë 🎰 "Z"', "1000.5", "0"]],
      "0",
    ]);
    const canonical =
      `{"raceId":"${created.race.id}","slug":"no-prizes","startTimestamp":${NOV_1},"endTimestamp":${END},` +
      `"rankBy":"wagered","currency":"USD","entries":[{"rank":1,"username":"Zoë 🎰 \\"Z\\"","wagered":"1000.5",` +
      `"weighted":null,"prize":"0"}],"unallocated":"0"}`;
    expect(final.race.digest).toBe(createHash("sha256").update(Buffer.from(canonical, "utf8")).digest("hex"));
  });
});

describe("a later race of a monthly series anchored on the 31st", () => {
  it("takes a new title while scheduled, and a new start: the race after it follows its own end", async () => {
    now = JAN_31 - 100;
    ok(
      await races().create(
        affiliateId,
        raceNamed("month-31", "Monthly", [JAN_31], {
          repeat: "monthly",
          timeZone: "UTC",
          prizes: ["10"],
          reviewSeconds: 0,
        }),
      ),
    );
    now = JAN_31;
    expect(await races().tick()).toEqual({ started: 1, ended: 0, frozen: 0 });
    expect(await series("month-31")).toEqual([
      [0, JAN_31, FEB_28 - 1, false],
      [1, FEB_28, MAR_31 - 1, false],
    ]);
    const second = ok(await races().get(affiliateId, "month-31")).next;
    const secondId = second?.id ?? "";
    now = JAN_31 + 10;
    // Its end is its series' (the 31st of March), not a month after its own start (the 28th).
    const renamed = ok(await races().update(affiliateId, secondId, { title: "March-ish" }));
    expect([renamed.race.title, renamed.race.startTimestamp, renamed.race.endTimestamp]).toEqual([
      "March-ish",
      FEB_28,
      MAR_31 - 1,
    ]);
    const moved = ok(await races().update(affiliateId, secondId, { startTimestamp: MAR_1 }));
    expect([moved.race.startTimestamp, moved.race.endTimestamp, moved.race.anchorStart]).toEqual([
      MAR_1,
      APR_1 - 1,
      MAR_1,
    ]);
    now = MAR_1;
    await races().tick();
    expect(await series("month-31")).toEqual([
      [0, JAN_31, FEB_28 - 1, false],
      [1, MAR_1, APR_1 - 1, false],
      [2, APR_1, MAY_1 - 1, false],
    ]);
  });
});

describe("cancelling a race of a series", () => {
  /** A weekly UTC series from January 4th with `reviewSeconds`, made before and ticked at its start: its first race. */
  async function startedWeeklySeries(slug: string, reviewSeconds: number) {
    now = JAN_4 - 100;
    const first = ok(
      await races().create(
        affiliateId,
        raceNamed(slug, "Weekly", [JAN_4], { repeat: "weekly", timeZone: "UTC", reviewSeconds }),
      ),
    );
    now = JAN_4;
    await races().tick();
    return first;
  }

  it("before its end stops the series: the next race, made at the start, is cancelled with it", async () => {
    const first = await startedWeeklySeries("weekly-stop", 0);
    const nextId = ok(await races().get(affiliateId, first.race.id)).next?.id ?? "";
    now = JAN_4 + 10;
    expect(ok(await races().cancel(affiliateId, first.race.id)).state).toBe("cancelled");
    expect(await series("weekly-stop")).toEqual([
      [0, JAN_4, JAN_11 - 1, true],
      [1, JAN_11, JAN_18 - 1, true],
    ]);
    now = JAN_11;
    expect(await races().tick()).toEqual({ started: 0, ended: 0, frozen: 0 });
    now = JAN_18 + 1;
    await races().tick();
    expect((await series("weekly-stop")).length).toBe(2);
    expect(await eventsOf("weekly-stop")).toEqual([
      ["race.started", first.race.id],
      ["race.cancelled", first.race.id],
      ["race.cancelled", nextId],
    ]);
  });

  it("in its review leaves the series running", async () => {
    const first = await startedWeeklySeries("weekly-review", 3 * 86_400);
    now = JAN_11;
    await races().tick();
    now = JAN_11 + 10;
    expect(ok(await races().cancel(affiliateId, first.race.id)).state).toBe("cancelled");
    expect(await series("weekly-review")).toEqual([
      [0, JAN_4, JAN_11 - 1, true],
      [1, JAN_11, JAN_18 - 1, false],
      [2, JAN_18, JAN_18 + WEEK - 1, false],
    ]);
  });
});

describe("next_step_at", () => {
  async function nextStep(id: string): Promise<number | null> {
    const [rows] = await database.db.read.query<RowDataPacket[]>("SELECT next_step_at FROM races WHERE public_id = ?", [
      id,
    ]);
    return rows[0]?.next_step_at === null ? null : Number(rows[0]?.next_step_at);
  }

  it("follows a new start while scheduled, and stays at the end once the start was announced", async () => {
    now = NOV_1 - 1_000;
    const race = ok(await races().create(affiliateId, raceNamed("steps", "Steps", [NOV_1, END])));
    expect(await nextStep(race.race.id)).toBe(NOV_1);
    ok(await races().update(affiliateId, race.race.id, { startTimestamp: NOV_1 + 60 }));
    expect(await nextStep(race.race.id)).toBe(NOV_1 + 60);
    now = NOV_1 + 60;
    await races().tick();
    expect(await nextStep(race.race.id)).toBe(END + 1);
    ok(await races().update(affiliateId, race.race.id, { reviewSeconds: 60, prizes: ["5"] }));
    expect(await nextStep(race.race.id)).toBe(END + 1);
    now = END + 1;
    await races().tick();
    expect(await nextStep(race.race.id)).toBe(END + 61);
  });
});

describe("the clock's due scan", () => {
  it("reads a range of ix_races_next_step with thousands of races waiting", async () => {
    await database.db.write.query(
      `INSERT INTO races (public_id, affiliate_id, slug, series_index, anchor_start, title, start_ts, end_ts, rank_by,
          currency, prizes, min_wagered, excluded_user_ids, review_seconds, shown, repeat_every, time_zone,
          created_at, updated_at, next_step_at, frozen_at)
        SELECT CONCAT('race_bulk', seq), ?, CONCAT('bulk-', seq), 0, ?, 'Bulk', ?, ?, 'wagered', 'USD', '[]', '0', '[]',
          0, 1, 'none', 'UTC', ?, ?, IF(seq % 2 = 0, NULL, ? + seq), IF(seq % 2 = 0, ?, NULL)
        FROM seq_1_to_5000`,
      [affiliateId, MAY_1, MAY_1, MAY_1 + 86_400, MAY_1, MAY_1, MAY_1, MAY_1],
    );
    await database.db.write.query("ANALYZE TABLE races");
    const [plan] = await database.db.write.query<RowDataPacket[]>(`EXPLAIN ${DUE_RACES_SQL}`, [MAY_1 + 10, 200]);
    // Races first, by the range of the index in its order (no temporary table, no sort), then each one's affiliate.
    expect(plan.map((row) => [row.table, row.type, row.key, row.Extra])).toEqual([
      ["r", "range", "ix_races_next_step", "Using index condition"],
      ["a", "eq_ref", "PRIMARY", ""],
    ]);
    const [analyzed] = await database.db.write.query<RowDataPacket[]>(
      `ANALYZE FORMAT=JSON ${DUE_RACES_SQL.replace("?", String(MAY_1 + 10)).replace("?", "200")}`,
    );
    const json = JSON.stringify(JSON.parse(String(Object.values(analyzed[0] ?? {})[0])));
    // The range reads the due rows only (five of the bulk, seq 1, 3, 5, 7, 9, and the earlier tests' races
    // still owing a step by then), not the 5,000.
    const [due] = await database.db.read.query<RowDataPacket[]>(
      "SELECT COUNT(*) AS n, SUM(public_id LIKE 'race_bulk%') AS bulk FROM races WHERE next_step_at <= ?",
      [MAY_1 + 10],
    );
    expect([Number(due[0]?.bulk), Number(due[0]?.n) < 20]).toEqual([5, true]);
    expect(/"table_name":"r".*?"r_rows":(\d+)/.exec(json)?.[1]).toBe(String(due[0]?.n));
  });
});
