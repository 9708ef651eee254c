/**
 * Where a small affiliate's board is read from (src/boards/core/small-board-plan.ts): the span the period's pieces
 * add up to, the rows each source would read by the monthly profile, and the choice (raw wagers only where they read
 * fewer rows and every raw wager of the period is still held).
 */
import { describe, expect, it } from "vitest";
import {
  type MonthlyProfile,
  PIECE_COST,
  smallBoardPieces,
  smallBoardReads,
  spanOfPieces,
} from "../../src/boards/core/small-board-plan.js";
import { mulberry32 } from "../../src/ingest/core/seed-data.js";
import { bucketRanges } from "../../src/ingest/sql/period-buckets.js";

const at = (y: number, m: number, d = 1, h = 0, min = 0, s = 0) => Date.UTC(y, m - 1, d, h, min, s) / 1000;

describe("spanOfPieces", () => {
  it("is the inclusive period the pieces were made from, as a half-open span, for random periods", () => {
    const next = mulberry32(7);
    for (let i = 0; i < 2000; i++) {
      const start = at(2025, 1) + Math.floor(next() * 700 * 86_400);
      const end = start + Math.floor(next() ** 3 * 400 * 86_400);
      expect(spanOfPieces(bucketRanges(start, end)), `[${start}, ${end}]`).toEqual({ from: start, to: end + 1 });
    }
  });

  it("is empty without pieces", () => {
    expect(spanOfPieces([])).toEqual({ from: 0, to: 0 });
  });

  it("a month minus its first hours starts where the period starts, not where the month does", () => {
    const ranges = bucketRanges(at(2026, 3, 1, 5, 30), at(2026, 4, 1) - 1);
    expect(ranges[0]).toMatchObject({ source: "monthly", from: at(2026, 3) });
    expect(spanOfPieces(ranges)).toEqual({ from: at(2026, 3, 1, 5, 30), to: at(2026, 4) });
  });
});

describe("smallBoardReads", () => {
  // March 2026 (31 days): 40 users, 3,100 wagers; April (30 days): 10 users, 60 wagers.
  const profile: MonthlyProfile = new Map([
    [at(2026, 3), { users: 40, wagers: 3100 }],
    [at(2026, 4), { users: 10, wagers: 60 }],
  ]);

  it("a whole month: one row per user of the month, its wagers raw", () => {
    expect(smallBoardReads(profile, bucketRanges(at(2026, 3), at(2026, 4) - 1))).toEqual({ pieces: 40, raw: 3100 });
  });

  it("two whole months: the rows of both in one piece", () => {
    expect(smallBoardReads(profile, bucketRanges(at(2026, 3), at(2026, 5) - 1))).toEqual({ pieces: 50, raw: 3160 });
  });

  it("one day: at most a row per user, and no more rows than its wagers (100 a day in March, 2 in April)", () => {
    expect(smallBoardReads(profile, bucketRanges(at(2026, 3, 10), at(2026, 3, 11) - 1))).toEqual({
      pieces: 40,
      raw: 100,
    });
    expect(smallBoardReads(profile, bucketRanges(at(2026, 4, 10), at(2026, 4, 11) - 1))).toEqual({
      pieces: 2,
      raw: 2,
    });
  });

  it("each piece after the first costs PIECE_COST; a month without rows reads none", () => {
    // 10 April 20:00 to 12 April 00:00: hours 20-23 of the 10th and the whole 11th (two pieces).
    const ranges = bucketRanges(at(2026, 4, 10, 20), at(2026, 4, 12) - 1);
    expect(ranges.map((r) => r.source)).toEqual(["hourly", "daily"]);
    const reads = smallBoardReads(profile, ranges);
    // Hourly: 4 hours, 1/3 of a wager (2 a day), at most 10 users × 4 hours; daily: 2 wagers, at most 10 users.
    expect(reads.pieces).toBeCloseTo(PIECE_COST + 1 / 3 + 2, 9);
    expect(reads.raw).toBeCloseTo(2 + 1 / 3, 9);
    expect(smallBoardReads(profile, bucketRanges(at(2027, 1), at(2027, 2) - 1))).toEqual({ pieces: 0, raw: 0 });
  });
});

describe("smallBoardPieces", () => {
  const profile: MonthlyProfile = new Map([[at(2026, 3), { users: 40, wagers: 3100 }]]);
  const raw = (from: number, to: number) => [{ source: "raw", sign: 1, from, to }];

  it("a few days and hours: the raw wagers of the whole period in one piece", () => {
    const ranges = bucketRanges(at(2026, 3, 3, 5, 17), at(2026, 3, 4, 9, 41));
    expect(ranges.length).toBeGreaterThan(2);
    expect(smallBoardPieces(profile, ranges, 0)).toEqual({
      source: "raw",
      ranges: raw(at(2026, 3, 3, 5, 17), at(2026, 3, 4, 9, 41) + 1),
    });
  });

  it("a whole month: its pieces (40 rows against 3,100 wagers)", () => {
    const ranges = bucketRanges(at(2026, 3), at(2026, 4) - 1);
    expect(smallBoardPieces(profile, ranges, 0)).toEqual({ source: "pieces", ranges });
  });

  it("never raw wagers from before the wager horizon", () => {
    const ranges = bucketRanges(at(2026, 3, 3, 5), at(2026, 3, 4, 9, 41));
    expect(smallBoardPieces(profile, ranges, at(2026, 3, 3, 5))).toMatchObject({ source: "raw" });
    expect(smallBoardPieces(profile, ranges, at(2026, 3, 3, 5) + 1)).toEqual({ source: "pieces", ranges });
  });

  it("a period within one hour is raw wagers already", () => {
    const ranges = bucketRanges(at(2026, 3, 3, 5, 1), at(2026, 3, 3, 5, 9));
    expect(smallBoardPieces(profile, ranges, Number.POSITIVE_INFINITY)).toEqual({ source: "raw", ranges });
  });
});
