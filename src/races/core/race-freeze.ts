/**
 * The clock's last step, the freeze: once a race's review window is over, its board is read from the primary
 * (uncached), placed with every place a prize is paid to, hashed (digest.ts), its history's freeze entry
 * counted (what voids and late wagers did, race-history.ts), signed when a key is active (signed-result.ts), and written
 * once with the start and end announcements still owed and its entry in the results log (RaceStore.freeze, one
 * transaction).
 */

import type { FrozenEntry, NewRace, SignedResult, StoredRace } from "../../ports/races.js";
import type { LogPlace } from "../../ports/results-log.js";
import type { StandingsStore } from "../../ports/standings.js";
import { type DigestedResult, raceDigest } from "./digest.js";
import { raceEvent } from "./race-event-data.js";
import { freezeHistory, raceHistorySummary } from "./race-history.js";
import { frozenEntry, placementRules } from "./race-placing.js";
import type { RaceReads } from "./race-reads.js";
import type { RacesOptions } from "./race-view.js";
import { finalizedEvent, resultSealer } from "./signed-result.js";

/** What the freeze works with: the services' options, the reads that place a race, a series' next race. */
export interface FreezeContext {
  readonly options: RacesOptions;
  readonly reads: RaceReads;
  /** The series' race after `race` (race-clock.ts), owed when its start was not announced yet. */
  readonly nextOf: (race: StoredRace) => NewRace | null;
}

/** Freezes `race` at `now` on the board `boards` gives; true when this call froze it (once, on any instance). */
export async function freezeRace(
  context: FreezeContext,
  race: StoredRace,
  now: number,
  boards: StandingsStore,
): Promise<boolean> {
  const { options } = context;
  // The result decides payouts: it holds every user a prize is paid to, even past `shown` (so the
  // digest covers every winner), besides the shown places.
  const counted = Math.max(race.shown, race.prizes.length);
  const placement = await context.reads.place(race, boards, counted);
  const { unallocated } = placement;
  const entries = placement.entries.map((entry) => frozenEntry(entry, options.defaultAvatarUrl));
  const { digest } = raceDigest(digestInput(race, entries, unallocated));
  const frozen: StoredRace = { ...race, frozenAt: now, digest, unallocated };
  const moreRows = (limit: number) =>
    boards.topUsers(race.affiliateId, race.startTimestamp, race.endTimestamp, limit, race.rankBy);
  const { signer } = options;
  // The signed result carries the race's history as recorded before its freeze (no change is allowed after the
  // end): read beside the voids the freeze's own entry counts, at once. So is the active key: signing inside the
  // freeze's transaction reads nothing, and a freeze holding its affiliate's lock never waits for a connection
  // that another freeze, waiting for that lock, holds.
  const [history, recorded, sign] = await Promise.all([
    freezeHistory(options.store, race.id, placement.rows, placementRules(race, counted), moreRows),
    signer === undefined ? undefined : options.store.history(race.id),
    signer?.withActiveKey(),
  ]);
  const seal =
    sign === undefined || recorded === undefined
      ? undefined
      : resultSealer(sign, {
          ...{ race, entries, unallocated, frozenAt: now, digest },
          historySummary: raceHistorySummary(recorded, history.standings ?? NO_VOIDS),
        });
  return options.store.freeze({
    id: race.id,
    affiliateExternalId: race.affiliateExternalId,
    result: { at: now, digest, unallocated, entries },
    event: (signed: SignedResult | undefined, logged: LogPlace) =>
      finalizedEvent(frozen, { entries, unallocated }, signed, logged),
    owed: {
      started: raceEvent("race.started", race),
      ended: raceEvent("race.ended", race),
      next: context.nextOf(race),
    },
    history,
    seal,
  });
}

function digestInput(race: StoredRace, entries: readonly FrozenEntry[], unallocated: string): DigestedResult {
  return {
    raceId: race.id,
    slug: race.slug,
    startTimestamp: race.startTimestamp,
    endTimestamp: race.endTimestamp,
    rankBy: race.rankBy,
    currency: race.currency,
    entries: entries.map((entry) => ({
      rank: entry.rank,
      username: entry.username,
      wagered: entry.total,
      weighted: entry.weightedTotal,
      prize: entry.prize,
    })),
    unallocated,
  };
}

/** What voids did to a race none touched. */
const NO_VOIDS = { voidedWagers: 0, usersAffected: 0, ranksMoved: [] } as const;
