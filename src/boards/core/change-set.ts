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
  /** Internal keys of the users whose wagers changed, when the change lists them. */
  readonly userIds?: readonly number[] | undefined;
  /** The platform's user id of a profile change. */
  readonly userExternalId: string | undefined;
}

interface Span {
  readonly first: number;
  readonly last: number;
  readonly users: readonly number[] | undefined;
}

export class ChangeSet {
  private readonly spans = new Map<number, Span[]>();
  /** Users whose profile changed. */
  readonly users = new Set<string>();

  constructor(changes: Iterable<BoardChange>) {
    for (const change of changes) {
      if (change.userExternalId !== undefined) this.users.add(change.userExternalId);
      if (change.affiliateId === undefined) continue;
      const span = { first: change.firstAt, last: change.lastAt, users: change.userIds };
      const list = this.spans.get(change.affiliateId);
      if (list === undefined) this.spans.set(change.affiliateId, [span]);
      else list.push(span);
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

  /**
   * The users (internal keys) whose wagers of this affiliate within [start, end] changed: into `into`,
   * returning true; false when a change of that period does not list its users (all may have changed).
   * A listed user may have changed only outside the period (spans are per affiliate): reading such a
   * user again is harmless.
   */
  changedUsers(affiliateId: number, start: number, end: number, into: Set<number>): boolean {
    for (const span of this.spans.get(affiliateId) ?? []) {
      if (start > span.last || end < span.first) continue;
      if (span.users === undefined) return false;
      for (const user of span.users) into.add(user);
    }
    return true;
  }

  /** Whether an answer listing these users shows a changed profile. */
  touchesUsers(listed: Iterable<{ readonly userId: string }>): boolean {
    if (this.users.size === 0) return false;
    for (const user of listed) if (this.users.has(user.userId)) return true;
    return false;
  }
}
