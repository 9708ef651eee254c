/**
 * What a race's history says, without storage: the fields a change touched (before and after; the excluded
 * users as added and removed), ids hidden from public readers, the summary a signed result carries, and the
 * ranks voids moved (each expected list worked out by hand from the boards written here).
 */
import { describe, expect, it } from "vitest";
import type { RaceHistoryEntry, VoidedRaceUser } from "../../src/ports/race-history.js";
import type { RaceDefinition } from "../../src/ports/races.js";
import type { RankedRow } from "../../src/ports/standings.js";
import type { PlacementRules } from "../../src/races/prizes.js";
import {
  definitionChanges,
  raceHistorySummary,
  ranksMovedByVoids,
  withoutUserIds,
} from "../../src/races/race-history.js";

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
