/**
 * The owner's writes: define, change, delete and cancel an affiliate's races, each recorded in the race's
 * history with its actor. Rules are checked by race-rules.ts (and race-corrections.ts for races already over,
 * deletes and a series' following races), a series' first period counted by recurrence.ts; storage is the
 * RaceStore port. Each write answers the race as it left it, through the reads (race-reads.ts).
 */

import { ADMIN_ACTOR, type RaceActor } from "../../ports/race-history.js";
import type { RaceDefinition, StoredRace } from "../../ports/races.js";
import { BeyondRetentionError } from "../../values/retention-horizon.js";
import type { Violation } from "../../values/violation.js";
import {
  DEFAULT_UPDATE_SCOPE,
  deleteRefusal,
  followingPatch,
  followsChanges,
  pastRaceViolations,
  scopeRefusal,
  type UpdateScope,
} from "./race-corrections.js";
import { definitionOf, rulesDefinitionOf, stored } from "./race-definition.js";
import { raceEvent } from "./race-event-data.js";
import { definitionChanges } from "./race-history.js";
import { randomRaceId } from "./race-id.js";
import type { RaceReads } from "./race-reads.js";
import { type RaceDefinitionFields, type RacePatch, validateRaceDefinition, validateRaceUpdate } from "./race-rules.js";
import type { RaceOutcome, RacesOptions, RaceView, UpdatedRace } from "./race-view.js";
import { seriesStartAt } from "./recurrence.js";

export class RaceAdmin {
  constructor(
    private readonly options: RacesOptions,
    private readonly now: () => number,
    private readonly reads: RaceReads,
  ) {}

  /**
   * `decodingViolations`: fields the skin could not read, reported with the rules' violations. `actor`: who
   * makes the change, as the race's history records it (so do update, delete and cancel). `allowPast`: a
   * one-off race that has ended already is made (as history) rather than refused (race-corrections.ts).
   */
  async create(
    affiliateId: number,
    input: RaceDefinitionFields,
    decodingViolations: readonly Violation[] = [],
    actor: RaceActor = ADMIN_ACTOR,
    allowPast = false,
  ): Promise<RaceOutcome<RaceView>> {
    const now = this.now();
    const checked = validateRaceDefinition(input, decodingViolations);
    if (!checked.ok) return { kind: "invalid", violations: checked.violations };
    const past = pastRaceViolations(checked.value, now, allowPast);
    if (past.length > 0) return { kind: "invalid", violations: past };
    const definition = stored(checked.value);
    const cap = this.options.racesPerAffiliate;
    const race = { ...definition, ...seriesStartAt(definition, now), id: randomRaceId(), affiliateId, createdAt: now };
    const inserted = await this.options.store.insert(race, actor, cap).catch(startBeforeHorizon(race, now));
    if ("violations" in inserted) return inserted;
    if (inserted.kind === "slug-taken") return { kind: "slug-taken", slug: definition.slug };
    if (inserted.kind === "cap-reached") return raceCapReached(cap ?? 0);
    return { kind: "ok", value: await this.reads.viewOf(inserted.race, now) };
  }

  /**
   * Changes a race; `scope`: whether the series' next race, when it exists and is scheduled, gets the same
   * change but its period (race-corrections.ts). Both are checked before either is written.
   */
  async update(
    affiliateId: number,
    id: string,
    patch: RacePatch,
    decodingViolations: readonly Violation[] = [],
    actor: RaceActor = ADMIN_ACTOR,
    scope: UpdateScope = DEFAULT_UPDATE_SCOPE,
  ): Promise<RaceOutcome<UpdatedRace>> {
    const race = await this.reads.owned(affiliateId, id);
    if (race === undefined) return { kind: "not-found", id };
    const now = this.now();
    const next = await this.reads.nextExisting(race);
    const refusal = scopeRefusal(race, next, scope);
    if (refusal !== undefined) return { kind: "precondition", message: refusal };
    const changed = checkedChange(race, patch, now, decodingViolations);
    if (changed.kind !== "ok") return changed;
    const nextPatch = scope === "this-and-following" && followsChanges(next, now) ? followingPatch(patch) : undefined;
    const nextChange = next === undefined || nextPatch === undefined ? undefined : checkedChange(next, nextPatch, now);
    if (nextChange !== undefined && nextChange.kind !== "ok") return nextChange;
    const stored = await this.store(id, changed.value, now, actor).catch(startBeforeHorizon(changed.value, now));
    if ("violations" in stored) return stored;
    if (next === undefined || nextChange === undefined)
      return { kind: "ok", value: await this.updated(stored, now, []) };
    await this.store(next.id, nextChange.value, now, actor);
    return { kind: "ok", value: await this.updated(stored, now, [next.id]) };
  }

