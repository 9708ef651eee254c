/** A user at their place on a board or in a race, as every skin shows them. */
export interface RankedUser {
  readonly rank: number;
  readonly userId: string;
  readonly username: string;
  /** Absolute URL; the configured default when the user has none. */
  readonly avatar: string;
  /** Exact canonical decimal string, e.g. "15000.5". */
  readonly totalWagered: string;
  /** The weighted total (race rules), exact canonical decimal, up to 12 fraction digits. */
  readonly weightedWagered: string;
}
