/**
 * What a final race result's signature covers (docs/verify.md lists the fields): the race's rules as they
 * stood at the freeze, every placed entry, what is left unallocated, when it was frozen, the digest, and the
 * result's place in its affiliate's chain, and that it is final. The signer adds the issuer (`iss`), canonicalizes
 * it (RFC 8785) and signs it with the result key, `typ` race-result+jws (ports/signing.ts RACE_RESULT_KIND).
 * Amounts are decimal strings, times Unix seconds, so no verifier meets a floating-point number.
 */
import type { ChainLink, FrozenEntry, RaceEvent, ResultSealer, SignedResult, StoredRace } from "../../ports/races.js";
import type { LogPlace } from "../../ports/results-log.js";
import { type KeyedSigner, RACE_RESULT_KIND } from "../../ports/signing.js";
import { type EventResult, frozenEntryData, raceEvent } from "./race-event-data.js";
import type { RaceHistorySummary } from "./race-history.js";

export interface SignedResultInput {
  readonly race: StoredRace;
  readonly entries: readonly FrozenEntry[];
  readonly unallocated: string;
  readonly frozenAt: number;
  readonly digest: string;
  readonly link: ChainLink;
  /** What the race's history says (./race-history.ts raceHistorySummary): no user ids, no amounts. */
  readonly historySummary: RaceHistorySummary;
}

export function resultPayload(input: SignedResultInput): Record<string, unknown> {
  const { race, link } = input;
  return {
    type: RACE_RESULT_KIND.type,
    affiliateId: race.affiliateExternalId,
    raceId: race.id,
    state: "final",
    slug: race.slug,
    title: race.title,
    period: { startsAt: race.startTimestamp, endsAt: race.endTimestamp },
    timeZone: race.timeZone,
    rankBy: race.rankBy,
    currency: race.currency,
    prizes: race.prizes,
    minWagered: race.minWagered,
    entries: input.entries.map(frozenEntryData),
    unallocated: input.unallocated,
    frozenAt: input.frozenAt,
    digest: input.digest,
    chain: { sequence: link.sequence, previous: link.previous },
    historySummary: input.historySummary,
  };
}

/** The freeze's sealer: signs the result with the key given once its place in the chain is known. */
export function resultSealer(sign: KeyedSigner, unsigned: Omit<SignedResultInput, "link">): ResultSealer {
  return (link) => sign(resultPayload({ ...unsigned, link }));
}

/**
 * The race.finalized event: with the signed result when the JWS fits the 20 KB body beside every entry;
 * else with its key id and hash and `jws: null` (GET /races/{id} and GetRace answer the signed result itself),
 * the entries fitted as ./race-event-data.ts fits them, the signed result counted in. `log` is the result's place
 * in the results log (docs/verify.md): its index and entry, with `checkpoint` and `proof` null (the event is
 * written before any checkpoint holds the entry; GET /verify/{id}/signed answers them).
 */
export function finalizedEvent(
  race: StoredRace,
  result: EventResult,
  signed: SignedResult | undefined,
  logged: LogPlace,
): RaceEvent {
  const log = { index: logged.index, entry: logged.entry, checkpoint: null, proof: null };
  if (signed === undefined) return raceEvent("race.finalized", race, { ...result, extra: { log } });
  const whole = raceEvent("race.finalized", race, { ...result, extra: { signedResult: { ...signed }, log } });
  if ((whole.data as { entriesTruncated?: boolean }).entriesTruncated !== true) return whole;
  const stub = { jws: null, kid: signed.kid, sha256: signed.sha256 };
  return raceEvent("race.finalized", race, { ...result, extra: { signedResult: stub, log } });
}
