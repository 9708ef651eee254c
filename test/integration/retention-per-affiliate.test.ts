/**
 * Retention held per affiliate (issue 48, item 2), on a real MariaDB: with WAGER_RETENTION_DAYS and
 * HOURLY_ROLLUP_RETENTION_DAYS 30 at 2026-05-20 12:00 UTC the horizons are 2026-04-20. Affiliate aff-held has a race
 * that is not final and never ends (from 2026-03-10 07:00 to 2100, made before races had a longest span); aff-free
 * has none. The first run moves the horizons for everyone and holds aff-held alone from 2026-03-10; the run a
 * minute later deletes exactly aff-free's rows before 2026-04-20 and aff-held's before 2026-03-10, each counted
 * here per affiliate from the wagers written. aff-held's race period is still answered (as before the pruning) and
 * its late wagers recorded, while aff-free's same period and wagers are refused. Once the race is final the hold is
 * released: nothing more goes at once (every instance first reads the release), then aff-held's rows down to the
 * horizon go too, and the released hold is forgotten.
 */
import type { RowDataPacket } from "mysql2/promise";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { mariadbStandings } from "../../src/boards/sql/standings-store.js";
import { recordWagerBatch } from "../../src/ingest/sql/wagers.js";
import { startRetention } from "../../src/jobs/retention.js";
import { createLogger } from "../../src/platform/logger.js";
import { useTestDatabase } from "../support/database.js";
import { insertWagers, upsertUsers, type WagerRecord } from "../support/users-and-wagers.js";

const DAY = 86_400;
const utc = (y: number, m: number, d: number, h = 0, min = 0) => Date.UTC(y, m - 1, d, h, min) / 1000;
const NOW = utc(2026, 5, 20, 12);
const HORIZON = utc(2026, 4, 20); // 30 days before NOW, at its day start
const RACE_START = utc(2026, 3, 10, 7);
const HELD_FROM = utc(2026, 3, 10);
const RELEASED = 4_294_967_295;
const SETTINGS = { deliveredDays: 30, failedDays: 90, everySeconds: 0, wagerDays: 30, hourlyDays: 30 };
const USERS: Record<string, string> = { h1: "aff-held", h2: "aff-held", f1: "aff-free", f2: "aff-free" };

/** Three wagers a day per user from 1 January to 19 May 2026 at varied seconds. */
function wagers(): WagerRecord[] {
  const out: WagerRecord[] = [];
  let n = 0;
  for (let day = utc(2026, 1, 1); day < utc(2026, 5, 20); day += DAY) {
    for (const user of Object.keys(USERS)) {
      for (const k of [0, 1, 2]) {
        n += 1;
        out.push({
          id: `w-${n}`,
          userId: user,
          amount: `${(n * 37) % 1000}.${n % 100}`,
          placedAt: day + ((n * 7919 + k * 28_001) % DAY),
        });
      }
    }
  }
  return out;
}

/** Per affiliate: wagers, and distinct (user, hour) rows, placed before `below` (by affiliate), from the data. */
function expectedBefore(all: readonly WagerRecord[], below: Record<string, number>) {
  const out: Record<string, { wagers: number; hours: number }> = {};
  for (const affiliate of new Set(Object.values(USERS))) {
    const mine = all.filter((w) => USERS[w.userId] === affiliate && w.placedAt < (below[affiliate] ?? 0));
    out[affiliate] = {
      wagers: mine.length,
      hours: new Set(mine.map((w) => `${w.userId} ${w.placedAt - (w.placedAt % 3600)}`)).size,
    };
  }
  return out;
}

