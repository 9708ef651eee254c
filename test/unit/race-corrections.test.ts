/**
 * The rules of undoing and correcting races without storage (races/core/race-corrections.ts), and how the races CLI
 * reads a date alone (cli/race-text.ts): which races may be deleted, when THIS_RACE cannot be honoured, what a
 * series' next race takes of a change, which races are refused as already over; a date-only end is the day's last
 * second in the race's zone, also on a day that daylight saving time shortens or lengthens.
 */
import { describe, expect, it } from "vitest";
import { describeRace, parseTime, zonedTime } from "../../src/cli/race-text.js";
import type { StoredRace } from "../../src/ports/races.js";
import {
  deleteRefusal,
  followingPatch,
  followsChanges,
  pastRaceViolations,
  scopeRefusal,
} from "../../src/races/core/race-corrections.js";
import type { RaceView } from "../../src/races/core/races.js";

const START = 1_800_000_000;

function race(changes: Partial<StoredRace> = {}): StoredRace {
  return {
    ...{ id: "race_a", affiliateId: 1, affiliateExternalId: "aff", slug: "daily", title: "Daily", seriesIndex: 0 },
    ...{ startTimestamp: START, endTimestamp: START + 86_399, rankBy: "wagered", prizes: ["10"], currency: "USD" },
    ...{ minWagered: "0", excludedUserIds: [], reviewSeconds: 0, shown: 1, repeat: "daily", timeZone: "UTC" },
    ...{ anchorStart: START, createdAt: 1, updatedAt: 1, cancelledAt: null, frozenAt: null, digest: null },
    ...{ unallocated: null, startAnnounced: false, endAnnounced: false, nextCreated: false, slugHeld: true },
    ...changes,
  };
}

describe("deleting a race", () => {
  it("is allowed only for a scheduled first race nobody has seen", () => {
    expect(deleteRefusal(race(), START - 1)).toBeUndefined();
    expect(deleteRefusal(race(), START)).toBe(
      `race race_a started at ${START}. Only a race not started yet is deleted: cancel it instead`,
    );
    expect(deleteRefusal(race({ startAnnounced: true }), START - 1)).toBe(
      `race race_a started at ${START}. Only a race not started yet is deleted: cancel it instead`,
    );
    expect(deleteRefusal(race({ seriesIndex: 1 }), START - 1)).toBe(
      'race race_a is the next race of the series "daily", shown before it starts. Cancel it instead (that ends the series)',
    );
    expect(deleteRefusal(race({ cancelledAt: 5 }), START - 1)).toBe(
      "race race_a is cancelled. It stays readable and is not deleted",
    );
    expect(deleteRefusal(race({ frozenAt: 5 }), START - 1)).toBe("race race_a is final. Its result is kept for good");
  });
});

describe("which races of a series an update changes", () => {
  it("refuses THIS_RACE only where the next race will be made from this one", () => {
    const next = race({ id: "race_b", seriesIndex: 1, startTimestamp: START + 86_400 });
    expect(scopeRefusal(race(), undefined, "this-race")).toMatch(/^the series' next race is made from race race_a/);
    expect(scopeRefusal(race(), undefined, "this-and-following")).toBeUndefined();
    expect(scopeRefusal(race({ startAnnounced: true }), next, "this-race")).toBeUndefined();
    expect(scopeRefusal(race({ repeat: "none" }), undefined, "this-race")).toBeUndefined();
  });

  it("carries a change to the next race only while it is scheduled, and never its period", () => {
    const next = race({ id: "race_b", seriesIndex: 1, startTimestamp: START + 86_400 });
    expect(followsChanges(next, START + 86_399)).toBe(true);
    expect(followsChanges(next, START + 86_400)).toBe(false);
    expect(followsChanges({ ...next, cancelledAt: 1 }, START)).toBe(false);
    expect(followsChanges(undefined, START)).toBe(false);
    expect(followingPatch({ title: "T", prizes: ["5"], startTimestamp: 1, endTimestamp: 2 })).toEqual({
      title: "T",
      prizes: ["5"],
    });
    expect(followingPatch({ startTimestamp: 1, timeZone: "UTC" })).toBeUndefined();
  });
});

describe("a race already over", () => {
  it("is refused naming endTimestamp unless allowed; a series' first period is its anchor", () => {
    expect(pastRaceViolations({ repeat: "none", end: 99 }, 100, false)).toEqual([
      {
        field: "endTimestamp",
        message:
          "endTimestamp 99 has already passed (the server's clock is at 100): the race would be frozen as it stands. " +
          "Check the year, or send allowPast: true to record a race that is over",
      },
    ]);
    expect(pastRaceViolations({ repeat: "none", end: 100 }, 100, false)).toEqual([]);
    expect(pastRaceViolations({ repeat: "none", end: 99 }, 100, true)).toEqual([]);
    expect(pastRaceViolations({ repeat: "monthly", end: 99 }, 100, false)).toEqual([]);
  });
});

describe("the CLI's times", () => {
  it("reads a date alone as its day's first second for a start and its last second for an end, in the zone", () => {
    // 2026-12-31 in New York (EST, UTC−5): 05:00:00Z on the 31st to 04:59:59Z on 1 January.
    expect(parseTime("--start", "2026-12-31", "America/New_York")).toBe(1_798_693_200);
    expect(parseTime("--end", "2026-12-31", "America/New_York", "end")).toBe(1_798_779_599);
    expect(parseTime("--end", "2026-12-31", undefined, "end")).toBe(1_798_761_599);
    // 8 March 2026 has 23 hours in New York (clocks go forward at 02:00): 05:00:00Z on the 8th to 03:59:59Z on the 9th.
    expect(parseTime("--end", "2026-03-08", "America/New_York", "end")).toBe(1_773_028_799);
    // A time of day is read as written, also as an end.
    expect(parseTime("--end", "2026-12-31T12:00", "America/New_York", "end")).toBe(1_798_736_400);
  });

  it("writes a time in UTC and in the race's zone", () => {
    expect(zonedTime(1_798_779_599, "America/New_York")).toBe(
      "2027-01-01T04:59:59Z (2026-12-31 23:59:59 America/New_York)",
    );
    expect(zonedTime(1_798_761_599, "UTC")).toBe("2026-12-31T23:59:59Z");
    const view = {
      race: race({
        timeZone: "Europe/Berlin",
        repeat: "none",
        startTimestamp: 1_798_671_600,
        endTimestamp: 1_798_757_999,
      }),
      state: "scheduled",
      now: 0,
      finalAt: 1_798_757_999,
      next: null,
      entries: [],
      unallocated: "10",
    } as unknown as RaceView;
    expect(describeRace(view).split("\n")[1]).toBe(
      "  period   2026-12-30T23:00:00Z (2026-12-31 00:00:00 Europe/Berlin) to 2026-12-31T22:59:59Z " +
        "(2026-12-31 23:59:59 Europe/Berlin) (1798671600–1798757999)",
    );
  });
});
