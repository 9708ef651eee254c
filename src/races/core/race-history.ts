/**
 * A race's history in the open: what each change to a race says (the fields it changed, before and after;
 * the excluded users as who was added and removed), what voids did to its standings, and the summary a signed
 * result carries. Pure: the entries are written by storage in each change's own transaction (RaceStore), and
 * read back through RaceHistoryStore.
 *
 * What voids did is counted in two steps, so no reader ever pays for a board computation:
 * - each void's own transaction notes, per race whose period holds the voided wager and that is live or
 *   reviewing, the user and the voided sums (races/sql/race-history.ts): `voidedWagers` and `usersAffected`;
 * - the freeze places the race twice, as it is and with those sums given back to their users
 *   (`ranksMovedByVoids`), and records the ranks whose user or prize differ: `ranksMoved`.
 * Neither names a user nor an amount: a reader learns how many wagers, of how many users, and which ranks.
 *
 * Late wagers (dated inside the period, recorded after its end and before the freeze) are counted the same way:
 * each recording's transaction notes them per race in review (`lateWagers`), and the freeze places the race as it
 * is and without them (`ranksMovedByLateWagers`).
 */
import {
  CLOCK_ACTOR,
  type LateWagerChanges,
  type NewRaceHistoryEntry,
  type RaceFieldChange,
  type RaceHistoryEntry,
  type RaceHistoryStore,
  type RaceStandingsChanges,
  type RaceVoidCounts,
  type VoidedRaceUser,
} from "../../ports/race-history.js";
import type { RaceDefinition } from "../../ports/races.js";
import type { RankedRow } from "../../ports/standings.js";
import { compareAmounts, scaleOf, toUnits, unitsText } from "./amounts.js";
import { type PlacedEntry, type PlacementRules, placeRace, rankedTotal } from "./prizes.js";

/** A race's history as its readers get it. */
export interface RaceHistory {
  readonly raceId: string;
  readonly entries: readonly RaceHistoryEntry[];
  readonly standings: RaceStandingsChanges;
}

/** The fields of a definition a change can touch, compared as the definition holds them. */
const SCALAR_FIELDS = [
  "title",
  "startTimestamp",
  "endTimestamp",
  "rankBy",
  "currency",
  "minWagered",
  "reviewSeconds",
  "shown",
  "repeat",
  "timeZone",
] as const satisfies readonly (keyof RaceDefinition)[];

/** The fields that differ between two definitions of one race, in a fixed order; [] when none does. */
export function definitionChanges(before: RaceDefinition, after: RaceDefinition): RaceFieldChange[] {
  const changes: RaceFieldChange[] = [];
  for (const field of SCALAR_FIELDS) {
    if (before[field] !== after[field]) changes.push({ field, before: before[field], after: after[field] });
  }
  if (JSON.stringify(before.prizes) !== JSON.stringify(after.prizes)) {
    changes.push({ field: "prizes", before: [...before.prizes], after: [...after.prizes] });
  }
  const was = new Set(before.excludedUserIds);
  const is = new Set(after.excludedUserIds);
  const added = after.excludedUserIds.filter((id) => !was.has(id));
  const removed = before.excludedUserIds.filter((id) => !is.has(id));
  if (added.length > 0 || removed.length > 0) changes.push({ field: "excludedUserIds", added, removed });
  return changes;
}

/**
 * The entries as a reader that must not see user ids gets them (a publishable key, REST, a signed result):
 * the excluded users' ids become as many empty strings, so the count stays and nobody is named.
 */
export function withoutUserIds(entries: readonly RaceHistoryEntry[]): RaceHistoryEntry[] {
  return entries.map((entry) => ({
    ...entry,
    fields: entry.fields.map((change) =>
      change.field === "excludedUserIds"
        ? { field: change.field, added: blank(change.added), removed: blank(change.removed) }
        : change,
    ),
  }));
}

/**
 * The entries as the public gets them (a publishable key): each actor by its kind (`key`, an API key of the
 * affiliate; `admin`, the operator's token; `cli`; `clock`) with an empty id, so no key id nor operating-system user
 * is shown to a page's viewers.
 */
export function withoutActorIds(entries: readonly RaceHistoryEntry[]): RaceHistoryEntry[] {
  return entries.map((entry) => ({ ...entry, actor: { kind: entry.actor.kind, id: "" } }));
}

function blank(ids: readonly string[] | undefined): string[] {
  return (ids ?? []).map(() => "");
}

/**
 * The standings part of a history: the freeze's count once final, else the voids and the late wagers noted so
 * far (`late`; absent: not counted).
 */
