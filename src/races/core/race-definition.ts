/**
 * A race's definition in its two spellings: as race-rules.ts checks it (its period named `start`/`end`) and
 * as the store keeps it (`startTimestamp`/`endTimestamp`), and a stored race's definition alone. The owner's
 * writes (race-admin.ts) and the series' next race (race-clock.ts) build on it.
 */

import type { RaceDefinition, StoredRace } from "../../ports/races.js";
import type { RaceDefinition as RulesDefinition } from "./race-rules.js";

/** A definition as race-rules.ts checked it, as the store keeps it. */
export function stored(definition: RulesDefinition): RaceDefinition {
  const { start, end, ...rest } = definition;
  return { ...rest, startTimestamp: start, endTimestamp: end };
}

/** A stored race's definition as race-rules.ts takes it. */
export function rulesDefinitionOf(race: StoredRace): RulesDefinition {
  const { startTimestamp, endTimestamp, ...rest } = definitionOf(race);
  return { ...rest, start: startTimestamp, end: endTimestamp };
}

export function definitionOf(race: StoredRace): RaceDefinition {
  return {
    slug: race.slug,
    title: race.title,
    startTimestamp: race.startTimestamp,
    endTimestamp: race.endTimestamp,
    rankBy: race.rankBy,
    prizes: race.prizes,
    currency: race.currency,
    minWagered: race.minWagered,
    excludedUserIds: race.excludedUserIds,
    reviewSeconds: race.reviewSeconds,
    shown: race.shown,
    repeat: race.repeat,
    timeZone: race.timeZone,
  };
}
