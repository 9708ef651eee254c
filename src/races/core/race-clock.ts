/**
 * The race clock: each tick moves due races on, one step each. A race's start is announced (creating a
 * series' next race, counted by recurrence.ts: the series catches up from its anchor), then its end (the
 * review window opens), then, once the review window is over, it is frozen (race-freeze.ts). Safe on every
 * instance at once (each step happens once, races/sql/race-steps.ts); a failing step is put off on its own
 * (step-retry.ts) while the other races go on.
 */

import type { NewRace, StoredRace } from "../../ports/races.js";
import type { RankedRow, StandingsStore } from "../../ports/standings.js";
import { type UnopenableSecretError, unopenableSecret } from "../../values/sealed-secret.js";
import { definitionOf } from "./race-definition.js";
import { raceEvent } from "./race-event-data.js";
import { freezeRace } from "./race-freeze.js";
import { randomRaceId } from "./race-id.js";
import type { RaceReads } from "./race-reads.js";
import { MAX_RACE_TIMESTAMP } from "./race-rules.js";
import { freezeDueAt } from "./race-state.js";
import type { RacesOptions } from "./race-view.js";
import { seriesIndexAt, seriesPeriod } from "./recurrence.js";
import {
  dueStep,
  freezeWaitingEntry,
  KEY_WAIT_SECONDS,
  MAX_STEP_BACKOFF_SECONDS,
  StepBackoff,
  type StepFailure,
} from "./step-retry.js";

/** How many steps of each kind a tick took. */
export interface TickCounts {
  started: number;
  ended: number;
  frozen: number;
}

export class RaceClock {
  private readonly backoff = new StepBackoff();
  /** Races whose freeze waits for a signing key this instance can open, reported once each. */
  private readonly waitingForKey = new Set<string>();

  constructor(
    private readonly options: RacesOptions,
    private readonly now: () => number,
    private readonly reads: RaceReads,
  ) {}