export function standingsOf(
  entries: readonly RaceHistoryEntry[],
  counted: RaceVoidCounts,
  late?: RaceVoidCounts,
): RaceStandingsChanges {
  const frozen = entries.find((entry) => entry.kind === "frozen" && entry.standings !== undefined);
  if (frozen?.standings !== undefined) return frozen.standings;
  const lateWagers = late === undefined ? {} : { lateWagers: lateChanges(late, null) };
  return { ...counted, ranksMoved: null, ...lateWagers };
}

function lateChanges(counted: RaceVoidCounts, ranksMoved: readonly number[] | null): LateWagerChanges {
  return { wagers: counted.voidedWagers, usersAffected: counted.usersAffected, ranksMoved };
}

/** What a signed result says of its race's history (issue 36 item 5): no user ids, no amounts. */
export interface RaceHistorySummary {
  /** Changes after creation (updates and a cancellation), the freeze not counted. */
  readonly changes: number;
  readonly entries: readonly {
    readonly at: number;
    readonly kind: string;
    readonly actor: { readonly kind: string; readonly id: string };
    readonly fields: readonly RaceFieldChange[];
  }[];
  readonly standings: RaceStandingsChanges;
}

/**
 * The summary of a race's history for its signed result: every entry but the freeze's own (in order, with
 * its actor and fields, excluded users as counts of blanks), how many changes after creation, and what voids
 * did to its standings (`standings`: the freeze's count).
 */
export function raceHistorySummary(
  entries: readonly RaceHistoryEntry[],
  standings: RaceStandingsChanges,
): RaceHistorySummary {
  const shown = withoutUserIds(entries.filter((entry) => entry.kind !== "frozen"));
  return {
    changes: shown.filter((entry) => entry.kind !== "created").length,
    entries: shown.map((entry) => ({
      at: entry.at,
      kind: entry.kind,
      actor: { kind: entry.actor.kind, id: entry.actor.id },
      fields: entry.fields,
    })),
    standings,
  };
}

/**
 * The ranks whose user or prize differ between the race's placement on `rows` (its board as the freeze read
 * it) and its placement had the voided sums not been voided (each voided user's totals now plus what was
 * voided, a user the board did not list placed at those totals). Ascending, each rank once.
 */
export function ranksMovedByVoids(
  rows: readonly RankedRow[],
  voided: readonly VoidedRaceUser[],
  rules: PlacementRules,
): number[] {
  if (voided.length === 0) return [];
  return ranksMovedAgainst(rows, new Map(voided.map((user) => [user.userExternalId, restoredRow(user)])), rules);
}

/**
 * The ranks whose user or prize differ between the race's placement on `rows` and its placement had the late
 * wagers (`late`: each user's late sums in the `voided*` fields) not been recorded: each such user the board
 * holds placed at their totals now minus the late sums, or left out when nothing else of theirs is left. A late
 * user the board does not hold ranks after every row it holds, and lower still without the late wagers: it
 * moves nothing. `rows` must hold, beyond the places counted, one more row per late user (who may come up into
 * a place a lowered user leaves). Ascending, each rank once.
 */
export function ranksMovedByLateWagers(
  rows: readonly RankedRow[],
  late: readonly VoidedRaceUser[],
  rules: PlacementRules,
): number[] {
  const held = new Set(rows.map((row) => row.userExternalId));
  const lowered = late.filter((user) => held.has(user.userExternalId));
  if (lowered.length === 0) return [];
  return ranksMovedAgainst(rows, new Map(lowered.map((user) => [user.userExternalId, loweredRow(user)])), rules);
}

/** The ranks that differ between the placement on `rows` and on `rows` with `replaced` users' rows instead. */
function ranksMovedAgainst(
  rows: readonly RankedRow[],
  replaced: ReadonlyMap<string, RankedRow | undefined>,
  rules: PlacementRules,
): number[] {
  const actual = placedAll(rows, rules);
  const without = rows.filter((row) => !replaced.has(row.userExternalId));
  const others = [...replaced.values()].filter((row): row is RankedRow => row !== undefined);
  const counterfactual = [...without, ...others].sort((a, b) => boardOrder(a, b, rules));
  const before = placedAll(counterfactual, rules);
  const moved = new Set<number>();
  const length = Math.max(actual.length, before.length);
  for (let i = 0; i < length; i += 1) {
    const now = actual[i];
    const then = before[i];
    if (now !== undefined && (then === undefined || differs(now, then))) moved.add(now.rank);
    if (now === undefined && then !== undefined) moved.add(then.rank);
  }
  return [...moved].sort((a, b) => a - b);
}

