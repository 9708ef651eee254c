/**
 * What races ask of storage: the races table (definitions and where each stands), the frozen
 * results, and the state changes that must happen exactly once (announcing a start or an end,
 * creating a series' next race, the freeze, a cancellation), each in one transaction with the
 * event it causes. Implemented on MariaDB by races/sql/races.ts.
 */
import type { RankBy } from "../values/weights.js";
import type { NewRaceHistoryEntry, RaceActor, RaceHistoryStore } from "./race-history.js";
import type { LogPlace } from "./results-log.js";
import type { SignedPayload } from "./signing.js";

export type RaceRepeat = "none" | "daily" | "weekly" | "monthly";

/** A race as its owner defines it (validated by races/core/race-rules.ts). */
export interface RaceDefinition {
  readonly slug: string;
  readonly title: string;
  /** Inclusive period, Unix seconds. */
  readonly startTimestamp: number;
  readonly endTimestamp: number;
  readonly rankBy: RankBy;
  /** Prize of rank 1, 2, …: decimal strings as given (their scale is the prize table's scale). */
  readonly prizes: readonly string[];
  readonly currency: string;
  /** Decimal string as given. */
  readonly minWagered: string;
  /** Without repeats, in the order first sent. */
  readonly excludedUserIds: readonly string[];
  readonly reviewSeconds: number;
  readonly shown: number;
  readonly repeat: RaceRepeat;
  readonly timeZone: string;
}

/** A race as stored. */
export interface StoredRace extends RaceDefinition {
  /** The public id, e.g. "race_3kq…". */
  readonly id: string;
  /** Internal key of the owning affiliate. */
  readonly affiliateId: number;
  /** The platform's id of the owning affiliate. */
  readonly affiliateExternalId: string;
  /** 0 for a series' first race (and a one-off race), then 1, 2, … */
  readonly seriesIndex: number;
  /** The first race's start: period k of a series is counted from it. */
  readonly anchorStart: number;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly cancelledAt: number | null;
  readonly frozenAt: number | null;
  /** SHA-256 hex of the frozen result; null until frozen. */
  readonly digest: string | null;
  /** The frozen result's unallocated prizes; null until frozen. */
  readonly unallocated: string | null;
  readonly startAnnounced: boolean;
  readonly endAnnounced: boolean;
  readonly nextCreated: boolean;
  /** False once a new series took the slug (races/sql/race-slugs.ts): the race then answers only by its id. */
  readonly slugHeld: boolean;
}

/** A placed user of a frozen result, as it was at the freeze. */
export interface FrozenEntry {
  readonly rank: number;
  readonly userExternalId: string;
  readonly username: string;
  readonly avatarUrl: string;
  /** Exact canonical decimals. */
  readonly total: string;
  readonly weightedTotal: string;
  /** At the prize table's scale. */
  readonly prize: string;
}

/** An event a state change causes (the webhooks' outbox takes it in the same transaction). */
export interface RaceEvent {
  readonly type: "race.started" | "race.ended" | "race.finalized" | "race.cancelled";
  readonly data: unknown;
}

export interface NewRace extends RaceDefinition {
  readonly id: string;
  readonly affiliateId: number;
  readonly seriesIndex: number;
  readonly anchorStart: number;
  readonly createdAt: number;
}

/** What RaceStore.insert did. */
export type RaceInsert =
  | { readonly kind: "inserted"; readonly race: StoredRace }
  | { readonly kind: "slug-taken" }
  | { readonly kind: "cap-reached" };

/** The steps a freeze takes too when they were not taken yet (see RaceStore.freeze). */
export interface OwedSteps {
  readonly started: RaceEvent;
  readonly ended: RaceEvent;
  /** A series' next race, created with the start. */
  readonly next: NewRace | null;
}

/** What a freeze writes (RaceStore.freeze). */
export interface RaceFreeze {
  /** The race's public id. */
  readonly id: string;
  /** The affiliate's platform id (the results log's entry names it). */
  readonly affiliateExternalId: string;
  readonly result: FrozenResult;
  /** The race.finalized event, made with the signed result when there is one and the result's place in the log. */
  readonly event: (signed: SignedResult | undefined, logged: LogPlace) => RaceEvent;
  readonly owed: OwedSteps;
  /** The history's freeze entry (what voids and late wagers did to the standings). */
  readonly history: NewRaceHistoryEntry;
  /** Signs the result at its place in the chain; absent when no key is active. */
  readonly seal?: ResultSealer | undefined;
}

/** Where a result stands in its affiliate's chain of signed results (docs/verify.md). */
export interface ChainLink {
  /** 1 for the affiliate's first signed result, then 2, 3, … */
  readonly sequence: number;
  /** The affiliate's signed result before this one: its race and the SHA-256 (hex) of its JWS; null for the first. */
  readonly previous: { readonly raceId: string; readonly sha256: string } | null;
}

/** A final result as signed at the freeze, answered byte for byte ever after. */
export interface SignedResult extends SignedPayload {
  /** SHA-256 (lowercase hex) of the JWS's ASCII text: what the affiliate's next signed result names. */
  readonly sha256: string;
}

/** Signs the result at its place in the chain, inside the freeze's transaction; undefined: no key is active. */
export type ResultSealer = (link: ChainLink) => Promise<SignedPayload | undefined>;

