/**
 * What a race's history says, without storage: the fields a change touched (before and after; the excluded
 * users as added and removed), ids hidden from public readers, the summary a signed result carries, and the
 * ranks voids moved (each expected list worked out by hand from the boards written here).
 */
import { describe, expect, it } from "vitest";
import type { RaceHistoryEntry, VoidedRaceUser } from "../../src/ports/race-history.js";
import type { RaceDefinition } from "../../src/ports/races.js";
import type { RankedRow } from "../../src/ports/standings.js";
import type { PlacementRules } from "../../src/races/core/prizes.js";
import {
  definitionChanges,
  raceHistorySummary,
  ranksMovedByLateWagers,
  ranksMovedByVoids,
  standingsOf,
  withoutUserIds,
} from "../../src/races/core/race-history.js";

const DEFINITION: RaceDefinition = {
  slug: "cup",
  title: "Cup",
  startTimestamp: 1_000,
  endTimestamp: 2_000,
  rankBy: "wagered",
  prizes: ["100", "50"],
  currency: "USD",
  minWagered: "0",
  excludedUserIds: ["u1", "u2"],
  reviewSeconds: 60,
  shown: 2,
  repeat: "none",
  timeZone: "UTC",
};

describe("definitionChanges", () => {
  it("is empty for an unchanged definition", () => {
    expect(definitionChanges(DEFINITION, { ...DEFINITION, prizes: ["100", "50"] })).toEqual([]);
  });

  it("names each changed field with before and after, the exclusions as added and removed", () => {
    const after = { ...DEFINITION, title: "Big", endTimestamp: 3_000, prizes: ["100"], excludedUserIds: ["u2", "u3"] };
    expect(definitionChanges(DEFINITION, after)).toEqual([
      { field: "title", before: "Cup", after: "Big" },
      { field: "endTimestamp", before: 2_000, after: 3_000 },
      { field: "prizes", before: ["100", "50"], after: ["100"] },
      { field: "excludedUserIds", added: ["u3"], removed: ["u1"] },
    ]);
  });
});

const ENTRIES: RaceHistoryEntry[] = [
  { at: 10, kind: "created", actor: { kind: "key", id: "k1" }, fields: [] },
  { at: 20, kind: "updated", actor: { kind: "cli", id: "ops" }, fields: [{ field: "excludedUserIds", added: ["u9"] }] },
  {
    at: 30,
    kind: "frozen",
    actor: { kind: "clock", id: "" },
    fields: [],
    standings: { voidedWagers: 2, usersAffected: 1, ranksMoved: [1] },
  },
];

describe("public readers and the signed summary", () => {
  it("hides excluded user ids, keeping their count", () => {
    expect(withoutUserIds(ENTRIES)[1]?.fields).toEqual([{ field: "excludedUserIds", added: [""], removed: [] }]);
  });

  it("summarises every entry but the freeze, counts changes after creation, and names no user", () => {
    const standings = { voidedWagers: 2, usersAffected: 1, ranksMoved: [1] };
    expect(raceHistorySummary(ENTRIES, standings)).toEqual({
      changes: 1,
      entries: [
        { at: 10, kind: "created", actor: { kind: "key", id: "k1" }, fields: [] },
        {
          at: 20,
          kind: "updated",
          actor: { kind: "cli", id: "ops" },
          fields: [{ field: "excludedUserIds", added: [""], removed: [] }],
        },
      ],
      standings,
    });
  });
});

function row(id: string, total: string): RankedRow {
  return { userExternalId: id, username: id, avatarUrl: null, total, weightedTotal: total };
}

function voided(id: string, total: string, voidedTotal: string): VoidedRaceUser {
  return {
    userExternalId: id,
    username: id,
    avatarUrl: null,
    voidedWagers: 1,
    voidedTotal,
    voidedWeighted: voidedTotal,
    total,
    weightedTotal: total,
  };
}

const RULES: PlacementRules = {
  prizes: ["100", "50", "25"],
  minWagered: "0",
  excludedUserIds: [],
  shown: 3,
  rankBy: "wagered",
};

