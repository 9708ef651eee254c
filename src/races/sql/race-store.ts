/**
 * The MariaDB adapter of the race port (src/ports/races.ts): the race statements beside this file bound to a
 * pool.
 */
import type { Pool } from "mysql2/promise";
import { weightedColumnReader } from "../../ingest/sql/weighted-backfill.js";
import type { RaceStore } from "../../ports/races.js";
import { deletedRaceOwner, raceCorrectedUsers, raceCorrectionCounts, readRaceHistory } from "./race-history.js";
import { deleteUnseenRace, insertNewRace } from "./race-slugs.js";
import { deferRaceStep, deferRaceStepWithNote, oldestDueStep } from "./race-step-waits.js";
import { announceEnd, announceStart, writeFreeze } from "./race-steps.js";
import {
  affiliateKey,
  cancelRace,
  dueRaces,
  findAffiliateKey,
  frozenEntries,
  listRaces,
  raceById,
  racesAroundNow,
  seriesRace,
  updateRace,
} from "./races.js";
import { signedResultOf } from "./signed-results.js";

export function mariadbRaces(pool: Pool): RaceStore {
  const weighted = weightedColumnReader(pool);
  return {
    affiliateKey: (externalId) => affiliateKey(pool, externalId),
    findAffiliateKey: (externalId) => findAffiliateKey(pool, externalId),
    insert: (race, actor, cap) => insertNewRace(pool, race, actor, cap),
    byId: (id) => raceById(pool, id),
    seriesRace: (affiliateId, slug, index) => seriesRace(pool, affiliateId, slug, index),
    aroundNow: (affiliateId, slug, now) => racesAroundNow(pool, affiliateId, slug, now),
    list: (query) => listRaces(pool, query),
    update: (id, definition, at, change) => updateRace(pool, id, definition, at, change),
    cancel: (id, at, event, actor) => cancelRace(pool, id, at, event, actor),
    deleteUnseen: (id, at, actor) => deleteUnseenRace(pool, id, at, actor),
    frozenEntries: (id) => frozenEntries(pool, id),
    due: (now, limit) => dueRaces(pool, now, limit),
    announceStart: (id, event, next, at) => announceStart(pool, id, event, next, at),
    announceEnd: (id, event, at) => announceEnd(pool, id, event, at),
    freeze: (freeze) => writeFreeze(pool, freeze),
    signedResult: (id) => signedResultOf(pool, id),
    history: (id) => readRaceHistory(pool, id),
    voidCounts: (id) => raceCorrectionCounts(pool, "race_voids", id),
    voidedUsers: (id) => raceCorrectedUsers(pool, "race_voids", id, weighted),
    lateWagerCounts: (id) => raceCorrectionCounts(pool, "race_late_wagers", id),
    lateWagerUsers: (id) => raceCorrectedUsers(pool, "race_late_wagers", id, weighted),
    deletedOwner: (id) => deletedRaceOwner(pool, id),
    deferStep: (id, until, note) =>
      note === undefined ? deferRaceStep(pool, id, until) : deferRaceStepWithNote(pool, id, until, note.at, note.entry),
    oldestDueStep: (now, longestWait) => oldestDueStep(pool, now, longestWait),
  };
}
