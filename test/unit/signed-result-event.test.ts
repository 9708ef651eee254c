/**
 * The race.finalized event with a signed result (issue 36 item 2): the JWS rides along when it fits the 20 KB
 * body beside every entry; when it does not, the event keeps its key id and hash with `jws: null` and the body
 * still fits, measured here on the whole body as values/webhook-events.ts writes it.
 */
import { describe, expect, it } from "vitest";
import type { FrozenEntry, StoredRace } from "../../src/ports/races.js";
import { finalizedEvent } from "../../src/races/core/signed-result.js";
import { MAX_WEBHOOK_BODY_BYTES } from "../../src/values/webhook-events.js";

const RACE: StoredRace = {
  ...{ id: "race_x", affiliateId: 1, affiliateExternalId: "aff", slug: "s", title: "T", seriesIndex: 0 },
  ...{ startTimestamp: 1_800_000_000, endTimestamp: 1_800_086_399, rankBy: "wagered", prizes: ["10.00"] },
  ...{ currency: "USD", minWagered: "0", excludedUserIds: [], reviewSeconds: 0, shown: 10, repeat: "none" },
  ...{ timeZone: "UTC", anchorStart: 1_800_000_000, createdAt: 1, updatedAt: 1, cancelledAt: null },
  ...{ frozenAt: 1_800_086_400, digest: "ab".repeat(32), unallocated: "0.00" },
  ...{ startAnnounced: true, endAnnounced: true, nextCreated: false, slugHeld: true },
};

function entries(count: number, nameLength: number): FrozenEntry[] {
  return Array.from({ length: count }, (_, i) => ({
    rank: i + 1,
    userExternalId: `u${i}`,
    username: `${"n".repeat(nameLength)}${i}`,
    avatarUrl: "",
    total: "1",
    weightedTotal: "1",
    prize: i === 0 ? "10.00" : "0.00",
  }));
}

/** The result's place in the results log, as the freeze's transaction gives it. */
const LOGGED = { index: 41, entry: '{"affiliateId":"aff","at":1,"kind":"final"}' };
const LOG = { ...LOGGED, checkpoint: null, proof: null };

const bodyBytes = (data: unknown) =>
  Buffer.byteLength(JSON.stringify({ type: "race.finalized", timestamp: "2027-01-15T08:00:00.000Z", data }));

describe("the race.finalized event's signed result", () => {
  it("carries the result's place in the results log, signed or not", () => {
    const event = finalizedEvent(RACE, { entries: entries(3, 5), unallocated: "0.00" }, undefined, LOGGED);
    expect((event.data as { log: unknown }).log).toEqual(LOG);
    expect((event.data as { signedResult?: unknown }).signedResult).toBeUndefined();
  });

  it("carries the whole signed result when it fits beside every entry", () => {
    const signed = { jws: `h.${"p".repeat(4_000)}.s`, kid: "k1", sha256: "cd".repeat(32) };
    const event = finalizedEvent(RACE, { entries: entries(3, 5), unallocated: "0.00" }, signed, LOGGED);
    expect((event.data as { signedResult: unknown }).signedResult).toEqual(signed);
    expect((event.data as { log: unknown }).log).toEqual(LOG);
    expect((event.data as { entries: unknown[] }).entries).toHaveLength(3);
  });

  it("keeps its kid and hash with jws null when the JWS does not fit, and the body stays under 20 KB", () => {
    const signed = { jws: `h.${"p".repeat(15_000)}.s`, kid: "k1", sha256: "cd".repeat(32) };
    const event = finalizedEvent(RACE, { entries: entries(50, 60), unallocated: "0.00" }, signed, LOGGED);
    const data = event.data as { signedResult: unknown; entries: unknown[]; entriesTruncated?: boolean; log: unknown };
    expect(data.signedResult).toEqual({ jws: null, kid: "k1", sha256: "cd".repeat(32) });
    expect(data.log).toEqual(LOG);
    expect([data.entries.length, data.entriesTruncated]).toEqual([50, undefined]);
    expect(bodyBytes(event.data)).toBeLessThan(MAX_WEBHOOK_BODY_BYTES);
  });
});