  /**
   * Moves due races on: announces starts (creating a series' next race) and ends, and freezes
   * races whose review window is over. Safe on every instance at once (each step happens once,
   * races/sql/race-steps.ts). Each race's step is taken on its own: one that fails is reported to `onFailure`
   * and put off (races/core/step-retry.ts) while the others go on. Returns how many steps this call took.
   */
  async tick(onFailure?: (failure: StepFailure) => void): Promise<TickCounts> {
    const counts = { started: 0, ended: 0, frozen: 0 };
    const now = this.now();
    const due = await this.options.store.due(now, this.options.tickBatch ?? 200);
    // Races of one affiliate, period and ranking frozen in one tick read their board once.
    const boards = sharedReads(this.options.freezeStandings);
    const concurrency = this.options.tickConcurrency ?? 1;
    let next = 0;
    const worker = async () => {
      while (next < due.length) {
        const race = due[next++];
        if (race !== undefined) await this.isolatedStep(race, now, counts, boards, onFailure);
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, due.length) }, worker));
    return counts;
  }

  /** How long the oldest step not yet taken has been due, in seconds (0: none is late). */
  async overdueSeconds(): Promise<number> {
    const now = this.now();
    const due = await this.options.store.oldestDueStep(now, MAX_STEP_BACKOFF_SECONDS);
    return due === null ? 0 : Math.max(0, now - due);
  }

  /** One race's step; a failure puts the race off and is reported, never thrown to the other races. */
  private async isolatedStep(
    race: StoredRace,
    now: number,
    counts: TickCounts,
    boards: StandingsStore,
    onFailure: ((failure: StepFailure) => void) | undefined,
  ): Promise<void> {
    try {
      await this.step(race, now, counts, boards);
      this.backoff.succeeded(race.id);
      this.waitingForKey.delete(race.id);
    } catch (error) {
      const { step, dueAt } = dueStep(race, now);
      const key = unopenableSecret(error);
      if (key !== undefined) {
        await this.waitForKey(race, now, key, dueAt, onFailure);
        return;
      }
      this.waitingForKey.delete(race.id);
      const { failures, waitSeconds } = this.backoff.failed(race.id);
      const retryAt = now + waitSeconds;
      // When the database itself is away this fails too: the race is then simply due at the next tick.
      await this.options.store.deferStep(race.id, retryAt).catch(() => undefined);
      onFailure?.({
        raceId: race.id,
        affiliateId: race.affiliateExternalId,
        slug: race.slug,
        step,
        failures,
        overdueSeconds: Math.max(0, now - dueAt),
        retryAt,
        error,
      });
    }
  }

  /**
   * A freeze whose signing key does not open here (issue 47): not a failure to retry ever faster nor to log at every
   * try, but a wait. The race is tried again every KEY_WAIT_SECONDS, its history says once why it waits, and it is
   * reported once (the instance's error line names the key and the cause: services/sealed-keys-health.ts).
   */
  private async waitForKey(
    race: StoredRace,
    now: number,
    key: UnopenableSecretError,
    dueAt: number,
    onFailure: ((failure: StepFailure) => void) | undefined,
  ): Promise<void> {
    this.backoff.succeeded(race.id);
    const retryAt = now + KEY_WAIT_SECONDS;
    const entry = freezeWaitingEntry(key);
    await this.options.store.deferStep(race.id, retryAt, { at: now, entry }).catch(() => undefined);
    if (this.waitingForKey.has(race.id)) return;
    this.waitingForKey.add(race.id);
    const { affiliateExternalId: affiliateId, slug } = race;
    const overdueSeconds = Math.max(0, now - dueAt);
    onFailure?.({
      raceId: race.id,
      affiliateId,
      slug,
      step: "freeze",
      failures: 1,
      overdueSeconds,
      retryAt,
      error: key,
      waitsForKey: true,
    });
  }

  private async step(race: StoredRace, now: number, counts: TickCounts, boards: StandingsStore): Promise<void> {
    const { store } = this.options;
    // A freeze that is due takes the start and end announcements still owed in its own transaction.
    if (now >= freezeDueAt({ end: race.endTimestamp, reviewSeconds: race.reviewSeconds })) {
      const context = { options: this.options, reads: this.reads, nextOf: (owed: StoredRace) => this.nextOf(owed) };
      if (await freezeRace(context, race, now, boards)) {
        counts.frozen += 1;
        if (!race.startAnnounced) counts.started += 1;
        if (!race.endAnnounced) counts.ended += 1;
      }
      return;
    }
    if (!race.startAnnounced && now >= race.startTimestamp) {
      const announced = await store.announceStart(
        race.id,
        raceEvent("race.started", race),
        this.nextOf(race),
        // An event carries the time of its transition, also when it is announced late (docs/webhooks.md).
        race.startTimestamp,
      );
      if (announced) counts.started += 1;
    }
    if (!race.endAnnounced && now > race.endTimestamp) {
      const announced = await store.announceEnd(race.id, raceEvent("race.ended", race), race.endTimestamp + 1);
      if (announced) counts.ended += 1;
    }
  }

  /**
   * The series' race after this one, or null for a one-off race: the period after this race's in its
   * anchor's count (this race's own period k, or 0 when an update anchored the series anew on it).
   */
  private nextOf(race: StoredRace): NewRace | null {
    if (race.repeat === "none") return null;
    const index = race.seriesIndex + 1;
    const counted = seriesIndexAt(race.anchorStart, race.repeat, race.timeZone, race.startTimestamp);
    const period = seriesPeriod(race.anchorStart, race.repeat, race.timeZone, counted + 1);
    // A series ends with its last race before 2100: a later one would not fit the races' time columns.
    if (period.end > MAX_RACE_TIMESTAMP) return null;
    return {
      ...definitionOf(race),
      startTimestamp: period.start,
      endTimestamp: period.end,
      id: randomRaceId(),
      affiliateId: race.affiliateId,
      seriesIndex: index,
      anchorStart: race.anchorStart,
      createdAt: this.now(),
    };
  }
}

/** A standings store that reads each distinct board (affiliate, period, ranking, length) once. */
function sharedReads(store: StandingsStore): StandingsStore {
  const reads = new Map<string, Promise<RankedRow[]>>();
  return {
    topUsers(affiliateId, start, end, limit, rankBy) {
      const key = `${affiliateId}:${start}:${end}:${rankBy}:${limit}`;
      let read = reads.get(key);
      if (read === undefined) {
        read = store.topUsers(affiliateId, start, end, limit, rankBy);
        // A failed read is not shared: the next race asks again.
        read.catch(() => reads.delete(key));
        reads.set(key, read);
      }
      return read;
    },
  };
}