/** Every placed user up to the race's counted places (a one-shot placement: the rows are all there is). */
function placedAll(rows: readonly RankedRow[], rules: PlacementRules): PlacedEntry[] {
  const counted = Math.max(rules.shown, rules.prizes.length);
  const placement = placeRace(rows, rows.length + 1, { ...rules, shown: counted });
  return placement.kind === "complete" ? placement.entries : [];
}

function differs(a: PlacedEntry, b: PlacedEntry): boolean {
  return a.row.userExternalId !== b.row.userExternalId || a.rank !== b.rank || compareAmounts(a.prize, b.prize) !== 0;
}

function restoredRow(user: VoidedRaceUser): RankedRow {
  return {
    userExternalId: user.userExternalId,
    username: user.username,
    avatarUrl: user.avatarUrl,
    total: sum(user.total, user.voidedTotal),
    weightedTotal: sum(user.weightedTotal, user.voidedWeighted),
  };
}

/** A late user's row without their late wagers; undefined when they had no other wager of the period. */
function loweredRow(user: VoidedRaceUser): RankedRow | undefined {
  const total = sum(user.total, user.voidedTotal, -1n);
  if (compareAmounts(total, "0") <= 0) return undefined;
  return {
    userExternalId: user.userExternalId,
    username: user.username,
    avatarUrl: user.avatarUrl,
    total,
    weightedTotal: sum(user.weightedTotal, user.voidedWeighted, -1n),
  };
}

/** a + sign × b, exactly. */
function sum(a: string, b: string, sign = 1n): string {
  const scale = Math.max(scaleOf(a), scaleOf(b));
  return unitsText(toUnits(a, scale) + sign * toUnits(b, scale), scale);
}

/** The board's order: ranked total descending, then username, then user id, in code point order. */
function boardOrder(a: RankedRow, b: RankedRow, rules: PlacementRules): number {
  const byTotal = compareAmounts(rankedTotal(b, rules), rankedTotal(a, rules));
  if (byTotal !== 0) return byTotal;
  if (a.username !== b.username) return a.username < b.username ? -1 : 1;
  return a.userExternalId < b.userExternalId ? -1 : a.userExternalId > b.userExternalId ? 1 : 0;
}

/** What a reader of a race's history may see. */
export interface HistoryReader {
  /** The excluded users as counts (withoutUserIds): REST, a publishable key. */
  readonly hideUserIds: boolean;
  /** Who acted by kind only (withoutActorIds): a publishable key, whose viewers are the public. */
  readonly hideActorIds: boolean;
}

/** A race's history as `reader` gets it. */
export async function historyOf(store: RaceHistoryStore, raceId: string, reader: HistoryReader): Promise<RaceHistory> {
  const [entries, counted, late] = await Promise.all([
    store.history(raceId),
    store.voidCounts(raceId),
    store.lateWagerCounts(raceId),
  ]);
  const shown = reader.hideUserIds ? withoutUserIds(entries) : entries;
  return {
    raceId,
    entries: reader.hideActorIds ? withoutActorIds(shown) : shown,
    standings: standingsOf(entries, counted, late),
  };
}

/**
 * The freeze's entry: what voids and late wagers did to the race (`rows`: its board as the freeze placed it,
 * `rules` with every counted place shown; `moreRows(n)`: the board's first n rows, read when late users may
 * leave places to rows beyond `rows`), by the clock.
 */
export async function freezeHistory(
  store: RaceHistoryStore,
  raceId: string,
  rows: readonly RankedRow[],
  rules: PlacementRules,
  moreRows?: (limit: number) => Promise<readonly RankedRow[]>,
): Promise<NewRaceHistoryEntry> {
  const [voided, late] = await Promise.all([store.voidedUsers(raceId), store.lateWagerUsers(raceId)]);
  const lateRows = late.length === 0 || moreRows === undefined ? rows : await moreRows(rows.length + late.length);
  const standings: RaceStandingsChanges = {
    voidedWagers: voided.reduce((count, user) => count + user.voidedWagers, 0),
    usersAffected: voided.length,
    ranksMoved: ranksMovedByVoids(rows, voided, rules),
    lateWagers: lateChanges(
      { voidedWagers: late.reduce((count, user) => count + user.voidedWagers, 0), usersAffected: late.length },
      ranksMovedByLateWagers(lateRows, late, rules),
    ),
  };
  return { kind: "frozen", actor: CLOCK_ACTOR, fields: [], standings };
}
