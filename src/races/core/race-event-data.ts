/**
 * What a race's webhook event carries (docs/webhooks.md, "Event catalogue"): the race as REST shows it,
 * without live standings; `race.finalized` adds the frozen result. Every race event's `data` is built here,
 * in one place, so that what is added to it later is measured by the same budget.
 *
 * The body must stay under MAX_WEBHOOK_BODY_BYTES of UTF-8 (values/webhook-events.ts refuses it otherwise,
 * inside the freeze's transaction). So the result fits by construction, measured in bytes of the whole body:
 * every entry when they fit; else only the paid ranks, with `entriesTruncated: true` and `paidEntries`
 * (how many paid ranks the result has); else as many of the paid ranks, best first, as fit, still with
 * `entriesTruncated` and `paidEntries`, so a receiver sees that `entries` is short and reads the whole result
 * with GetRace (`GET /races/{id}`, the event's `id`).
 */
import type { FrozenEntry, RaceEvent, StoredRace } from "../../ports/races.js";
import { MAX_WEBHOOK_BODY_BYTES } from "../../values/webhook-events.js";
import { finalAt, type RaceState } from "./race-state.js";

export interface EventResult {
  readonly entries: readonly FrozenEntry[];
  readonly unallocated: string;
  /** More fields of the result (the signed result, ./signed-result.ts), counted in the body's size too. */
  readonly extra?: Readonly<Record<string, unknown>>;
}

/** An RFC 3339 UTC time as webhookBody writes it: always this long for years 0 to 9999. */
const TIMESTAMP_SHAPE = "0000-00-00T00:00:00.000Z";

/** The body's size in bytes of UTF-8, as values/webhook-events.ts's webhookBody writes it. */
function bodyBytes(type: RaceEvent["type"], data: Record<string, unknown>): number {
  return Buffer.byteLength(JSON.stringify({ type, timestamp: TIMESTAMP_SHAPE, data }), "utf8");
}

function fits(type: RaceEvent["type"], data: Record<string, unknown>): boolean {
  return bodyBytes(type, data) < MAX_WEBHOOK_BODY_BYTES;
}

/** A race event: its type, and its data fitted to the body limit. */
/** A frozen entry as a race event's data and a signed result show it (the wire's names, decimals as stored). */
export function frozenEntryData(entry: FrozenEntry) {
  return {
    rank: entry.rank,
    userId: entry.userExternalId,
    username: entry.username,
    totalWageredDecimal: entry.total,
    weightedWageredDecimal: entry.weightedTotal,
    prize: entry.prize,
  };
}

export function raceEvent(type: RaceEvent["type"], race: StoredRace, result: EventResult | null = null): RaceEvent {
  return { type, data: raceEventData(type, race, result) };
}

function raceEventData(type: RaceEvent["type"], race: StoredRace, result: EventResult | null): Record<string, unknown> {
  const state = STATE_OF[type];
  const full = fullEventData(race, state, result);
  if (result === null || fits(type, full)) return full;
  const paid = result.entries.filter((entry) => /[1-9]/.test(entry.prize));
  const truncated = (entries: readonly FrozenEntry[]) => ({
    ...fullEventData(race, state, { ...result, entries }),
    entriesTruncated: true,
    paidEntries: paid.length,
  });
  // The longest prefix of the paid ranks that fits: a binary search over its length (0 always fits: a
  // race's definition alone is a few KB at most, race-rules.ts).
  let low = 0;
  let high = paid.length;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (fits(type, truncated(paid.slice(0, middle)))) low = middle;
    else high = middle - 1;
  }
  return truncated(paid.slice(0, low));
}

const STATE_OF: Readonly<Record<RaceEvent["type"], RaceState>> = {
  "race.started": "live",
  "race.ended": "reviewing",
  "race.finalized": "final",
  "race.cancelled": "cancelled",
};

function fullEventData(race: StoredRace, state: RaceState, result: EventResult | null): Record<string, unknown> {
  return {
    id: race.id,
    affiliateId: race.affiliateExternalId,
    slug: race.slug,
    title: race.title,
    state,
    startsAt: race.startTimestamp,
    endsAt: race.endTimestamp,
    finalAt: finalAt({ end: race.endTimestamp, reviewSeconds: race.reviewSeconds }),
    rankBy: race.rankBy,
    currency: race.currency,
    prizes: race.prizes,
    ...(result === null
      ? {}
      : {
          digest: race.digest,
          frozenAt: race.frozenAt,
          unallocated: result.unallocated,
          entries: result.entries.map(frozenEntryData),
          ...result.extra,
        }),
  };
}
