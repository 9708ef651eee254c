/**
 * What a signed live race covers (issue 36 item 3, docs/verify.md "A signed live race"): a race stream's viewer
 * that asks (`signed=true`) gets each version of the race with the operator's detached signature over this
 * object and the issuer (`iss`, added by the signer), with the live key and the `typ` live-race+jws, never the
 * results' key (ports/signing.ts LIVE_RACE_KIND): the affiliate, the race (id, slug, state, period, ranking,
 * currency), the version (the event's id), the placed entries, what is left unallocated, and when it was signed.
 * Amounts are decimal strings, times Unix seconds, so no verifier meets a floating-point number. Signed once
 * per version however many watch it (signing/core/version-signatures.ts).
 */
import { LIVE_RACE_KIND } from "../../ports/signing.js";
import type { RaceView } from "./race-view.js";

export function liveRacePayload(view: RaceView, version: string, signedAt: number): Record<string, unknown> {
  const { race } = view;
  return {
    type: LIVE_RACE_KIND.type,
    affiliate: race.affiliateExternalId,
    raceId: race.id,
    slug: race.slug,
    state: view.state,
    period: { start: race.startTimestamp, end: race.endTimestamp },
    rankBy: race.rankBy,
    currency: race.currency,
    version,
    entries: view.entries.map((entry) => ({
      rank: entry.rank,
      username: entry.username,
      avatar: entry.avatar,
      totalWagered: entry.totalWagered,
      weightedWagered: entry.weightedWagered,
      prize: entry.prize,
    })),
    unallocated: view.unallocated,
    signedAt,
  };
}
