/**
 * The bucket plan of the read path (src/ingest/sql/period-buckets.ts), without a database: every
 * second of a period counted exactly once from aligned hourly, daily, half-monthly and monthly
 * pieces. Moved from test/integration/leaderboard-equals-naive.test.ts, which checks the answers
 * themselves against the naive GROUP BY.
 */
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../src/ingest/core/seed-data.js";
import { bucketRanges } from "../../src/ingest/sql/period-buckets.js";
import { randomPeriod as randomPeriodFrom } from "../support/random-periods.js";

const next = mulberry32(7);
const randomPeriod = () => randomPeriodFrom(next);

describe("bucketRanges", () => {
  it("counts every second of the period exactly once and nothing outside it, with aligned pieces", () => {
    for (let i = 0; i < 3000; i++) {
      const [start, end] = randomPeriod();
      const ranges = bucketRanges(start, end);
      for (const r of ranges) {
        expect(r.from).toBeLessThan(r.to);
        if (r.source === "hourly") expect([r.from % 3600, r.to % 3600]).toEqual([0, 0]);
        if (r.source === "daily") expect([r.from % 86_400, r.to % 86_400]).toEqual([0, 0]);
        if (r.source === "halfmonthly") expect(new Date(r.from * 1000).getUTCDate()).toBeOneOf([1, 16]);
        if (r.source === "monthly") {
          expect(new Date(r.from * 1000).toISOString().slice(8)).toBe("01T00:00:00.000Z");
          expect(new Date(r.to * 1000).toISOString().slice(8)).toBe("01T00:00:00.000Z");
        }
      }
      // Sweep the elementary segments between all boundaries: the signed count
      // must be 1 inside [start, end + 1) and 0 everywhere else.
      const points = [...new Set([start, end + 1, ...ranges.flatMap((r) => [r.from, r.to])])].sort((a, b) => a - b);
      for (let j = 0; j + 1 < points.length; j++) {
        const at = points[j] as number;
        const count = ranges.reduce((sum, r) => sum + (r.from <= at && at < r.to ? r.sign : 0), 0);
        expect(count, `period [${start}, ${end}] at ${at}`).toBe(at >= start && at <= end ? 1 : 0);
      }
    }
  });

  it("answers a calendar month from one monthly row and a misaligned month as the month minus its edges", () => {
    const oct = Date.UTC(2026, 9, 1) / 1000;
    const nov = Date.UTC(2026, 10, 1) / 1000;
    expect(bucketRanges(oct, nov - 1)).toEqual([{ source: "monthly", sign: 1, from: oct, to: nov }]);
    // Starts 30m37s late, ends 15m11s early.
    expect(bucketRanges(oct + 1837, nov - 912)).toEqual([
      { source: "monthly", sign: 1, from: oct, to: nov },
      { source: "raw", sign: -1, from: oct, to: oct + 1837 },
      { source: "raw", sign: -1, from: nov - 911, to: nov },
    ]);
    // Calendar half-months from their own rollup: one row per user.
    const oct16 = oct + 15 * 86_400;
    expect(bucketRanges(oct, oct16 - 1)).toEqual([{ source: "halfmonthly", sign: 1, from: oct, to: oct16 }]);
    expect(bucketRanges(oct16, nov - 1)).toEqual([{ source: "halfmonthly", sign: 1, from: oct16, to: nov }]);
    // Three weeks and more of a month: the month minus the rest.
    expect(bucketRanges(oct + 7 * 86_400, nov - 1)).toEqual([
      { source: "monthly", sign: 1, from: oct, to: nov },
      { source: "daily", sign: -1, from: oct, to: oct + 7 * 86_400 },
    ]);
  });
});
