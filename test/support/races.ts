/**
 * What the race tests share: an outcome's value, a view's entries as a table, and the digest rebuilt from an
 * answer alone by the recipe docs/api.md documents (a wagered race), independently of src/races/digest.ts.
 */
import { createHash } from "node:crypto";
import type { RaceView } from "../../src/races/races.js";

/** The value of an ok outcome; anything else fails the test with the outcome. */
export function ok<T>(outcome: { kind: string; value?: T }): T {
  if (outcome.kind !== "ok") throw new Error(`expected ok, got ${JSON.stringify(outcome)}`);
  return outcome.value as T;
}

/** The entries as [rank, username, total, prize]. */
export function raceTable(view: RaceView): [number, string, string, string][] {
  return view.entries.map((e) => [e.rank, e.username, e.totalWagered, e.prize]);
}

/** The digest by the documented recipe, built from the answer alone (a wagered race: `weighted` is null). */
export function recomputedDigest(view: RaceView): string {
  const canonical = (text: string) =>
    text
      .replace(/^(-?)0+(?=\d)/, "$1")
      .replace(/(\.\d*?)0+$/, "$1")
      .replace(/\.$/, "");
  const text =
    `{"raceId":${JSON.stringify(view.race.id)},"slug":${JSON.stringify(view.race.slug)},` +
    `"startTimestamp":${view.race.startTimestamp},"endTimestamp":${view.race.endTimestamp},` +
    `"rankBy":"${view.race.rankBy}","currency":${JSON.stringify(view.race.currency)},"entries":[` +
    view.entries
      .map(
        (e) =>
          `{"rank":${e.rank},"username":${JSON.stringify(e.username)},"wagered":"${canonical(e.totalWagered)}",` +
          `"weighted":null,"prize":"${canonical(e.prize)}"}`,
      )
      .join(",") +
    `],"unallocated":"${canonical(view.unallocated)}"}`;
  return createHash("sha256").update(text, "utf8").digest("hex");
}
