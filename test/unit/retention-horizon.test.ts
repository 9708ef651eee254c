/**
 * Which periods the retention horizons refuse (values/retention-horizon.ts over ingest/sql/period-buckets.ts): a
 * period is answered when none of its pieces reads raw wagers before the wager horizon or hourly rows before the
 * hourly horizon, whatever the pieces are (a day minus its last hours needs those hours).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bucketRanges } from "../../src/ingest/sql/period-buckets.js";
import { horizonsOf, prunedOf, refusalUnder } from "../../src/ingest/sql/retention-horizon.js";
import { NOTHING_PRUNED, periodRefusal, wagerRefusal } from "../../src/values/retention-horizon.js";

const utc = (m: number, d: number, h = 0, min = 0) => Date.UTC(2026, m - 1, d, h, min) / 1000;
const HORIZONS = { wagers: utc(3, 21), hourly: utc(2, 19) };
const refused = (start: number, endExclusive: number) =>
  periodRefusal(bucketRanges(start, endExclusive - 1), HORIZONS)?.kind ?? "answered";

describe("periods and the horizons", () => {
  it.each([
    ["a month before both", utc(1, 1), utc(2, 1), "answered"],
    ["whole days before both", utc(1, 3), utc(2, 27), "answered"],
    ["whole hours between them", utc(3, 1, 5), utc(3, 2, 17), "answered"],
    ["whole hours before both", utc(2, 3, 5), utc(2, 3, 17), "hourly"],
    ["a day but its last hour, before both (a day minus an hour)", utc(2, 3), utc(2, 3, 23), "hourly"],
    ["half an hour between them", utc(3, 1, 5, 30), utc(3, 2), "wagers"],
    ["half an hour and whole hours before both (the hours' piece comes first)", utc(1, 5, 5, 30), utc(1, 6), "hourly"],
    ["a quarter of an hour before both", utc(1, 5, 5, 30), utc(1, 5, 5, 45), "wagers"],
    ["whole days up to a minute after the horizon", utc(3, 10), utc(3, 25, 0, 1), "answered"],
    ["anything after both", utc(3, 22, 7, 13), utc(4, 2, 9, 59), "answered"],
  ])("%s: %s", (_name, start, end, expected) => {
    expect(refused(start, end)).toBe(expected);
  });

  it("names the horizon and the unit a period there must use", () => {
    expect(periodRefusal(bucketRanges(utc(1, 5, 5, 30), utc(1, 5, 5, 45) - 1), HORIZONS)?.message).toBe(
      "this period needs raw wagers from before the retention horizon 2026-03-21 UTC (Unix time 1774051200) and " +
        "those were deleted. Before the horizon a period must start and end on whole UTC days",
    );
    expect(periodRefusal(bucketRanges(utc(3, 1, 5, 30), utc(3, 2) - 1), HORIZONS)?.message).toMatch(
      /on whole UTC hours$/,
    );
  });

  it("refuses a wager only before the wager horizon", () => {
    expect(wagerRefusal("w1", utc(3, 21), HORIZONS)).toBeUndefined();
    expect(wagerRefusal("w1", utc(3, 1), HORIZONS)?.kind).toBe("wagers");
    expect(wagerRefusal("w1", utc(3, 21) - 1, HORIZONS)?.horizon).toBe(utc(3, 21));
    expect(wagerRefusal("w1", 1, { wagers: 0, hourly: 0 })).toBeUndefined();
  });
});

describe("the guard's shortcut for periods after the horizons", () => {
  // refusalUnder answers a period whose month starts after both horizons without splitting it into pieces: it must
  // refuse exactly what the pieces refuse, for any period, horizons and hold.
  const DAY = 86_400;
  const base = utc(1, 1);
  it("refuses exactly what the period's pieces refuse", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 400 * DAY }),
        fc.integer({ min: 0, max: 80 * DAY }),
        fc.integer({ min: 0, max: 400 * DAY }),
        fc.integer({ min: 0, max: 60 * DAY }),
        fc.option(fc.integer({ min: 0, max: 400 * DAY }), { nil: undefined }),
        (offset, length, wagerOffset, hourlyLag, heldOffset) => {
          // Horizons are UTC day starts, but the shortcut must hold for any second (it relies on months alone).
          const start = base + offset;
          const end = start + length;
          const wagers = wagerOffset === 0 ? 0 : base + wagerOffset;
          const hourly = wagers === 0 ? 0 : Math.max(0, wagers - hourlyLag);
          const holds = new Map(heldOffset === undefined ? [] : [[7, { heldFrom: base + heldOffset, movedAt: 0 }]]);
          const recorded = {
            wagers,
            hourly,
            movedAt: NOTHING_PRUNED,
            holds,
            pruned: { wagers, hourly },
            generation: 1,
          };
          for (const affiliateId of [7, 8]) {
            const full = periodRefusal(
              bucketRanges(start, end),
              horizonsOf(recorded, affiliateId),
              prunedOf(recorded, affiliateId),
            );
            const quick = refusalUnder(recorded, affiliateId, start, end);
            expect(quick?.message).toBe(full?.message);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });
});
