/** What ingest writes: users, wagers and voids, each batch all or nothing. */
import type { UserProfile, WagerRecord } from "../values/records.js";

export type { UserProfile, WagerRecord };

export type RecordOutcome =
  /** Committed. recorded + duplicates = number of wagers given. */
  | { readonly kind: "recorded"; readonly recorded: number; readonly duplicates: number }
  /** Nothing written: these user ids are not known. */
  | { readonly kind: "unknown_users"; readonly userIds: readonly string[] }
  /** Nothing written: these wager ids are already recorded (or repeated in the batch) with other content. */
  | { readonly kind: "conflict"; readonly wagerIds: readonly string[] };

export interface VoidOutcome {
  /** Recorded wagers this call took out of the totals. */
  readonly voided: number;
  /** Recorded wagers that an earlier (or concurrent) call had voided already. */
  readonly alreadyVoided: number;
  /** Ids never recorded: remembered, so the wager is stored as voided when it arrives. */
  readonly pending: number;
}

/**
 * The write path behind WagerIngest. Input is already valid (ingest/core/validation.ts); the store
 * guarantees exactness and idempotency:
 * - users: the last profile of an id in a batch wins; affiliates are created on first sight;
 *   returns the number of distinct users written.
 * - wagers: a wager counts for the affiliate its user has when it is recorded. An id repeated
 *   with the same content (user, amount by value, time, weight; absent = 10000) is a duplicate;
 *   other content refuses the whole batch (`conflict`), as does an unknown user (`unknown_users`,
 *   checked first). A wager whose void came first is recorded straight into the voided wagers.
 * - voids: a recorded wager leaves the totals for good; an id not recorded yet is remembered.
 */
export interface IngestStore {
  upsertUsers(users: readonly UserProfile[]): Promise<number>;
  recordWagers(wagers: readonly WagerRecord[]): Promise<RecordOutcome>;
  voidWagers(wagerIds: readonly string[]): Promise<VoidOutcome>;
}
