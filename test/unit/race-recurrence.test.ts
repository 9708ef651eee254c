import { describe, expect, it } from "vitest";
import { isTimeZone, seriesIndexAt, seriesPeriod } from "../../src/races/core/recurrence.js";

const NEW_YORK = "America/New_York";
const HOUR = 3_600;

/**
 * Unix seconds of a New York wall-clock time in 2026/2027, from the fixed offsets checked by hand against the
 * US rules (EDT, UTC−4, from 8 March 2026 02:00 to 1 November 2026 02:00; EST, UTC−5, otherwise). The two
 * change days themselves are written out in UTC by the tests.
 */
function newYork(year: number, month: number, day: number, hour: number, minute = 0): number {
  if ((month === 3 && day === 8) || (month === 11 && day === 1)) throw new Error("a change day: write it in UTC");
  const edt = year === 2026 && (month > 3 || (month === 3 && day > 8)) && month < 11;
  return Date.UTC(year, month - 1, day, hour + (edt ? 4 : 5), minute) / 1000;
}

describe("seriesPeriod", () => {
  it("monthly from the 23rd 00:00 in New York keeps local midnight across the March and November changes", () => {
    const anchor = newYork(2026, 1, 23, 0);
    expect(anchor).toBe(1_769_144_400); // 2026-01-23T05:00:00Z
    const starts = Array.from({ length: 13 }, (_, k) => newYork(2026 + Math.floor(k / 12), (k % 12) + 1, 23, 0));
    for (let k = 0; k < 12; k += 1) {
      expect([k, seriesPeriod(anchor, "monthly", NEW_YORK, k)]).toEqual([
        k,
        { start: starts[k], end: (starts[k + 1] as number) - 1 },
      ]);
    }
    // February's race is an hour short (the clocks go forward inside it), October's an hour long.
    expect(seriesPeriod(anchor, "monthly", NEW_YORK, 1)).toEqual({ start: 1_771_822_800, end: 1_774_238_399 });
    expect(1_774_238_400 - 1_771_822_800).toBe(28 * 86_400 - HOUR);
    expect(seriesPeriod(anchor, "monthly", NEW_YORK, 9)).toEqual({ start: 1_792_728_000, end: 1_795_410_000 - 1 });
    expect(1_795_410_000 - 1_792_728_000).toBe(31 * 86_400 + HOUR);
  });

  it("weekly across the spring change: the same Monday noon, a week of 167 hours", () => {
    const anchor = newYork(2026, 3, 2, 12);
    expect(anchor).toBe(Date.UTC(2026, 2, 2, 17) / 1000);
    expect(seriesPeriod(anchor, "weekly", NEW_YORK, 0)).toEqual({
      start: anchor,
      end: Date.UTC(2026, 2, 9, 16) / 1000 - 1,
    });
    expect(seriesPeriod(anchor, "weekly", NEW_YORK, 1).start - anchor).toBe(7 * 86_400 - HOUR);
    expect(seriesPeriod(anchor, "weekly", NEW_YORK, 2).start).toBe(Date.UTC(2026, 2, 16, 16) / 1000);
  });

  it("daily across the autumn change: local midnight each day, one day of 25 hours", () => {
    const anchor = newYork(2026, 10, 31, 0);
    expect(anchor).toBe(Date.UTC(2026, 9, 31, 4) / 1000);
    expect(seriesPeriod(anchor, "daily", NEW_YORK, 1)).toEqual({
      start: Date.UTC(2026, 10, 1, 4) / 1000,
      end: Date.UTC(2026, 10, 2, 5) / 1000 - 1,
    });
    expect(seriesPeriod(anchor, "daily", NEW_YORK, 2).start).toBe(Date.UTC(2026, 10, 2, 5) / 1000);
  });

  it("daily at 02:30, which 8 March skips: that day's race starts at 03:30, the next is back at 02:30", () => {
    const anchor = newYork(2026, 3, 7, 2, 30);
    expect(seriesPeriod(anchor, "daily", NEW_YORK, 1).start).toBe(Date.UTC(2026, 2, 8, 7, 30) / 1000);
    expect(seriesPeriod(anchor, "daily", NEW_YORK, 2).start).toBe(Date.UTC(2026, 2, 9, 6, 30) / 1000);
  });

  it("monthly anchored on 31 January (UTC) takes each month's last day and never drifts", () => {
    const anchor = Date.UTC(2026, 0, 31) / 1000;
    const starts = [0, 1, 2, 3, 4, 13].map((k) => seriesPeriod(anchor, "monthly", "UTC", k).start * 1000);
    expect(starts.map((ms) => new Date(ms).toISOString().slice(0, 10))).toEqual([
      "2026-01-31",
      "2026-02-28",
      "2026-03-31",
      "2026-04-30",
      "2026-05-31",
      "2027-02-28",
    ]);
  });
});

describe("seriesIndexAt", () => {
  const anchor = newYork(2026, 1, 23, 0);

  it("is −1 before the anchor and follows the boundaries to the second", () => {
    expect(seriesIndexAt(anchor, "monthly", NEW_YORK, anchor - 1)).toBe(-1);
    expect(seriesIndexAt(anchor, "monthly", NEW_YORK, anchor)).toBe(0);
    expect(seriesIndexAt(anchor, "monthly", NEW_YORK, 1_771_822_799)).toBe(0);
    expect(seriesIndexAt(anchor, "monthly", NEW_YORK, 1_771_822_800)).toBe(1);
  });

  it("names the race whose period holds the moment, for every repeat, years ahead", () => {
    for (const repeat of ["daily", "weekly", "monthly"] as const) {
      for (let t = anchor; t < anchor + 4 * 365 * 86_400; t += 1_234_567) {
        const index = seriesIndexAt(anchor, repeat, NEW_YORK, t);
        const period = seriesPeriod(anchor, repeat, NEW_YORK, index);
        expect([repeat, t, period.start <= t && t <= period.end]).toEqual([repeat, t, true]);
      }
    }
  });
});

describe("isTimeZone", () => {
  it("knows IANA zones and refuses other names", () => {
    expect(["UTC", NEW_YORK, "Europe/Berlin"].map(isTimeZone)).toEqual([true, true, true]);
    expect(["Mars/Olympus", "", "EST5EDTX"].map(isTimeZone)).toEqual([false, false, false]);
  });
});
