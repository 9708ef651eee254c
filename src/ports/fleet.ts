/**
 * What a fleet of instances shares (boards/core/fleet-standings.ts): who is alive, and a request and answer for one
 * period's board between two instances. On Redis (platform/redis/fleet.ts) when REDIS_URL is set; without it there is no
 * fleet and every instance computes its boards alone.
 */
import type { RankBy } from "../values/weights.js";

/** One period's board as the fleet names it: every list length and viewer of it is a slice of its top 100. */
export interface FleetPeriod {
  readonly affiliateId: number;
  readonly start: number;
  readonly end: number;
  readonly rankBy: RankBy;
}

/** "Send me this board, reflecting at least every change up to `minBasis`" (a change feed id). */
export interface FleetRequest {
  readonly period: FleetPeriod;
  readonly minBasis: number;
  /** The asker's change feed is behind: only a leader whose own feed is current may answer. */
  readonly fresh: boolean;
}

/** One entry as it travels: the same fields as a RankedUser. */
export type FleetEntry = readonly [
  rank: number,
  userId: string,
  username: string,
  avatar: string,
  totalWagered: string,
  weightedWagered: string,
];

/** The leader's answer: the board's top entries as of change feed id `basis` (every change up to it is in). */
export interface FleetAnswer {
  readonly basis: number;
  readonly entries: readonly FleetEntry[];
}

export interface FleetTransport {
  /** This instance's id in the fleet. */
  readonly self: string;
  /**
   * The instances alive now (this one included), as last read; just this one while the fleet cannot be reached,
   * so that an instance cut off computes alone instead of waiting on others.
   */
  members(): readonly string[];
  /** Told when the members change (an instance started, stopped, or stopped answering). */
  onMembersChanged(listener: () => void): void;
  /** Asks `member` for a board: its answer, or undefined when none came within `timeoutMs`. */
  ask(member: string, request: FleetRequest, timeoutMs: number): Promise<FleetAnswer | undefined>;
  /** Answers other instances' requests with `answer` (set once). */
  serve(answer: (request: FleetRequest) => Promise<FleetAnswer>): void;
  close(): Promise<void>;
}
