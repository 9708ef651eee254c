/**
 * Races as every skin calls them: one object whose methods are those of the race services, each in its own file
 * by job:
 * - race-reads.ts: read a race (by id, or a series' current race by slug) and list an affiliate's races, a
 *   signed result, a race's history (also a deleted race's);
 * - race-admin.ts: the owner's writes (define, change, delete, cancel);
 * - race-clock.ts: the clock's steps (announcing starts, creating a series' next race, announcing ends) and
 *   race-freeze.ts, its last step, the freeze.
 * What they answer and take is in race-view.ts. Rules are checked by race-rules.ts, standings placed by
 * prizes.ts (race-placing.ts asks a board for the rows), series counted by recurrence.ts, the result hashed
 * by digest.ts; storage is the RaceStore port.
 *
 * Live standings come from the leaderboard (its cache and the change feed's freshness, like any
 * board); the freeze reads the primary's totals directly (`freezeStandings`), never a cache or a
 * replica, so the frozen result is the data as committed at the freeze.
 */

import { RaceAdmin } from "./race-admin.js";
import { RaceClock } from "./race-clock.js";
import { RaceReads } from "./race-reads.js";
import type { RacesOptions } from "./race-view.js";

export { placeFromBoard } from "./race-placing.js";
export type {
  RaceListRequest,
  RaceOutcome,
  RaceStanding,
  RacesOptions,
  RaceView,
  UpdatedRace,
} from "./race-view.js";

/** What each part answers: the reads, the owner's writes, the clock's steps. */
const READS = ["get", "signedResult", "history", "deletedHistory", "list"] as const;
const ADMIN = ["create", "update", "delete", "cancel"] as const;
const CLOCK = ["tick", "overdueSeconds"] as const;

/** The one object the skins, the CLI and the jobs hold: each call is the method of the part that does it. */
export type Races = Pick<RaceReads, (typeof READS)[number]> &
  Pick<RaceAdmin, (typeof ADMIN)[number]> &
  Pick<RaceClock, (typeof CLOCK)[number]>;

export function newRaces(options: RacesOptions): Races {
  const now = options.now ?? (() => Math.floor(Date.now() / 1000));
  const reads = new RaceReads(options, now);
  const admin = new RaceAdmin(options, now, reads);
  const clock = new RaceClock(options, now, reads);
  return { ...methodsOf(reads, READS), ...methodsOf(admin, ADMIN), ...methodsOf(clock, CLOCK) };
}

/** The named methods of `part`, bound to it. */
function methodsOf<Part extends object, Name extends keyof Part & string>(
  part: Part,
  names: readonly Name[],
): Pick<Part, Name> {
  const methods = {} as Pick<Part, Name>;
  for (const name of names) {
    const method = part[name] as (...args: unknown[]) => unknown;
    (methods as Record<string, unknown>)[name] = method.bind(part);
  }
  return methods;
}
