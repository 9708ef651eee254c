import { describe, expect, it } from "vitest";
import { finalAt, freezeDueAt, isFreezeDue, type RaceTimes, raceStateAt } from "../../src/races/core/race-state.js";

// The race of docs' example: [1793491200, 1796083199], a day of review.
const race: RaceTimes = {
  start: 1_793_491_200,
  end: 1_796_083_199,
  reviewSeconds: 86_400,
  cancelledAt: null,
  frozenAt: null,
};

describe("raceStateAt", () => {
  it("is scheduled before the start, live through the end second, reviewing after, final once frozen", () => {
    const at = (now: number, overrides: Partial<RaceTimes> = {}) => raceStateAt({ ...race, ...overrides }, now);
    expect([at(race.start - 1), at(race.start), at(race.end), at(race.end + 1)]).toEqual([
      "scheduled",
      "live",
      "live",
      "reviewing",
    ]);
    // An overdue freeze (every instance was down) is still reviewing: final only with a stored result.
    expect(at(race.end + 10 * 86_400)).toBe("reviewing");
    expect(at(1_796_169_600, { frozenAt: 1_796_169_600 })).toBe("final");
    expect(at(race.start - 1, { cancelledAt: race.start - 100 })).toBe("cancelled");
    expect(at(race.end + 5, { cancelledAt: race.end + 2, frozenAt: null })).toBe("cancelled");
  });
});

describe("finalAt and the freeze", () => {
  it("finalAt is the review window's last second; the freeze is due the second after", () => {
    expect(finalAt(race)).toBe(1_796_169_599);
    expect(freezeDueAt(race)).toBe(1_796_169_600);
    expect([isFreezeDue(race, 1_796_169_599), isFreezeDue(race, 1_796_169_600)]).toEqual([false, true]);
    expect(isFreezeDue({ ...race, frozenAt: 1_796_169_600 }, 1_796_169_700)).toBe(false);
    expect(isFreezeDue({ ...race, cancelledAt: 1 }, 1_796_169_700)).toBe(false);
    expect(freezeDueAt({ end: 100, reviewSeconds: 0 })).toBe(101);
  });
});
