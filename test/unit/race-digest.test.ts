import { describe, expect, it } from "vitest";
import { raceDigest } from "../../src/races/core/digest.js";

describe("raceDigest", () => {
  it("writes the documented canonical JSON and its SHA-256 (computed separately with sha256sum)", () => {
    const result = raceDigest({
      raceId: "race_1",
      slug: "monthly",
      startTimestamp: 1_793_491_200,
      endTimestamp: 1_796_083_199,
      rankBy: "weighted",
      currency: "USD",
      entries: [
        { rank: 1, username: 'alice "A" ☃', wagered: "1234.50000000", weighted: "617.250000000000", prize: "50.00" },
        { rank: 2, username: "bob", wagered: "0100", weighted: "0.000000000000", prize: "26.66" },
      ],
      unallocated: "0.02",
    });
    expect(result.canonical).toBe(
      '{"raceId":"race_1","slug":"monthly","startTimestamp":1793491200,"endTimestamp":1796083199,' +
        '"rankBy":"weighted","currency":"USD","entries":[' +
        '{"rank":1,"username":"alice \\"A\\" ☃","wagered":"1234.5","weighted":"617.25","prize":"50"},' +
        '{"rank":2,"username":"bob","wagered":"100","weighted":"0","prize":"26.66"}],"unallocated":"0.02"}',
    );
    expect(result.digest).toBe("2ceb2403dc92e2cbd895e028ffa426e94bd614169a4bd91e150d58588f9c7f8b");
  });

  it("writes weighted as null in a wagered race, and an empty result", () => {
    const result = raceDigest({
      raceId: "race_2",
      slug: "daily",
      startTimestamp: 1_733_115_600,
      endTimestamp: 1_733_201_999,
      rankBy: "wagered",
      currency: "BTC",
      entries: [],
      unallocated: "0.00100",
    });
    expect(result.canonical).toBe(
      '{"raceId":"race_2","slug":"daily","startTimestamp":1733115600,"endTimestamp":1733201999,' +
        '"rankBy":"wagered","currency":"BTC","entries":[],"unallocated":"0.001"}',
    );
    expect(result.digest).toBe("ca03c8c87d9680c7a9463ecc36281e7a4024cce8c41368276ee5b8af115d8b3d");
    const entry = { rank: 1, username: "u", wagered: "5", weighted: "2.5", prize: "0" };
    expect(raceDigest({ ...baseOf(), entries: [entry] }).canonical).toContain(
      '"entries":[{"rank":1,"username":"u","wagered":"5","weighted":null,"prize":"0"}]',
    );
  });

  it("refuses what the recipe cannot write: a fractional rank, a weighted race without weighted totals", () => {
    const entry = { rank: 1.5, username: "u", wagered: "5", weighted: null, prize: "0" };
    expect(() => raceDigest({ ...baseOf(), entries: [entry] })).toThrow("not an integer: 1.5");
    expect(() => raceDigest({ ...baseOf(), rankBy: "weighted", entries: [{ ...entry, rank: 1 }] })).toThrow(
      "a weighted race's entry has no weighted total (rank 1)",
    );
  });
});

function baseOf() {
  return {
    raceId: "race_3",
    slug: "s",
    startTimestamp: 1_733_115_600,
    endTimestamp: 1_733_115_600,
    rankBy: "wagered" as const,
    currency: "USD",
    entries: [],
    unallocated: "0",
  };
}
