/**
 * A race's history as storage keeps it (races/sql/race-history.ts, migration 14): one append-only entry per
 * change to the race after its creation, written in the change's own transaction, with who made it; and the
 * voids that reached its standings while it was live or reviewing, counted as the void's own transaction
 * touches the race's users. The rules of what an entry says are races/core/race-history.ts's.
 */

/** Who changed a race: an API key (its id), the internal listener's admin token, the CLI, or the race clock. */
export interface RaceActor {
  readonly kind: "key" | "admin" | "cli" | "clock";
  /** The key's id for "key", the operating system user for "cli", "" otherwise. */
  readonly id: string;
}

/** The internal listener's admin token (and a caller of Races that names no one). */
export const ADMIN_ACTOR: RaceActor = { kind: "admin", id: "" };

/** The race clock: a series' next race it creates, the freeze. */
export const CLOCK_ACTOR: RaceActor = { kind: "clock", id: "" };

/**
 * One field's change. Scalars (title, times, minimum, …) and the prize table as `before`/`after`, as a race's
 * definition holds them; the excluded users as who was `added` and `removed` (never their wagers).
 */
export interface RaceFieldChange {
  readonly field: string;
  readonly before?: string | number | readonly string[];
  readonly after?: string | number | readonly string[];
  readonly added?: readonly string[];
  readonly removed?: readonly string[];
}

export type RaceChangeKind = "created" | "updated" | "cancelled" | "frozen" | (string & {});

/** How voids changed a race's standings (see races/core/race-history.ts for how each number is counted). */
export interface RaceStandingsChanges {
  /** Voided wagers of the race's period applied while the race was live or reviewing. */
  readonly voidedWagers: number;
  /** Distinct users those wagers were of. */
  readonly usersAffected: number;
  /** Ranks of the final result whose user or prize differs from a result without those voids; null until final. */
  readonly ranksMoved: readonly number[] | null;
  /**
   * Wagers of the race's period recorded after its end, before its freeze (counted from migration 18 on), as
   * voids are: absent from a race frozen before they were counted.
   */
  readonly lateWagers?: LateWagerChanges;
}

/** How wagers recorded during a race's review changed its standings. */
export interface LateWagerChanges {
  /** Wagers dated inside the race's period, recorded after its end and before its freeze. */
  readonly wagers: number;
  /** Distinct users those wagers were of. */
  readonly usersAffected: number;
  /** Ranks of the final result whose user or prize differs from a result without those wagers; null until final. */
  readonly ranksMoved: readonly number[] | null;
}

/** What a change writes (its race and time are the change's own). */
export interface NewRaceHistoryEntry {
  readonly kind: RaceChangeKind;
  readonly actor: RaceActor;
  readonly fields: readonly RaceFieldChange[];
  /** The freeze's count of what voids did (kind "frozen" only). */
  readonly standings?: RaceStandingsChanges;
}

export interface RaceHistoryEntry extends NewRaceHistoryEntry {
  /** Unix seconds. */
  readonly at: number;
}

/** The voids noted against a race so far (live counting, before the freeze has its own count). */
export interface RaceVoidCounts {
  readonly voidedWagers: number;
  readonly usersAffected: number;
}

/** A user whose wagers of the race's period were voided while it ran: what was voided and what they have now. */
export interface VoidedRaceUser {
  readonly userExternalId: string;
  readonly username: string;
  readonly avatarUrl: string | null;
  readonly voidedWagers: number;
  /** Exact decimals: the voided plain and weighted sums. */
  readonly voidedTotal: string;
  readonly voidedWeighted: string;
  /** Exact decimals: the user's totals in the race's period now ("0" when nothing is left). */
  readonly total: string;
  readonly weightedTotal: string;
}

export interface RaceHistoryStore {
  /** The race's entries in the order they were written. */
  history(id: string): Promise<RaceHistoryEntry[]>;
  /** The voids counted against the race (by public id). */
  voidCounts(id: string): Promise<RaceVoidCounts>;
  /** Every user of the race whose wagers were voided while it ran, with their totals now (the freeze reads it). */
  voidedUsers(id: string): Promise<VoidedRaceUser[]>;
  /** The wagers of the race's period recorded during its review so far (`voidedWagers`: how many). */
  lateWagerCounts(id: string): Promise<RaceVoidCounts>;
  /** Every user with such late wagers: their late sums (the `voided*` fields) and their totals now (the freeze). */
  lateWagerUsers(id: string): Promise<VoidedRaceUser[]>;
  /** The internal key of the affiliate that owned the deleted race `id`; undefined when it is not a deleted race. */
  deletedOwner(id: string): Promise<number | undefined>;
}