describe("retention held per affiliate", () => {
  const database = useTestDatabase("retention_per_affiliate");
  const pool = () => database.db.write;

  async function query(sql: string, params: unknown[] = []): Promise<RowDataPacket[]> {
    const [rows] = await pool().query<RowDataPacket[]>(sql, params);
    return rows;
  }

  /** Per affiliate: the raw wagers and hourly rows it holds now. */
  async function held(): Promise<Record<string, { wagers: number; hours: number }>> {
    const out: Record<string, { wagers: number; hours: number }> = {};
    for (const row of await query(
      `SELECT a.external_id AS affiliate,
              (SELECT COUNT(*) FROM wagers w WHERE w.affiliate_id = a.id) AS wagers,
              (SELECT COUNT(*) FROM wager_hourly h WHERE h.affiliate_id = a.id) AS hours
         FROM affiliates a`,
    )) {
      out[String(row.affiliate)] = { wagers: Number(row.wagers), hours: Number(row.hours) };
    }
    return out;
  }

  const deletedBetween = (
    before: Record<string, { wagers: number; hours: number }>,
    after: Record<string, { wagers: number; hours: number }>,
  ) =>
    Object.fromEntries(
      Object.keys(before).map((a) => [
        a,
        {
          wagers: (before[a]?.wagers ?? 0) - (after[a]?.wagers ?? 0),
          hours: (before[a]?.hours ?? 0) - (after[a]?.hours ?? 0),
        },
      ]),
    );

  it("holds back only the affiliate whose race is not final, and releases it once the race is final", async () => {
    await upsertUsers(
      pool(),
      Object.entries(USERS).map(([id, affiliateId]) => ({ id, affiliateId, username: id, avatar: "" })),
    );
    const all = wagers();
    for (let i = 0; i < all.length; i += 500) expect(await insertWagers(pool(), all.slice(i, i + 500))).toEqual([]);
    const keys = Object.fromEntries(
      (await query("SELECT id, external_id FROM affiliates")).map((r) => [String(r.external_id), Number(r.id)]),
    ) as Record<string, number>;
    const HELD = keys["aff-held"] as number;
    const FREE = keys["aff-free"] as number;
    await pool().query(
      `INSERT INTO races (public_id, affiliate_id, slug, series_index, anchor_start, title, start_ts, end_ts, rank_by,
         currency, prizes, min_wagered, excluded_user_ids, review_seconds, shown, repeat_every, time_zone, created_at,
         updated_at)
       VALUES ('race_forever', ?, 'forever', 0, ?, 'Forever', ?, ?, 'wagered', 'USD', '[]', '0', '', 0, 10, 'none',
         'UTC', 0, 0)`,
      [HELD, RACE_START, RACE_START, utc(2100, 1, 1)],
    );
    const period: [number, number] = [utc(2026, 3, 15, 10, 30), utc(2026, 4, 1, 17, 45)];
    const boardBefore = JSON.stringify(await mariadbStandings(pool()).topUsers(HELD, ...period, 10, "wagered"));
    const start = await held();

    const job = startRetention(SETTINGS, database.db, new Registry(), createLogger("silent"));
    const first = await job.runOnce(NOW * 1000);
    expect(first?.wagers).toEqual({
      wagers: 0,
      hourly: 0,
      horizons: { wagers: HORIZON, hourly: HORIZON },
      heldBack: "race not final",
      // The first recorded horizon locks releases that cannot read it out (issue 47).
      lockedOut: true,
    });
    expect(await query("SELECT affiliate_id, held_from, moved_at FROM retention_holds")).toEqual([
      { affiliate_id: HELD, held_from: HELD_FROM, moved_at: NOW },
    ]);
    expect(await held()).toEqual(start);

    const second = await job.runOnce((NOW + 61) * 1000);
    const afterSecond = await held();
    const expected = expectedBefore(all, { "aff-held": HELD_FROM, "aff-free": HORIZON });
    expect(deletedBetween(start, afterSecond)).toEqual(expected);
    // aff-free lost its rows down to the horizon though aff-held's race never ends: 2 users x 3 wagers x 109 days
    // (1 January to 19 April), each in an hour of its own; aff-held only 68 days' worth (to 9 March).
    expect(expected["aff-free"]).toEqual({ wagers: 654, hours: 654 });
    expect(expected["aff-held"]).toEqual({ wagers: 408, hours: 408 });
    expect([second?.wagers?.wagers, second?.wagers?.hourly]).toEqual([654 + 408, 654 + 408]);

    // The race's own period: answered for aff-held as before; the same period of aff-free is refused.
    const standings = mariadbStandings(pool());
    expect(JSON.stringify(await standings.topUsers(HELD, ...period, 10, "wagered"))).toBe(boardBefore);
    await expect(standings.topUsers(FREE, ...period, 10, "wagered")).rejects.toThrow(
      "this period needs raw wagers from before the retention horizon 2026-04-20 UTC (Unix time 1776643200) and " +
        "those were deleted. Before the horizon a period must start and end on whole UTC days",
    );
    // A late wager inside the race's period is recorded for aff-held, refused for aff-free.
    const late = utc(2026, 4, 2, 9);
    expect((await recordWagerBatch(pool(), [{ id: "late-h", userId: "h1", amount: "7", placedAt: late }])).kind).toBe(
      "recorded",
    );
    await expect(
      recordWagerBatch(pool(), [{ id: "late-f", userId: "f1", amount: "7", placedAt: late }]),
    ).rejects.toThrow("wager late-f was placed before the retention horizon 2026-04-20 UTC (Unix time 1776643200)");

    // The race is final: the hold is released, and nothing more goes until every instance has read that.
    await pool().query("UPDATE races SET frozen_at = ? WHERE public_id = 'race_forever'", [NOW + 100]);
    const third = await job.runOnce((NOW + 120) * 1000);
    expect([third?.wagers?.wagers, third?.wagers?.hourly, third?.wagers?.heldBack]).toEqual([0, 0, undefined]);
    expect(await query("SELECT affiliate_id, held_from, moved_at FROM retention_holds")).toEqual([
      { affiliate_id: HELD, held_from: RELEASED, moved_at: NOW + 120 },
    ]);
    const afterThird = await held();
    const plusLate = (n: { wagers: number; hours: number } | undefined) => ({
      wagers: (n?.wagers ?? 0) + 1,
      hours: (n?.hours ?? 0) + 1,
    });
    expect(afterThird).toEqual({ ...afterSecond, "aff-held": plusLate(afterSecond["aff-held"]) });

    await job.runOnce((NOW + 181) * 1000);
    await job.stop();
    const lateRow = { userId: "h1", placedAt: late };
    const heldRest = expectedBefore(
      [...all, { id: "late-h", amount: "7", ...lateRow }].filter(
        (w) => w.placedAt >= HELD_FROM || USERS[w.userId] !== "aff-held",
      ),
      { "aff-held": HORIZON, "aff-free": 0 },
    );
    expect(deletedBetween(afterThird, await held())).toEqual({
      "aff-held": heldRest["aff-held"],
      "aff-free": { wagers: 0, hours: 0 },
    });
    const count = async (sql: string) => Number((await query(sql, [HORIZON]))[0]?.n);
    expect(await count("SELECT COUNT(*) AS n FROM retention_holds")).toBe(0);
    expect(await count("SELECT COUNT(*) AS n FROM wagers WHERE placed_at < ?")).toBe(0);
  });
});
