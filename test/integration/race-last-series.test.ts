/**
 * A series' last race (issue 48, item 4): races start and end by 2099-12-31T23:59:59Z (MAX_RACE_TIMESTAMP), so
 * every time a race stores fits its INT UNSIGNED columns. A weekly series made on 3 December 2099 runs its four
 * races of December and makes no fifth (it would end on 6 January 2100): the clock ends the series instead of
 * failing its step on a time the columns cannot hold. Its last race is frozen like any other.
 */
import type { RowDataPacket } from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { useTestDatabase } from "../support/database.js";
import { affiliateKey } from "../support/fixtures.js";
import { instanceRaces, ok, raceNamed } from "../support/races.js";

const database = useTestDatabase("race_last_series");
const DAY = 86_400;
const DEC_3_2099 = Date.UTC(2099, 11, 3) / 1000;
let now = DEC_3_2099 - 100;

describe("a series near the end of 2099", () => {
  it("makes its races up to the last one that ends in 2099, then ends", async () => {
    await database.db.write.query("INSERT INTO affiliates (external_id, created_at) VALUES ('aff-2099', 0)");
    const affiliate = await affiliateKey(database.db.read, "aff-2099");
    const races = instanceRaces(database.db, { now: () => now, freeze: "primary" });
    const first = ok(
      await races.create(
        affiliate,
        raceNamed("weekly", "Weekly", [DEC_3_2099], { repeat: "weekly", reviewSeconds: 60 }),
      ),
    ).race;
    expect(first.endTimestamp).toBe(DEC_3_2099 + 7 * DAY - 1);
    // Through December and into January, a tick every six hours.
    for (now = DEC_3_2099; now <= DEC_3_2099 + 40 * DAY; now += 6 * 3_600) await races.tick();
    const [rows] = await database.db.write.query<RowDataPacket[]>(
      "SELECT series_index, start_ts, end_ts, frozen_at IS NOT NULL AS final FROM races ORDER BY series_index",
    );
    expect(rows.map((r) => [Number(r.series_index), Number(r.start_ts), Number(r.end_ts), Number(r.final)])).toEqual([
      [0, DEC_3_2099, DEC_3_2099 + 7 * DAY - 1, 1],
      [1, DEC_3_2099 + 7 * DAY, DEC_3_2099 + 14 * DAY - 1, 1],
      [2, DEC_3_2099 + 14 * DAY, DEC_3_2099 + 21 * DAY - 1, 1],
      // 24 to 30 December 2099: the last; 31 December to 6 January 2100 would pass 4102444799.
      [3, DEC_3_2099 + 21 * DAY, DEC_3_2099 + 28 * DAY - 1, 1],
    ]);
    expect(DEC_3_2099 + 35 * DAY - 1).toBeGreaterThan(4_102_444_799);
  });
});
