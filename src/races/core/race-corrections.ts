/**
 * Undoing and correcting races (issue 35): a race whose period is already over is refused unless its owner
 * asks for it (a typo in the year would otherwise be frozen at once); a race nobody has seen yet can be
 * deleted; a change to a series' race says whether the series' later races change too, as a calendar asks
 * "this event" or "this and following events".
 */
import type { StoredRace } from "../../ports/races.js";
import type { Violation } from "../../values/violation.js";
import type { RacePatch } from "./race-rules.js";

/** Which races of a series an update changes; "this-and-following" when the caller does not say. */
export type UpdateScope = "this-race" | "this-and-following";

export const DEFAULT_UPDATE_SCOPE: UpdateScope = "this-and-following";

/**
 * A one-off race whose last second has passed at `now` is refused, naming `endTimestamp`, unless `allowPast`:
 * it would be answered in review and frozen as it stands. A series' first period is its anchor and is not
 * refused here (races/core/recurrence.ts counts the series from it).
 */
export function pastRaceViolations(
  definition: { readonly repeat: string; readonly end: number },
  now: number,
  allowPast: boolean,
): Violation[] {
  if (allowPast || definition.repeat !== "none" || definition.end >= now) return [];
  return [
    {
      field: "endTimestamp",
      message:
        `endTimestamp ${definition.end} has already passed (the server's clock is at ${now}): the race would be ` +
        "frozen as it stands. Check the year, or send allowPast: true to record a race that is over",
    },
  ];
}

/** Why a race cannot be deleted at `now`, or undefined when it can (a race nobody has seen yet). */
export function deleteRefusal(race: StoredRace, now: number): string | undefined {
  if (race.frozenAt !== null) return `race ${race.id} is final. Its result is kept for good`;
  if (race.cancelledAt !== null) return `race ${race.id} is cancelled. It stays readable and is not deleted`;
  if (race.startAnnounced || now >= race.startTimestamp) {
    return `race ${race.id} started at ${race.startTimestamp}. Only a race not started yet is deleted: cancel it instead`;
  }
  if (race.seriesIndex > 0) {
    return (
      `race ${race.id} is the next race of the series "${race.slug}", shown before it starts. ` +
      "Cancel it instead (that ends the series)"
    );
  }
  return undefined;
}

/**
 * Why an update of `race` cannot be limited to it, or undefined. A series' next race is made from a race when
 * it starts, so before its start a change reaches the races after it whatever the caller asks.
 */
export function scopeRefusal(race: StoredRace, next: StoredRace | undefined, scope: UpdateScope): string | undefined {
  if (scope !== "this-race" || race.repeat === "none" || next !== undefined || race.startAnnounced) return undefined;
  return (
    `the series' next race is made from race ${race.id} when it starts, so a change to it reaches the races ` +
    "after it: send applyTo RACE_UPDATE_SCOPE_THIS_AND_FOLLOWING (the default), or change the next race once it exists"
  );
}

/** Whether a series' next race takes a change of the race before it: it exists and is still scheduled. */
export function followsChanges(next: StoredRace | undefined, now: number): next is StoredRace {
  return next !== undefined && next.cancelledAt === null && next.frozenAt === null && now < next.startTimestamp;
}

/** What a change of a series' race changes in its next race: everything it sends but the period. */
export function followingPatch(patch: RacePatch): RacePatch | undefined {
  const { startTimestamp: _start, endTimestamp: _end, repeat: _repeat, timeZone: _zone, ...rules } = patch;
  return Object.keys(rules).length === 0 ? undefined : rules;
}
