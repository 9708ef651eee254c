/**
 * A race's history on the wire: the REST answer of `GET {BASE_PATH}/races/{id}/history` (JSON text) and
 * GetRace's RaceHistory message. Both carry the same entries in the same order (races/core/race-history.ts);
 * in the message, a field's before/after values are text (a time as its Unix seconds).
 */
import { create } from "@bufbuild/protobuf";
import {
  RaceChangeSchema,
  RaceFieldChangeSchema,
  type RaceHistory as RaceHistoryMessage,
  RaceHistorySchema,
  RaceStandingsChangesSchema,
} from "../../../../gen/topwagers/v1/races_pb.js";
import type { RaceFieldChange, RaceHistoryEntry } from "../../../ports/race-history.js";
import type { RaceHistory } from "../../core/race-history.js";

/** The REST answer's `data`: `{"raceId","changes":[…],"standings":{…}}`. */
export function raceHistoryJson(history: RaceHistory): string {
  const { standings } = history;
  return JSON.stringify({
    raceId: history.raceId,
    changes: history.entries.map(changeJson),
    standings: {
      voidedWagers: standings.voidedWagers,
      usersAffected: standings.usersAffected,
      ranksMoved: standings.ranksMoved,
      // null: a race frozen before late wagers were counted.
      lateWagers: standings.lateWagers ?? null,
    },
  });
}

function changeJson(entry: RaceHistoryEntry): Record<string, unknown> {
  return {
    at: entry.at,
    kind: entry.kind,
    actor: { kind: entry.actor.kind, id: entry.actor.id },
    fields: entry.fields.map((change) => ({ ...change })),
  };
}

export function raceHistoryMessage(history: RaceHistory): RaceHistoryMessage {
  const { standings } = history;
  return create(RaceHistorySchema, {
    changes: history.entries.map((entry) =>
      create(RaceChangeSchema, {
        at: BigInt(entry.at),
        kind: entry.kind,
        actorKind: entry.actor.kind,
        actorId: entry.actor.id,
        fields: entry.fields.map(fieldMessage),
      }),
    ),
    standings: create(RaceStandingsChangesSchema, {
      voidedWagers: standings.voidedWagers,
      usersAffected: standings.usersAffected,
      final: standings.ranksMoved !== null,
      ranksMoved: [...(standings.ranksMoved ?? [])],
      lateWagers: standings.lateWagers?.wagers ?? 0,
      lateUsersAffected: standings.lateWagers?.usersAffected ?? 0,
      lateRanksMoved: [...(standings.lateWagers?.ranksMoved ?? [])],
      lateCounted: standings.lateWagers !== undefined,
    }),
  });
}

function fieldMessage(change: RaceFieldChange) {
  return create(RaceFieldChangeSchema, {
    field: change.field,
    before: texts(change.before),
    after: texts(change.after),
    added: [...(change.added ?? [])],
    removed: [...(change.removed ?? [])],
  });
}

function texts(value: RaceFieldChange["before"]): string[] {
  if (value === undefined) return [];
  return typeof value === "object" ? [...value] : [String(value)];
}
