/**
 * The clock's steps that fail (docs/operations.md, "Race clock"): one race's failing step
 * must never hold the others back. Races.tick takes each race's step on its own; when one throws, the race
 * waits before its next try (1 s, 2 s, 4 s … up to 5 min, counted per race on this instance), the wait is
 * written to the race's row so that no instance's scan meets it again sooner, and the failure is reported
 * once per wait (the clock logs and counts it).
 */
import { CLOCK_ACTOR, type NewRaceHistoryEntry } from "../../ports/race-history.js";
import type { StoredRace } from "../../ports/races.js";
import type { UnopenableSecretError } from "../../values/sealed-secret.js";
import { freezeDueAt } from "./race-state.js";

/** The longest wait between two tries of a failing step. */
export const MAX_STEP_BACKOFF_SECONDS = 300;

export type ClockStep = "start" | "end" | "freeze";

/** A step that failed, as the clock reports it (once per wait). */
export interface StepFailure {
  readonly raceId: string;
  /** The platform's id of the race's affiliate. */
  readonly affiliateId: string;
  readonly slug: string;
  readonly step: ClockStep;
  /** Failures in a row of this race's step on this instance, this one included. */
  readonly failures: number;
  /** Seconds the step has been due. */
  readonly overdueSeconds: number;
  /** When it is tried next (Unix seconds). */
  readonly retryAt: number;
  readonly error: unknown;
  /** The step is a freeze that waits for a signing key this instance can open (reported once, not a failure). */
  readonly waitsForKey?: boolean;
}

/** How long a freeze waiting for a signing key it can open waits between tries (a steady pace, never faster). */
export const KEY_WAIT_SECONDS = 60;

const WHY_UNOPENED: Readonly<Record<UnopenableSecretError["reason"], string>> = {
  no_key: "WEBHOOK_SECRET_KEY is not set on the instance",
  other_key: "it was sealed under another WEBHOOK_SECRET_KEY than the instance's",
  unknown_format: "it is stored in a format the instance does not know",
};

/**
 * The history's note of a freeze that waits (kind `freeze_waiting`, by the clock): which key does not open and why,
 * without any secret. Written once while it is the race's last entry (RaceStore.deferStep).
 */
export function freezeWaitingEntry(key: UnopenableSecretError): NewRaceHistoryEntry {
  return {
    kind: "freeze_waiting",
    actor: CLOCK_ACTOR,
    fields: [{ field: "signingKey", after: `${key.sealedAs} cannot be opened: ${WHY_UNOPENED[key.reason]}` }],
  };
}

/** The step the clock takes for `race` at `now` (it is due: the scan found it) and since when it is due. */
export function dueStep(race: StoredRace, now: number): { step: ClockStep; dueAt: number } {
  const freezeAt = freezeDueAt({ end: race.endTimestamp, reviewSeconds: race.reviewSeconds });
  if (now >= freezeAt) return { step: "freeze", dueAt: freezeAt };
  if (!race.startAnnounced) return { step: "start", dueAt: race.startTimestamp };
  return { step: "end", dueAt: race.endTimestamp + 1 };
}

/** Failures in a row per race, and the wait each earns. */
export class StepBackoff {
  private readonly failures = new Map<string, number>();

  /** Records a failure of the race's step; the failures in a row and the seconds to wait before the next try. */
  failed(raceId: string): { failures: number; waitSeconds: number } {
    const failures = (this.failures.get(raceId) ?? 0) + 1;
    this.failures.set(raceId, failures);
    return { failures, waitSeconds: Math.min(MAX_STEP_BACKOFF_SECONDS, 2 ** Math.min(failures - 1, 30)) };
  }

  succeeded(raceId: string): void {
    this.failures.delete(raceId);
  }
}
