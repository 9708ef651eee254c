/**
 * One computed answer of a live board (see live-boards.ts), shared by all its
 * viewers, with its content-derived version and the bytes each protocol makes
 * of it, made once.
 */
import { hash } from "node:crypto";
import type { RankedUser } from "./leaderboard.js";

/** One computed answer of a board, shared by all its viewers. */
export class BoardSnapshot {
  private readonly encodings = new Map<object, unknown>();

  constructor(
    readonly ranked: readonly RankedUser[],
    /** Content-derived (boardVersion): equal boards have equal versions on every instance. */
    readonly version: string,
    /** Unix seconds when it was computed. */
    readonly asOf: number,
  ) {}

  /** `encode(this)`, computed once per snapshot and encoder: every viewer of a format gets the same bytes. */
  encoded<T>(encode: (snapshot: BoardSnapshot) => T): T {
    if (this.encodings.has(encode)) return this.encodings.get(encode) as T;
    const value = encode(this);
    this.encodings.set(encode, value);
    return value;
  }
}

/**
 * The version of an answer: a hash of its canonical content (rank, user id, username, avatar,
 * exact plain and weighted totals of each entry), so two instances holding the same board give the
 * same version.
 */
export function boardVersion(ranked: readonly RankedUser[]): string {
  const canonical = JSON.stringify(
    ranked.map((u) => [u.rank, u.userId, u.username, u.avatar, u.totalWagered, u.weightedWagered]),
  );
  return hash("sha256", canonical, "base64url").slice(0, 22);
}
