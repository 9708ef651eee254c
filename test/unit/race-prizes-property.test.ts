/**
 * placeRace, driven through its need-more loop over a random sorted board as the race service drives it,
 * answers exactly as the independent reference (test/support/race-reference.ts) does: random totals with many
 * ties (the same value written with different numbers of trailing zeros), prize tables of mixed scales,
 * exclusions, minimums and shown counts.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { RankedRow } from "../../src/ports/standings.js";
import { firstLimit, type PlacementRules, placeRace } from "../../src/races/core/prizes.js";
import { referencePlacement } from "../support/race-reference.js";
import { byCodePoint } from "../support/reference-model.js";

/** Few distinct values, each in several spellings, so ties are common and compared by value. */
const TOTALS = ["0.5", "1", "1.0", "2.25", "2.250000000000", "10", "10.00000000", "333.33333333", "1000000"];
const total = fc.constantFrom(...TOTALS);

const amount = fc.oneof(
  fc.constantFrom("0", "1", "10", "33.3", "0.01", "100.00", "7.125", "50", "30"),
  fc.tuple(fc.bigInt({ min: 0n, max: 10n ** 12n - 1n }), fc.integer({ min: 0, max: 8 })).map(([units, scale]) => {
    const text = units.toString().padStart(scale + 1, "0");
    return scale === 0 ? text : `${text.slice(0, -scale)}.${text.slice(-scale)}`;
  }),
);

const scenario = fc
  .record({
    users: fc.array(fc.record({ name: fc.constantFrom("ann", "bob", "cy", "Dee", "éva"), total, weighted: total }), {
      maxLength: 40,
    }),
    prizes: fc.array(amount, { maxLength: 12 }),
    minWagered: fc.oneof(fc.constant("0"), total),
    excludedCount: fc.integer({ min: 0, max: 6 }),
    strangers: fc.array(fc.constantFrom("nobody", "x9"), { maxLength: 2 }),
    shown: fc.integer({ min: 1, max: 14 }),
    rankBy: fc.constantFrom("wagered" as const, "weighted" as const),
    excludedSeed: fc.integer({ min: 0, max: 1_000 }),
  })
  .map((s) => {
    const rows: RankedRow[] = s.users.map((user, i) => ({
      userExternalId: `u${i}`,
      username: user.name,
      avatarUrl: null,
      total: user.total,
      weightedTotal: user.weighted,
    }));
    const ranked = (row: RankedRow) => Number(s.rankBy === "weighted" ? row.weightedTotal : row.total);
    // The board's order: ranked total descending, then username, then user id (these few values compare correctly as doubles).
    rows.sort(
      (a, b) =>
        ranked(b) - ranked(a) || byCodePoint(a.username, b.username) || byCodePoint(a.userExternalId, b.userExternalId),
    );
    const excluded = rows.filter((_, i) => (i * 7 + s.excludedSeed) % 5 === 0).slice(0, s.excludedCount);
    const rules: PlacementRules = {
      prizes: s.prizes,
      minWagered: s.minWagered,
      excludedUserIds: [...excluded.map((row) => row.userExternalId), ...s.strangers],
      shown: s.shown,
      rankBy: s.rankBy,
    };
    return { board: rows, rules };
  });

/** What the race service does: ask the board for firstLimit rows, then for more while placeRace says so. */
function placeThroughTheLoop(board: readonly RankedRow[], rules: PlacementRules) {
  let limit = firstLimit(rules);
  for (let asked = 0; asked < 20; asked += 1) {
    const placement = placeRace(board.slice(0, limit), limit, rules);
    if (placement.kind === "complete") {
      return {
        entries: placement.entries.map((e) => [e.rank, e.row.userExternalId, e.prize]),
        unallocated: placement.unallocated,
      };
    }
    expect(placement.limit).toBeGreaterThan(limit);
    limit = placement.limit;
  }
  throw new Error("placeRace kept asking for more rows");
}

describe("placeRace on the reference", () => {
  it("places, ranks, splits and shows exactly as the reference does", () => {
    fc.assert(
      fc.property(scenario, ({ board, rules }) => {
        expect(placeThroughTheLoop(board, rules)).toEqual(referencePlacement(board, rules));
      }),
      { numRuns: 1_000 },
    );
  });

  it("the reference itself gives the issue's worked examples", () => {
    const row = (id: string, total: string): RankedRow => ({
      userExternalId: id,
      username: id,
      avatarUrl: null,
      total,
      weightedTotal: total,
    });
    const rules = { minWagered: "0", excludedUserIds: [], rankBy: "wagered" as const };
    expect(
      referencePlacement([row("a", "9"), row("b", "5"), row("c", "5"), row("d", "5")], {
        ...rules,
        prizes: ["100.00", "50.00", "30.00"],
        shown: 3,
      }),
    ).toEqual({
      entries: [
        [1, "a", "100.00"],
        [2, "b", "26.66"],
        [2, "c", "26.66"],
        [2, "d", "26.66"],
      ],
      unallocated: "0.02",
    });
  });
});
