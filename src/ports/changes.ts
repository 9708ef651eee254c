/** What the change feed reads: the committed changes, in id order (see boards/core/change-feed.ts). */

export interface DataChange {
  readonly id: number;
  /** Internal affiliate key of a wager change, or undefined for a profile change. */
  readonly affiliateId: number | undefined;
  readonly firstAt: number;
  readonly lastAt: number;
  /**
   * Internal keys of the users whose wagers of this affiliate changed, when the row lists them
   * (rows written before they were listed, and very large batches, do not: undefined).
   */
  readonly userIds?: readonly number[];
  /** The platform's user id of a profile change. */
  readonly userExternalId: string | undefined;
  /** The id of an API key that changed (absent on the other changes). */
  readonly apiKeyId?: string;
}

export interface ChangeStore {
  /** The step between ids a writer allocates (1; the cluster size on Galera). */
  idStep(): Promise<number>;
  /** The highest change id so far (0 when none). */
  latestChangeId(): Promise<number>;
  /** Ids in (from, to] that exist now. */
  changeIdsBetween(from: number, to: number): Promise<number[]>;
  /**
   * Changes after `afterId` and those with the given (missing) ids, in id order, from at most
   * `limit` rows (`rows`: how many were read; one row may give several changes, all with its id).
   */
  readChanges(
    afterId: number,
    missingIds: readonly number[],
    limit: number,
  ): Promise<{ rows: number; changes: DataChange[] }>;
  /** Deletes changes older than `olderThanSeconds` (a bounded batch); returns how many. */
  prune(olderThanSeconds: number): Promise<number>;
}
