/**
 * What the race services answer and take: a race as its readers see it (its state, standings and prizes at
 * a time), the outcome of a call (a value or why not), a list request, and the options the services share.
 * The services themselves: race-reads.ts (the reads), race-admin.ts (the owner's writes), race-clock.ts
 * and race-freeze.ts (the clock's steps), all behind ./races.ts.
 */

import type { RaceStore, SignedResult, StoredRace } from "../../ports/races.js";
import type { LogInclusion, ResultsLogReader } from "../../ports/results-log.js";
import type { PayloadSigner } from "../../ports/signing.js";
import type { StandingsStore } from "../../ports/standings.js";
import type { RankedUser } from "../../values/ranked-user.js";
import type { Violation } from "../../values/violation.js";
import type { RaceState } from "./race-state.js";

/** A placed user as every skin shows it. */
export interface RaceStanding extends RankedUser {
  /** At the prize table's scale. */
  readonly prize: string;
}

/** A race with where it stands at `now`. */
export interface RaceView {
  readonly race: StoredRace;
  readonly state: RaceState;
  readonly now: number;
  readonly finalAt: number;
  /** The series' next race, when it exists. */
  readonly next: { readonly id: string; readonly startsAt: number } | null;
  readonly entries: readonly RaceStanding[];
  readonly unallocated: string;
  /** The final result as signed at the freeze; absent before, and when no signing key was active then. */
  readonly signed?: SignedResult;
  /**
   * The race's entry in the results log and its inclusion proof (docs/verify.md): once final, or cancelled after its
   * start; absent for a race not logged (frozen before the log began) and when the process has no log.
   */
  readonly log?: LogInclusion;
}

export type RaceOutcome<T> =
  | { readonly kind: "ok"; readonly value: T }
  | { readonly kind: "invalid"; readonly violations: readonly Violation[] }
  | { readonly kind: "not-found"; readonly id: string }
  | { readonly kind: "precondition"; readonly message: string }
  | { readonly kind: "slug-taken"; readonly slug: string }
  /** A cap reached (`setting` is the variable that sets `limit`): nothing was written. */
  | { readonly kind: "limit"; readonly message: string; readonly setting: string; readonly limit: number };

export interface RaceListRequest {
  readonly states?: readonly RaceState[];
  readonly slug?: string;
  /** 1..100; 0 or absent: 20. */
  readonly pageSize?: number;
  readonly pageToken?: string;
}

/** A race as an update left it, with the series' later races it changed too (their ids). */
export interface UpdatedRace extends RaceView {
  readonly following: readonly string[];
}

export interface RacesOptions {
  readonly store: RaceStore;
  /** Live standings: the board of the race's period, cached like any board (boards/core/board-standings.ts). */
  readonly standings: StandingsStore;
  /** The freeze's totals: the primary, uncached. */
  readonly freezeStandings: StandingsStore;
  /** Signs each final result at the freeze (docs/verify.md); absent: results are not signed. */
  readonly signer?: PayloadSigner;
  readonly defaultAvatarUrl: string;
  /** Current Unix time in seconds. */
  readonly now?: () => number;
  /**
   * Races handled per clock tick, and how many at once. The default is 1: the freeze is background work
   * that leaves the database to the boards. How long 1,000 races take to freeze at each setting, and what it
   * does to board reads, is in docs/benchmarks.md, "Races: 1,000 races ending in the same second".
   */
  readonly tickBatch?: number;
  readonly tickConcurrency?: number;
  /** Most scheduled and live races one affiliate may have (RACES_PER_AFFILIATE); absent: no cap. */
  readonly racesPerAffiliate?: number;
  /** The results log, whose inclusion of a final or cancelled race its answers carry; absent: none carried. */
  readonly log?: ResultsLogReader;
}
