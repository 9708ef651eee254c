/**
 * A race's state at a moment, from its times alone: scheduled before its start, live through its end
 * (inclusive), then reviewing (standings still follow voids and corrections) until it is frozen: final. An
 * owner may cancel it before it is final. The freeze itself is the service's act (it sets `frozenAt`); this
 * module only says when it is due.
 *
 * Times are inclusive Unix seconds, as the board's periods are. `finalAt` = end + reviewSeconds is the last
 * second of the review window, inclusive like `end`: the review lasts exactly reviewSeconds seconds
 * (end+1 … end+reviewSeconds), and the freeze is due from the next second, `freezeDueAt` = finalAt + 1
 * (with reviewSeconds 0 the race freezes the second after it ends). A race is "reviewing" until it is actually
 * frozen, even when its freeze is overdue (every instance was down): never "final" without a stored result.
 */

export type RaceState = "scheduled" | "live" | "reviewing" | "final" | "cancelled";

export const RACE_STATES: readonly RaceState[] = ["scheduled", "live", "reviewing", "final", "cancelled"];

export interface RaceTimes {
  /** First second of the race, inclusive. */
  readonly start: number;
  /** Last second of the race, inclusive. */
  readonly end: number;
  readonly reviewSeconds: number;
  /** When its owner cancelled it; null when not cancelled. */
  readonly cancelledAt: number | null;
  /** When its result was frozen; null when not yet. */
  readonly frozenAt: number | null;
}

export function raceStateAt(race: RaceTimes, now: number): RaceState {
  if (race.cancelledAt !== null) return "cancelled";
  if (race.frozenAt !== null) return "final";
  if (now < race.start) return "scheduled";
  if (now <= race.end) return "live";
  return "reviewing";
}

/** The last second of the review window (inclusive): what answers show as `finalAt`. */
export function finalAt(race: Pick<RaceTimes, "end" | "reviewSeconds">): number {
  return race.end + race.reviewSeconds;
}

/** The first second at which the race is to be frozen: finalAt + 1. */
export function freezeDueAt(race: Pick<RaceTimes, "end" | "reviewSeconds">): number {
  return finalAt(race) + 1;
}

/** Whether the race should be frozen now: not cancelled, not frozen, and its review window is over. */
export function isFreezeDue(race: RaceTimes, now: number): boolean {
  return race.cancelledAt === null && race.frozenAt === null && now >= freezeDueAt(race);
}
