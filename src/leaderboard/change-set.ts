/**
 * Which answers a batch of committed changes touches, for every holder of
 * answers (the result cache, the live boards): an affiliate's periods that
 * overlap the changed wagers' times, and every answer that lists a user whose
 * profile changed (a new username or avatar).
 */

/** One committed change as the change feed reports it (structurally the storage's DataChange). */
export interface BoardChange {
  /** Internal affiliate key of a wager change; undefined for a profile change. */
  readonly affiliateId: number | undefined;
  /** First and last placement time (Unix seconds) of the changed wagers. */
  readonly firstAt: number;
  readonly lastAt: number;
  /** The platform's user id of a profile change. */
  readonly userExternalId: string | undefined;
}

export class ChangeSet {
  private readonly spans = new Map<number, { first: number; last: number }[]>();
  /** Users whose profile changed. */
  readonly users = new Set<string>();

  constructor(changes: Iterable<BoardChange>) {
    for (const change of changes) {
      if (change.userExternalId !== undefined) this.users.add(change.userExternalId);
      if (change.affiliateId === undefined) continue;
      const list = this.spans.get(change.affiliateId);
      if (list === undefined) this.spans.set(change.affiliateId, [{ first: change.firstAt, last: change.lastAt }]);
      else list.push({ first: change.firstAt, last: change.lastAt });
    }
  }

  get empty(): boolean {
    return this.spans.size === 0 && this.users.size === 0;
  }

  /** Affiliates with changed wagers. */
  affiliates(): Iterable<number> {
    return this.spans.keys();
  }

  /** Whether wagers of this affiliate placed within [start, end] changed. */
  touchesPeriod(affiliateId: number, start: number, end: number): boolean {
    return this.spans.get(affiliateId)?.some((span) => start <= span.last && end >= span.first) ?? false;
  }

  /** Whether an answer listing these users shows a changed profile. */
  touchesUsers(listed: Iterable<{ readonly userId: string }>): boolean {
    if (this.users.size === 0) return false;
    for (const user of listed) if (this.users.has(user.userId)) return true;
    return false;
  }
}