  /** Deletes a race nobody has seen yet (race-corrections.ts); the race as it was. */
  async delete(affiliateId: number, id: string, actor: RaceActor = ADMIN_ACTOR): Promise<RaceOutcome<RaceView>> {
    const race = await this.reads.owned(affiliateId, id);
    if (race === undefined) return { kind: "not-found", id };
    const now = this.now();
    const refusal = deleteRefusal(race, now);
    if (refusal !== undefined) return { kind: "precondition", message: refusal };
    const view = await this.reads.viewOf(race, now);
    if (!(await this.options.store.deleteUnseen(id, now, actor))) {
      return { kind: "precondition", message: `race ${id} is no longer a race nobody has seen yet` };
    }
    return { kind: "ok", value: view };
  }

  /** The one write of a race's definition (its history entry in the same transaction names what changed). */
  private store(id: string, definition: RaceDefinition, now: number, actor: RaceActor): Promise<StoredRace> {
    return this.options.store.update(id, definition, now, (before) => {
      const fields = definitionChanges(definitionOf(before), definition);
      return fields.length === 0 ? null : { kind: "updated", actor, fields };
    });
  }

  private async updated(race: StoredRace, now: number, following: readonly string[]): Promise<UpdatedRace> {
    return { ...(await this.reads.viewOf(race, now)), following };
  }

  async cancel(affiliateId: number, id: string, actor: RaceActor = ADMIN_ACTOR): Promise<RaceOutcome<RaceView>> {
    const race = await this.reads.owned(affiliateId, id);
    if (race === undefined) return { kind: "not-found", id };
    if (race.frozenAt !== null) return { kind: "precondition", message: `race ${id} is final and cannot be cancelled` };
    const now = this.now();
    const stored = await this.options.store.cancel(
      id,
      now,
      (cancelled) => raceEvent("race.cancelled", cancelled),
      actor,
    );
    return { kind: "ok", value: await this.reads.viewOf(stored, now) };
  }
}

/** An update of `race` checked at `now` (race-rules.ts): the definition to store, or why not. */
function checkedChange(
  race: StoredRace,
  patch: RacePatch,
  now: number,
  decodingViolations: readonly Violation[] = [],
): RaceOutcome<RaceDefinition> {
  const current = { definition: rulesDefinitionOf(race), cancelledAt: race.cancelledAt, frozenAt: race.frozenAt };
  const checked = validateRaceUpdate(current, patch, now, decodingViolations);
  if (!checked.ok) {
    return checked.kind === "invalid_argument"
      ? { kind: "invalid", violations: checked.violations }
      : { kind: "precondition", message: checked.message };
  }
  // A period moved wholly into the past would end the race at once: refused as when creating one.
  const moved = checked.value.start !== race.startTimestamp || checked.value.end !== race.endTimestamp;
  const past = moved ? pastRaceViolations(checked.value, now, false) : [];
  return past.length > 0 ? { kind: "invalid", violations: past } : { kind: "ok", value: stored(checked.value) };
}

/**
 * A store's refusal of a race that has not ended and starts before its affiliate's retention horizon
 * (races/sql/race-horizon.ts), as the field violation of `startTimestamp` it is; a race over already whose period
 * was pruned stays a BeyondRetentionError (BEYOND_RETENTION), and any other failure is thrown on.
 */
function startBeforeHorizon(
  race: { readonly endTimestamp: number },
  now: number,
): (error: unknown) => { kind: "invalid"; violations: Violation[] } {
  return (error) => {
    if (!(error instanceof BeyondRetentionError) || race.endTimestamp < now) throw error;
    return { kind: "invalid", violations: [{ field: "startTimestamp", message: error.message }] };
  };
}

/**
 * The refusal of one more race for an affiliate holding its cap of scheduled and live races (counted by the store
 * in the insert's own transaction, after the affiliate's row is held: racing creates never pass the cap).
 */
function raceCapReached(cap: number): RaceOutcome<never> {
  const message = `the affiliate has ${cap} scheduled and live races, the most allowed (RACES_PER_AFFILIATE). Cancel one first`;
  return { kind: "limit", message, setting: "RACES_PER_AFFILIATE", limit: cap };
}
