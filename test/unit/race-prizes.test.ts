import { describe, expect, it } from "vitest";
import type { RankedRow } from "../../src/ports/standings.js";
import { firstLimit, type PlacementRules, placeRace } from "../../src/races/core/prizes.js";

function row(id: string, total: string, weightedTotal = total): RankedRow {
  return { userExternalId: id, username: `user-${id}`, avatarUrl: null, total, weightedTotal };
}

function rules(overrides: Partial<PlacementRules> = {}): PlacementRules {
  return { prizes: [], minWagered: "0", excludedUserIds: [], shown: 10, rankBy: "wagered", ...overrides };
}

/** Each entry as "rank user-id prize" (a line of the table), and the unallocated amount: the whole answer in one value. */
function summary(rows: readonly RankedRow[], asked: number, r: PlacementRules) {
  const placement = placeRace(rows, asked, r);
  if (placement.kind !== "complete") return placement;
  return {
    entries: placement.entries.map((e) => `${e.rank} ${e.row.userExternalId} ${e.prize}`),
    unallocated: placement.unallocated,
  };
}

describe("firstLimit", () => {
  it("asks for the counted places, one row per excluded user and one more to see a tie", () => {
    expect(firstLimit(rules({ shown: 10, prizes: ["3", "2", "1"] }))).toBe(11);
    expect(firstLimit(rules({ shown: 3, prizes: ["5", "4", "3", "2", "1"], excludedUserIds: ["a", "b"] }))).toBe(8);
  });
});

describe("placeRace", () => {
  it("ranks 2–3 tied with prizes 50 and 30 share 40 each", () => {
    const board = [row("a", "100"), row("b", "90"), row("c", "90"), row("d", "10")];
    expect(summary(board, 10, rules({ prizes: ["100", "50", "30"], shown: 4 }))).toEqual({
      entries: ["1 a 100", "2 b 40", "2 c 40", "4 d 0"],
      unallocated: "0",
    });
  });

  it("a three-way tie across the last paid rank splits (50+30+0)/3 = 26.66 each, 0.02 unallocated", () => {
    const board = [row("a", "500.5"), row("b", "300"), row("c", "300.00"), row("d", "300.000000000000"), row("e", "1")];
    expect(summary(board, 10, rules({ prizes: ["100.00", "50.00", "30.00"], shown: 3 }))).toEqual({
      entries: ["1 a 100.00", "2 b 26.66", "2 c 26.66", "2 d 26.66"],
      unallocated: "0.02",
    });
  });

  it("uses the prize table's largest scale as written, and unfilled ranks stay unallocated", () => {
    expect(summary([row("a", "5")], 10, rules({ prizes: ["10", "5.5", "1.125"] }))).toEqual({
      entries: ["1 a 10.000"],
      unallocated: "6.625",
    });
    expect(summary([row("a", "5")], 10, rules())).toEqual({ entries: ["1 a 0"], unallocated: "0" });
  });

  it("leaves out excluded users and users below the minimum, ranking the others among themselves", () => {
    const board = [row("staff", "1000"), row("a", "99.5"), row("b", "99.49999"), row("c", "0.1")];
    expect(
      summary(board, 10, rules({ prizes: ["7", "3"], excludedUserIds: ["staff"], minWagered: "99.5", shown: 5 })),
    ).toEqual({ entries: ["1 a 7"], unallocated: "3" });
  });

  it("ranks by the weighted total when the race does", () => {
    const board = [row("a", "10", "9"), row("b", "50", "9.0"), row("c", "1", "8")];
    expect(summary(board, 10, rules({ rankBy: "weighted", prizes: ["3", "2", "1"], minWagered: "8.5" }))).toEqual({
      entries: ["1 a 2", "1 b 2"],
      unallocated: "2",
    });
  });

  it("shows a tie at the cut whole, pays placed users beyond the shown ones, keeps the rounding left", () => {
    const board = [row("a", "9"), row("b", "8"), row("c", "8"), row("d", "7")];
    expect(summary(board, 10, rules({ shown: 2, prizes: ["4", "3", "2", "1"] }))).toEqual({
      entries: ["1 a 4", "2 b 2", "2 c 2"],
      unallocated: "1",
    });
  });

  it("asks for more rows while too few users are placed and the board may have more", () => {
    const r = rules({ shown: 3, excludedUserIds: ["x"] });
    expect(placeRace([row("x", "9"), row("a", "8")], 2, r)).toEqual({ kind: "need-more", limit: 4 });
    expect(summary([row("x", "9"), row("a", "8")], 4, r)).toEqual({ entries: ["1 a 0"], unallocated: "0" });
  });

  it("asks for more rows when the last row fetched ties with the last counted user", () => {
    const r = rules({ shown: 2 });
    expect(placeRace([row("a", "9"), row("b", "8"), row("c", "8")], 3, r)).toEqual({ kind: "need-more", limit: 6 });
    expect(summary([row("a", "9"), row("b", "8"), row("c", "7")], 3, r)).toEqual({
      entries: ["1 a 0", "2 b 0"],
      unallocated: "0",
    });
  });

  it("stops when the last row fetched is below the minimum: nobody after it can be placed", () => {
    const r = rules({ shown: 5, minWagered: "10" });
    expect(summary([row("a", "20"), row("b", "9")], 2, r)).toEqual({ entries: ["1 a 0"], unallocated: "0" });
  });

  it("is complete with an empty board", () => {
    expect(summary([], 11, rules({ prizes: ["1.50"] }))).toEqual({ entries: [], unallocated: "1.50" });
  });
});