export interface FrozenResult {
  readonly at: number;
  readonly digest: string;
  readonly unallocated: string;
  readonly entries: readonly FrozenEntry[];
}

/** A page of a race list: newest start first. `after` is the last race of the previous page. */
export interface RaceListQuery {
  readonly affiliateId: number;
  readonly slug?: string;
  /** States as of `now`; empty or absent for all. */
  readonly states?: readonly ("scheduled" | "live" | "reviewing" | "final" | "cancelled")[];
  readonly now: number;
  readonly after?: { readonly start: number; readonly id: string };
  readonly limit: number;
}

/**
 * An internal key no affiliate has (keys start at 1): the key a read acts for when it names an affiliate
 * that does not exist, so it finds no race without writing anything.
 */
export const NO_AFFILIATE = 0;

/**
 * Every change a store makes to a race appends its entry to the race's history in the same transaction
 * (ports/race-history.ts): a creation, an update that changed something, a cancellation (of each race a
 * series' stop cancels), a series' next race the clock creates, the freeze.
 */
export interface RaceStore extends RaceHistoryStore {
  /** Internal key of an affiliate by its platform id, created on first sight: only for creating a race. */
  affiliateKey(externalId: string): Promise<number>;
  /** Internal key of an affiliate by its platform id; undefined when there is none (never creates one). */
  findAffiliateKey(externalId: string): Promise<number | undefined>;
  /**
   * "slug-taken" when another series of the affiliate holds the slug. A series holds its slug until its last
   * race is cancelled (or deleted) and none of its races is live (at `createdAt`): a new race then takes it,
   * and the old races stay readable by id and in the slug's list (races/sql/race-slugs.ts). "cap-reached" when
   * `cap` is given and the affiliate already has that many scheduled and live races at `createdAt`: counted and
   * inserted as one step, so creates racing each other never pass the cap.
   */
  insert(race: NewRace, actor: RaceActor, cap?: number): Promise<RaceInsert>;
  byId(id: string): Promise<StoredRace | undefined>;
  /** The race with this index of the series holding the affiliate's slug. */
  seriesRace(affiliateId: number, slug: string, index: number): Promise<StoredRace | undefined>;
  /**
   * Of the series holding `slug` (or, when none does, every race that had it): the race with the latest start at
   * or before `now`, and the first after it.
   */
  aroundNow(
    affiliateId: number,
    slug: string,
    now: number,
  ): Promise<{ readonly started: StoredRace | undefined; readonly upcoming: StoredRace | undefined }>;
  list(query: RaceListQuery): Promise<StoredRace[]>;
  /**
   * Replaces the definition (not the slug); the race as stored after. `change` says what the history records
   * from the race as it was under the transaction's lock (null: nothing changed, nothing is recorded).
   */
  update(
    id: string,
    definition: RaceDefinition,
    at: number,
    change: (before: StoredRace) => NewRaceHistoryEntry | null,
  ): Promise<StoredRace>;
  /**
   * Cancels the race unless it is final or cancelled already; the race as stored after. A series race
   * cancelled before its end stops its series: the series' races not started yet are cancelled too, each
   * with its event.
   */
  cancel(id: string, at: number, event: (race: StoredRace) => RaceEvent, actor: RaceActor): Promise<StoredRace>;
  /**
   * Deletes a race nobody has seen: the first of its series, not started at `at`, not announced nor cancelled
   * (its history records who did). False when it no longer is such a race.
   */
  deleteUnseen(id: string, at: number, actor: RaceActor): Promise<boolean>;
  frozenEntries(id: string): Promise<FrozenEntry[]>;
  /** The result as signed at the freeze; undefined when it was not signed (no active key then). */
  signedResult(id: string): Promise<SignedResult | undefined>;
  /** Races not final nor cancelled with a step due at `now` (a start or end to announce, a freeze). */
  due(now: number, limit: number): Promise<StoredRace[]>;
  /** Marks the start announced (once: false when it already was) and creates `next` of a series. */
  announceStart(id: string, event: RaceEvent, next: NewRace | null, at: number): Promise<boolean>;
  /** Marks the end announced (once: false when it already was). */
  announceEnd(id: string, event: RaceEvent, at: number): Promise<boolean>;
  /**
   * Freezes the race with its result (once: false when another instance froze it first), in one
   * transaction with what is still owed when no instance announced its start or end in time (all
   * were down, or the end and the freeze fall in one second): those events, and a series' next race.
   * With `seal`, the result is signed in that transaction at its place in the affiliate's chain (freezes of
   * one affiliate take their places one at a time), and `event` is made with the signed result.
   */
  freeze(freeze: RaceFreeze): Promise<boolean>;
  /**
   * Puts the race's next step off until `until` (a step that failed waits; races/core/step-retry.ts); with `note`,
   * says why in its history, once while that is its last entry (a freeze waiting for a key it can open).
   */
  deferStep(
    id: string,
    until: number,
    note?: { readonly at: number; readonly entry: NewRaceHistoryEntry },
  ): Promise<void>;
  /**
   * When the oldest step not yet taken fell due, or null when none is due by `now`; `longestWait`: the
   * longest a failing step is put off.
   */
  oldestDueStep(now: number, longestWait: number): Promise<number | null>;
}
