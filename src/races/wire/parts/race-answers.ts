/**
 * What the race skins (race-rpc.ts, race-rest.ts) share: the scope a call needs, and a `Races` outcome
 * as its value or the catalogue's error, the same on every protocol.
 */
import type { Caller } from "../../../keys/core/caller.js";
import { requireScope } from "../../../keys/gate/scopes.js";
import { invalidArgument, ServiceError } from "../../../platform/errors/catalogue.js";
import { fromDatabase } from "../../../platform/errors/database.js";
import { fromDomain } from "../../../platform/errors/domain.js";
import type { Scope } from "../../../values/scopes.js";
import type { RaceOutcome } from "../../core/races.js";

/** What a race call needs of its key: reads `races:read`, changes `races:write`. */
export type RaceAccess = Extract<Scope, "races:read" | "races:write">;

/**
 * Refuses a key without the scope a race call needs (403 / permission_denied naming it). The one
 * place the race skins check scopes.
 */
export function requireRaceScope(caller: Caller, access: RaceAccess): void {
  requireScope(caller, access);
}

/**
 * An outcome's value, or the catalogue's error: `invalid_argument` naming each field (prefixed with
 * `fieldPrefix`, e.g. "rules." for CreateRace), `not_found` (RACE_NOT_FOUND naming `idField`; null:
 * no field, as REST names fields only on a 400),
 * `failed_precondition` (RACE_STATE), `already_exists` (SLUG_TAKEN naming the slug's field).
 */
export function answer<T>(outcome: RaceOutcome<T>, fieldPrefix = "", idField: string | null = "id"): T {
  switch (outcome.kind) {
    case "ok":
      return outcome.value;
    case "invalid":
      throw invalidArgument(
        outcome.violations.map((v) => (v.field === undefined ? v : { ...v, field: `${fieldPrefix}${v.field}` })),
      );
    case "not-found":
      throw raceNotFound(outcome.id, idField);
    case "precondition":
      throw new ServiceError("RACE_STATE", outcome.message);
    case "limit":
      throw new ServiceError("LIMIT_REACHED", outcome.message, {
        info: { setting: outcome.setting, limit: String(outcome.limit) },
      });
    case "slug-taken": {
      const message = `another race of this affiliate already has the slug ${JSON.stringify(outcome.slug)}`;
      throw new ServiceError("SLUG_TAKEN", message, { violations: [{ field: `${fieldPrefix}slug`, message }] });
    }
  }
}

/** RACE_NOT_FOUND: the same answer for no race at all and for another affiliate's race. */
export function raceNotFound(id: string, field: string | null = "id"): ServiceError {
  const message = `this affiliate has no race ${JSON.stringify(id)}`;
  return new ServiceError("RACE_NOT_FOUND", message, field === null ? {} : { violations: [{ field, message }] });
}

/** A call of Races or of storage, its failures in the catalogue's terms (a database down is `unavailable`). */
export async function guard<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw fromDatabase(fromDomain(error));
  }
}
