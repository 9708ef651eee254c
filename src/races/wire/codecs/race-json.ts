/**
 * A race as REST shows it (GET {BASE_PATH}/races/{slug}, each item of GET {BASE_PATH}/races, and each
 * event of the race's SSE stream): the shape docs/api.md "Races" documents.
 *
 * Totals are JSON numbers written from the exact decimal text (every digit kept, as REST boards write
 * `totalWagered`), each beside its exact decimal string; prizes and `unallocated` are decimal strings
 * at the prize table's scale; `log` is the race's place in the results log (null when not logged). `version` names what the race shows (everything but `now`, as the race
 * stream's event ids do): equal versions, equal answers, on every instance.
 */
import type { LogInclusion } from "../../../ports/results-log.js";
import { raceVersion } from "../../core/race-watch.js";
import type { RaceStanding, RaceView } from "../../core/races.js";

/** The race's fields every answer has (the list's items have only these). */
function raceFields(view: RaceView): string {
  const { race } = view;
  return (
    `"id":${JSON.stringify(race.id)},"slug":${JSON.stringify(race.slug)},"title":${JSON.stringify(race.title)},` +
    `"state":"${view.state}","startTimestamp":${race.startTimestamp},"endTimestamp":${race.endTimestamp},` +
    `"rankBy":"${race.rankBy}","currency":${JSON.stringify(race.currency)},"prizes":${JSON.stringify(race.prizes)},` +
    `"minWagered":${JSON.stringify(race.minWagered)},"shown":${race.shown},"reviewSeconds":${race.reviewSeconds},` +
    `"repeat":"${race.repeat}","timeZone":${JSON.stringify(race.timeZone)},` +
    `"startsAt":${race.startTimestamp},"endsAt":${race.endTimestamp},"finalAt":${view.finalAt}`
  );
}

/** The frozen result's digest and time; with `signed`, the signed result too (answered once final and signed). */
function resultOf(view: RaceView, signed = false): string {
  const { race } = view;
  if (race.frozenAt === null || race.digest === null) return "null";
  const sig = view.signed;
  const signedJson =
    signed && sig !== undefined
      ? `,"signed":{"jws":"${sig.jws}","kid":${JSON.stringify(sig.kid)},"sha256":"${sig.sha256}"}`
      : "";
  return `{"digest":${JSON.stringify(race.digest)},"frozenAt":${race.frozenAt}${signedJson}}`;
}

function entryJson(entry: RaceStanding, weighted: boolean): string {
  return (
    `{"rank":${entry.rank},"username":${JSON.stringify(entry.username)},"avatar":${JSON.stringify(entry.avatar)},` +
    `"totalWagered":${entry.totalWagered},"totalWageredDecimal":"${entry.totalWagered}",` +
    (weighted
      ? `"weightedWagered":${entry.weightedWagered},"weightedWageredDecimal":"${entry.weightedWagered}",`
      : "") +
    `"prize":${JSON.stringify(entry.prize)}}`
  );
}

/** The race with its standings, as a JSON object's text; `version` is the race stream's (races/core/race-watch.ts). */
export function raceJson(view: RaceView, version = raceVersion(view)): string {
  const weighted = view.race.rankBy === "weighted";
  const next = view.next === null ? "null" : `{"id":${JSON.stringify(view.next.id)},"startsAt":${view.next.startsAt}}`;
  const shown =
    `"next":${next},"entries":[${view.entries.map((entry) => entryJson(entry, weighted)).join(",")}],` +
    `"unallocated":${JSON.stringify(view.unallocated)}`;
  const fields = raceFields(view);
  const result = resultOf(view, true);
  const log = view.log === undefined ? "null" : logJson(view.log);
  return `{${fields},"now":${view.now},${shown},"version":"${version}","result":${result},"log":${log}}`;
}

/** A race's place in the results log as JSON (docs/verify.md): index, entry, checkpoint and proof, in that order. */
export function logJson(log: LogInclusion): string {
  return JSON.stringify({ index: log.index, entry: log.entry, checkpoint: log.checkpoint, proof: log.proof });
}

/** A race of a list, without standings (no `next`, `entries`, `unallocated` nor `version`), as JSON text. */
export function raceSummaryJson(view: RaceView): string {
  return `{${raceFields(view)},"now":${view.now},"result":${resultOf(view)}}`;
}
