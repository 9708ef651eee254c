/**
 * Races as every skin calls them: one object over the race services, each in its own file by job:
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

export class Races {
  private readonly reads: RaceReads;
  private readonly admin: RaceAdmin;
  private readonly clock: RaceClock;

  constructor(options: RacesOptions) {
    const now = options.now ?? (() => Math.floor(Date.now() / 1000));
    this.reads = new RaceReads(options, now);
    this.admin = new RaceAdmin(options, now, this.reads);
    this.clock = new RaceClock(options, now, this.reads);
  }

  create(...call: Parameters<RaceAdmin["create"]>) {
    return this.admin.create(...call);
  }

  update(...call: Parameters<RaceAdmin["update"]>) {
    return this.admin.update(...call);
  }

  delete(...call: Parameters<RaceAdmin["delete"]>) {
    return this.admin.delete(...call);
  }

  cancel(...call: Parameters<RaceAdmin["cancel"]>) {
    return this.admin.cancel(...call);
  }

  get(...call: Parameters<RaceReads["get"]>) {
    return this.reads.get(...call);
  }

  signedResult(...call: Parameters<RaceReads["signedResult"]>) {
    return this.reads.signedResult(...call);
  }

  history(...call: Parameters<RaceReads["history"]>) {
    return this.reads.history(...call);
  }

  deletedHistory(...call: Parameters<RaceReads["deletedHistory"]>) {
    return this.reads.deletedHistory(...call);
  }

  list(...call: Parameters<RaceReads["list"]>) {
    return this.reads.list(...call);
  }

  tick(...call: Parameters<RaceClock["tick"]>) {
    return this.clock.tick(...call);
  }

  overdueSeconds() {
    return this.clock.overdueSeconds();
  }
}
