/**
 * Edge cases of the races review (notes/issue-29-review.md) on the pure placement: an excluded user tied at the
 * cut takes no place and no share; a race without prizes pays nothing and leaves "0"; a board of 1,000 excluded
 * users ahead of everyone is read through the need-more loop with bounded reads.
 */
import { describe, expect, it } from "vitest";
import type { RankedRow, StandingsStore } from "../../src/ports/standings.js";
import { placeRace } from "../../src/races/core/prizes.js";
import { placeFromBoard } from "../../src/races/core/races.js";

function row(id: string, total: string): RankedRow {
  return { userExternalId: id, username: `user-${id}`, avatarUrl: null, total, weightedTotal: total };
}

describe("placement edge cases", () => {
  it("an excluded user tied at the cut takes no place nor share: the others split as if it were not there", () => {
    const rows = [row("a", "10"), row("staff", "5"), row("b", "5"), row("c", "5"), row("d", "1")];
    const placement = placeRace(rows, 6, {
      prizes: ["30", "20", "10"],
      minWagered: "0",
      excludedUserIds: ["staff"],
      shown: 3,
      rankBy: "wagered",
    });
    expect(
      placement.kind === "complete" && placement.entries.map((e) => [e.rank, e.row.userExternalId, e.prize]),
    ).toEqual([
      [1, "a", "30"],
      [2, "b", "15"],
      [2, "c", "15"],
    ]);
    expect(placement.kind === "complete" && placement.unallocated).toBe("0");
  });

  it("a race without prizes pays nothing and leaves 0 unallocated", () => {
    const placement = placeRace([row("a", "10"), row("b", "5")], 3, {
      prizes: [],
      minWagered: "0",
      excludedUserIds: [],
      shown: 10,
      rankBy: "wagered",
    });
    expect(placement).toEqual({
      kind: "complete",
      entries: [
        { rank: 1, row: row("a", "10"), prize: "0" },
        { rank: 2, row: row("b", "5"), prize: "0" },
      ],
      unallocated: "0",
    });
  });

  it("1,000 excluded users ahead of everyone: one read of firstLimit rows places the rest", async () => {
    const excluded = Array.from({ length: 1000 }, (_, i) => `x${String(i).padStart(4, "0")}`);
    const board = [
      ...excluded.map((id) => row(id, "1000")),
      ...Array.from({ length: 200 }, (_, i) => row(`u${i}`, String(500 - i))),
    ];
    const limits: number[] = [];
    const store: StandingsStore = {
      async topUsers(_affiliate, _start, _end, limit) {
        limits.push(limit);
        return board.slice(0, limit);
      },
    };
    const placement = await placeFromBoard(store, 1, 0, 1, {
      prizes: ["3", "2", "1"],
      minWagered: "0",
      excludedUserIds: excluded,
      shown: 3,
      rankBy: "wagered",
    });
    expect(limits).toEqual([1004]);
    expect(placement.entries.map((e) => [e.rank, e.row.userExternalId, e.prize])).toEqual([
      [1, "u0", "3"],
      [2, "u1", "2"],
      [3, "u2", "1"],
    ]);
  });
});