describe("ranksMovedByVoids", () => {
  it("is empty without voids, and when a void moved nobody", () => {
    const board = [row("a", "500"), row("b", "400"), row("c", "100")];
    expect(ranksMovedByVoids(board, [], RULES)).toEqual([]);
    expect(ranksMovedByVoids(board, [voided("a", "500", "50")], RULES)).toEqual([]);
  });

  it("names both ranks of a swap", () => {
    // Before: a 500, b 400, c 100. After a's 200 is voided: b 400, a 300, c 100.
    const board = [row("b", "400"), row("a", "300"), row("c", "100")];
    expect(ranksMovedByVoids(board, [voided("a", "300", "200")], RULES)).toEqual([1, 2]);
  });

  it("counts a user the board no longer lists, who fell out of the places", () => {
    // Before: d 600, a 500, b 400 (c 100 fourth). After d's 590 is voided d has 10 and is past the read rows.
    const board = [row("a", "500"), row("b", "400"), row("c", "100")];
    expect(ranksMovedByVoids(board, [voided("d", "10", "590")], RULES)).toEqual([1, 2, 3]);
  });

  it("names a rank whose prize changed through a tie the void broke", () => {
    // Before: a 400 and b 400 tie at rank 1 (75 each), c 100 third. After b's 1: a 400 first, b 399 second.
    const board = [row("a", "400"), row("b", "399"), row("c", "100")];
    expect(ranksMovedByVoids(board, [voided("b", "399", "1")], RULES)).toEqual([1, 2]);
  });
});

/** A user with late wagers: `lateTotal` of their `total` now was recorded during the review. */
function late(id: string, total: string, lateTotal: string, wagers = 1): VoidedRaceUser {
  return { ...voided(id, total, lateTotal), voidedWagers: wagers };
}

describe("ranksMovedByLateWagers", () => {
  it("is empty without late wagers, and when they moved nobody", () => {
    const board = [row("a", "500"), row("b", "400"), row("c", "100"), row("d", "50")];
    expect(ranksMovedByLateWagers(board, [], RULES)).toEqual([]);
    // a had 450 at the end and 500 now: first either way.
    expect(ranksMovedByLateWagers(board, [late("a", "500", "50")], RULES)).toEqual([]);
  });

  it("names both ranks of a swap the late wagers made", () => {
    // Now: a 500, c 450, b 400 (d 50). Without c's late 350: a 500, b 400, c 100: ranks 2 and 3 changed users.
    const board = [row("a", "500"), row("c", "450"), row("b", "400"), row("d", "50")];
    expect(ranksMovedByLateWagers(board, [late("c", "450", "350", 2)], RULES)).toEqual([2, 3]);
  });

  it("leaves out a user whose every wager was late, and brings up the next row", () => {
    // Now: e 900 (all late), a 500, b 400, c 100. Without e: a 500, b 400, c 100: every rank changed user.
    const board = [row("e", "900"), row("a", "500"), row("b", "400"), row("c", "100")];
    expect(ranksMovedByLateWagers(board, [late("e", "900", "900")], RULES)).toEqual([1, 2, 3]);
  });

  it("ignores a late user the board does not hold (below every held row, lower still without them)", () => {
    const board = [row("a", "500"), row("b", "400"), row("c", "100"), row("d", "50")];
    expect(ranksMovedByLateWagers(board, [late("z", "40", "30")], RULES)).toEqual([]);
  });

  it("names a rank whose prize changed through a tie the late wager made", () => {
    // Now: a 400 and b 400 tie at rank 1 (75 each), c 100 third. Without b's late 1: a first (100), b second (50).
    // The final result's rank 1 (both its users) differs in prize; it has no rank 2.
    const board = [row("a", "400"), row("b", "400"), row("c", "100"), row("d", "50")];
    expect(ranksMovedByLateWagers(board, [late("b", "400", "1")], RULES)).toEqual([1]);
  });
});

describe("standingsOf", () => {
  it("answers the late wagers noted so far beside the voids before the freeze, the ranks not yet", () => {
    const entries = ENTRIES.slice(0, 2);
    expect(standingsOf(entries, { voidedWagers: 1, usersAffected: 1 }, { voidedWagers: 3, usersAffected: 2 })).toEqual({
      voidedWagers: 1,
      usersAffected: 1,
      ranksMoved: null,
      lateWagers: { wagers: 3, usersAffected: 2, ranksMoved: null },
    });
  });

  it("answers the freeze's count once final, without late wagers for a race frozen before they were counted", () => {
    expect(standingsOf(ENTRIES, { voidedWagers: 9, usersAffected: 9 }, { voidedWagers: 9, usersAffected: 9 })).toEqual({
      voidedWagers: 2,
      usersAffected: 1,
      ranksMoved: [1],
    });
  });
});
