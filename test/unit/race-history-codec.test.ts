/**
 * A race's history on the wire (races/wire/codecs/race-history.ts): the late wagers beside the voids in the REST JSON and in
 * GetRace's message, and a race frozen before late wagers were counted, which says so (`null`; `lateCounted`
 * false) instead of answering zeros it never counted.
 */
import { describe, expect, it } from "vitest";
import type { RaceHistory } from "../../src/races/core/race-history.js";
import { raceHistoryJson, raceHistoryMessage } from "../../src/races/wire/codecs/race-history.js";

const FROZEN_AT = 1_796_086_800;

function history(standings: RaceHistory["standings"]): RaceHistory {
  return {
    raceId: "race_aaaaaaaaaaaaaaaaaaaa",
    entries: [{ at: FROZEN_AT, kind: "frozen", actor: { kind: "clock", id: "" }, fields: [], standings }],
    standings,
  };
}

describe("the standings of a race's history", () => {
  it("carry the late wagers in JSON and in the message", () => {
    const counted = history({
      voidedWagers: 3,
      usersAffected: 1,
      ranksMoved: [1, 2],
      lateWagers: { wagers: 2, usersAffected: 1, ranksMoved: [3] },
    });
    expect(JSON.parse(raceHistoryJson(counted)).standings).toEqual({
      voidedWagers: 3,
      usersAffected: 1,
      ranksMoved: [1, 2],
      lateWagers: { wagers: 2, usersAffected: 1, ranksMoved: [3] },
    });
    const message = raceHistoryMessage(counted).standings;
    expect([message?.lateWagers, message?.lateUsersAffected, message?.lateRanksMoved, message?.lateCounted]).toEqual([
      2,
      1,
      [3],
      true,
    ]);
  });

  it("say a race frozen before late wagers were counted did not count them", () => {
    const older = history({ voidedWagers: 0, usersAffected: 0, ranksMoved: [] });
    expect(JSON.parse(raceHistoryJson(older)).standings).toEqual({
      voidedWagers: 0,
      usersAffected: 0,
      ranksMoved: [],
      lateWagers: null,
    });
    const message = raceHistoryMessage(older).standings;
    expect([message?.lateWagers, message?.lateUsersAffected, message?.lateRanksMoved, message?.lateCounted]).toEqual([
      0,
      0,
      [],
      false,
    ]);
  });
});
