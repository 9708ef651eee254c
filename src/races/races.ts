/**
 * Races as every skin calls them: define, change, cancel, read and list an affiliate's races, and
 * the clock that moves them on (announcing starts and ends, creating a series' next race, the
 * freeze). Rules are checked by race-rules.ts, standings placed by prizes.ts, series counted by
 * recurrence.ts, the result hashed by digest.ts; storage is the RaceStore port.
 *
 * Live standings come from the leaderboard (its cache and the change feed's freshness, like any
 * board); the freeze reads the primary's totals directly (`freezeStandings`), never a cache or a
 * replica, so the frozen result is the data as committed at the freeze.
 */

import { ADMIN_ACTOR, type RaceActor } from "../ports/race-history.js";
import type {
  FrozenEntry,
  NewRace,
  RaceDefinition,
  RaceListQuery,
  RaceStore,
  SignedResult,
  StoredRace,
} from "../ports/races.js";
import type { PayloadSigner } from "../ports/signing.js";
import type { RankedRow, StandingsStore } from "../ports/standings.js";
import { canonicalDecimal } from "../values/decimal.js";
import type { RankedUser } from "../values/ranked-user.js";
import type { Violation } from "../values/violation.js";
import { scaleOf, toUnits, unitsText } from "./amounts.js";
import { type DigestedResult, raceDigest } from "./digest.js";
import { firstLimit, type PlacedEntry, type Placement, type PlacementRules, placeRace } from "./prizes.js";
import {
  DEFAULT_UPDATE_SCOPE,
  deleteRefusal,
  followingPatch,
  followsChanges,
  pastRaceViolations,
  scopeRefusal,
  type UpdateScope,
} from "./race-corrections.js";
import { raceEvent } from "./race-event-data.js";
import { definitionChanges, freezeHistory, historyOf, type RaceHistory, raceHistorySummary } from "./race-history.js";
import { isRaceId, randomRaceId } from "./race-id.js";
import {
  type RaceDefinitionFields,
  type RacePatch,
  type RaceDefinition as RulesDefinition,
  validateRaceDefinition,
  validateRaceUpdate,
} from "./race-rules.js";
import { finalAt, freezeDueAt, type RaceState, raceStateAt } from "./race-state.js";
import { seriesIndexAt, seriesPeriod, seriesStartAt } from "./recurrence.js";
import { finalizedEvent, resultSealer } from "./signed-result.js";
import { dueStep, MAX_STEP_BACKOFF_SECONDS, StepBackoff, type StepFailure } from "./step-retry.js";

/** A placed user as every skin shows it. */
export interface RaceStanding extends RankedUser {
  /** At the prize table's scale. */
  readonly prize: string;
}

/** A race with where it stands at `now`. */
export interface RaceView {
  readonly race: StoredRace;
  readonly state: RaceState;
  readonly now: number;
  readonly finalAt: number;
  /** The series' next race, when it exists. */
  readonly next: { readonly id: string; readonly startsAt: number } | null;
  readonly entries: readonly RaceStanding[];
  readonly unallocated: string;
  /** The final result as signed at the freeze; absent before, and when no signing key was active then. */
  readonly signed?: SignedResult;
}

export type RaceOutcome<T> =
  | { readonly kind: "ok"; readonly value: T }
  | { readonly kind: "invalid"; readonly violations: readonly Violation[] }
  | { readonly kind: "not-found"; readonly id: string }
  | { readonly kind: "precondition"; readonly message: string }
  | { readonly kind: "slug-taken"; readonly slug: string }
  /** A cap reached (`setting` is the variable that sets `limit`): nothing was written. */
  | { readonly kind: "limit"; readonly message: string; readonly setting: string; readonly limit: number };

export interface RaceListRequest {
  readonly states?: readonly RaceState[];
  readonly slug?: string;
  /** 1..100; 0 or absent: 20. */
  readonly pageSize?: number;
  readonly pageToken?: string;
}

export interface RacesOptions {
  readonly store: RaceStore;
  /** Live standings: the board of the race's period, cached like any board (leaderboard/board-standings.ts). */
  readonly standings: StandingsStore;
  /** The freeze's totals: the primary, uncached. */
  readonly freezeStandings: StandingsStore;
  /** Signs each final result at the freeze (docs/verify.md); absent: results are not signed. */
  readonly signer?: PayloadSigner;
  readonly defaultAvatarUrl: string;
  /** Current Unix time in seconds. */
  readonly now?: () => number;
  /**
   * Races handled per clock tick, and how many at once. The default is 1: the freeze is background work
   * that leaves the database to the boards. How long 1,000 races take to freeze at each setting, and what it
   * does to board reads, is in docs/benchmarks.md, "Races: 1,000 races ending in the same second".
   */
  readonly tickBatch?: number;
  readonly tickConcurrency?: number;
  /** Most scheduled and live races one affiliate may have (RACES_PER_AFFILIATE); absent: no cap. */
  readonly racesPerAffiliate?: number;
}

const DEFAULT_PAGE_SIZE = 20;
const MAX_PAGE_SIZE = 100;
/** Rows asked of a board at most while placing (a tie this long at the cut is not plausible). */
const MAX_PLACEMENT_ROWS = 100_000;

export class Races {
  private readonly now: () => number;
  private readonly backoff = new StepBackoff();

  constructor(private readonly options: RacesOptions) {
    this.now = options.now ?? (() => Math.floor(Date.now() / 1000));
  }

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
    const full = await raceCapReached(this.options, affiliateId, now);
    if (full !== undefined) return full;
    const inserted = await this.options.store.insert(
      { ...definition, ...seriesStartAt(definition, now), id: randomRaceId(), affiliateId, createdAt: now },
      actor,
    );
    if (inserted.kind === "slug-taken") return { kind: "slug-taken", slug: definition.slug };
    return { kind: "ok", value: await this.viewOf(inserted.race, now) };
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
    const race = await this.owned(affiliateId, id);
    if (race === undefined) return { kind: "not-found", id };
    const now = this.now();
    const next = await this.nextExisting(race);
    const refusal = scopeRefusal(race, next, scope);
    if (refusal !== undefined) return { kind: "precondition", message: refusal };
    const changed = checkedChange(race, patch, now, decodingViolations);
    if (changed.kind !== "ok") return changed;
    const nextPatch = scope === "this-and-following" && followsChanges(next, now) ? followingPatch(patch) : undefined;
    const nextChange = next === undefined || nextPatch === undefined ? undefined : checkedChange(next, nextPatch, now);
    if (nextChange !== undefined && nextChange.kind !== "ok") return nextChange;
    const stored = await this.store(id, changed.value, now, actor);
    if (next === undefined || nextChange === undefined)
      return { kind: "ok", value: await this.updated(stored, now, []) };
    await this.store(next.id, nextChange.value, now, actor);
    return { kind: "ok", value: await this.updated(stored, now, [next.id]) };
  }

  /** Deletes a race nobody has seen yet (race-corrections.ts); the race as it was. */
  async delete(affiliateId: number, id: string, actor: RaceActor = ADMIN_ACTOR): Promise<RaceOutcome<RaceView>> {
    const race = await this.owned(affiliateId, id);
    if (race === undefined) return { kind: "not-found", id };
    const now = this.now();
    const refusal = deleteRefusal(race, now);
    if (refusal !== undefined) return { kind: "precondition", message: refusal };
    const view = await this.viewOf(race, now);
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
    return { ...(await this.viewOf(race, now)), following };
  }

  async cancel(affiliateId: number, id: string, actor: RaceActor = ADMIN_ACTOR): Promise<RaceOutcome<RaceView>> {
    const race = await this.owned(affiliateId, id);
    if (race === undefined) return { kind: "not-found", id };
    if (race.frozenAt !== null) return { kind: "precondition", message: `race ${id} is final and cannot be cancelled` };
    const now = this.now();
    const stored = await this.options.store.cancel(
      id,
      now,
      (cancelled) => raceEvent("race.cancelled", cancelled),
      actor,
    );
    return { kind: "ok", value: await this.viewOf(stored, now) };
  }

  /** A race by id, or a series' current race by slug: the live one, else the next, else the latest. */
  async get(affiliateId: number, idOrSlug: string): Promise<RaceOutcome<RaceView>> {
    const now = this.now();
    const race = isRaceId(idOrSlug)
      ? await this.owned(affiliateId, idOrSlug)
      : await this.current(affiliateId, idOrSlug, now);
    if (race === undefined) return { kind: "not-found", id: idOrSlug };
    return { kind: "ok", value: await this.viewOf(race, now) };
  }

  /** A race's result as signed at its freeze, by its id alone (the verify page: the id is the capability). */
  signedResult(raceId: string): Promise<SignedResult | undefined> {
    return this.options.store.signedResult(raceId);
  }

  /** The race's history (races/race-history.ts); `hideUserIds`: for a reader that must not see user ids. */
  history(race: StoredRace, hideUserIds: boolean): Promise<RaceHistory> {
    return historyOf(this.options.store, race.id, hideUserIds);
  }

  async list(
    affiliateId: number,
    request: RaceListRequest,
  ): Promise<RaceOutcome<{ races: RaceView[]; nextPageToken: string }>> {
    const violations: Violation[] = [];
    const pageSize = request.pageSize === undefined || request.pageSize === 0 ? DEFAULT_PAGE_SIZE : request.pageSize;
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE_SIZE) {
      violations.push({ field: "pageSize", message: `pageSize must be between 1 and ${MAX_PAGE_SIZE}` });
    }
    const after = request.pageToken ? pageTokenValue(request.pageToken) : undefined;
    if (after === null) violations.push({ field: "pageToken", message: "pageToken is not one this server gave" });
    if (violations.length > 0) return { kind: "invalid", violations };
    const now = this.now();
    const query: RaceListQuery = {
      affiliateId,
      now,
      limit: pageSize + 1,
      ...(request.slug ? { slug: request.slug } : {}),
      ...(request.states !== undefined ? { states: request.states } : {}),
      ...(after ? { after } : {}),
    };
    const found = await this.options.store.list(query);
    const page = found.slice(0, pageSize);
    const last = page.at(-1);
    const nextPageToken = found.length > pageSize && last !== undefined ? pageToken(last) : "";
    const races = page.map((race) => this.bareView(race, now));
    return { kind: "ok", value: { races, nextPageToken } };
  }

  /**
   * Moves due races on: announces starts (creating a series' next race) and ends, and freezes
   * races whose review window is over. Safe on every instance at once (each step happens once,
   * storage/races.ts). Each race's step is taken on its own: one that fails is reported to `onFailure`
   * and put off (races/step-retry.ts) while the others go on. Returns how many steps this call took.
   */
  async tick(onFailure?: (failure: StepFailure) => void): Promise<{ started: number; ended: number; frozen: number }> {
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
    counts: { started: number; ended: number; frozen: number },
    boards: StandingsStore,
    onFailure: ((failure: StepFailure) => void) | undefined,
  ): Promise<void> {
    try {
      await this.step(race, now, counts, boards);
      this.backoff.succeeded(race.id);
    } catch (error) {
      const { step, dueAt } = dueStep(race, now);
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

  private async step(
    race: StoredRace,
    now: number,
    counts: { started: number; ended: number; frozen: number },
    boards: StandingsStore,
  ): Promise<void> {
    const { store } = this.options;
    // A freeze that is due takes the start and end announcements still owed in its own transaction.
    if (now >= freezeDueAt({ end: race.endTimestamp, reviewSeconds: race.reviewSeconds })) {
      if (await this.freeze(race, now, boards)) {
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

  private async freeze(race: StoredRace, now: number, boards: StandingsStore): Promise<boolean> {
    // The result decides payouts: it holds every user a prize is paid to, even past `shown` (so the
    // digest covers every winner), besides the shown places.
    const counted = Math.max(race.shown, race.prizes.length);
    const placement = await this.place(race, boards, counted);
    const entries: FrozenEntry[] = placement.entries.map((entry) => ({
      rank: entry.rank,
      userExternalId: entry.row.userExternalId,
      username: entry.row.username,
      avatarUrl: avatarOf(entry.row, this.options.defaultAvatarUrl),
      total: canonicalDecimal(entry.row.total),
      weightedTotal: canonicalDecimal(entry.row.weightedTotal),
      prize: entry.prize,
    }));
    const { digest } = raceDigest(digestInput(race, entries, placement.unallocated));
    const result = { at: now, digest, unallocated: placement.unallocated, entries };
    const frozen: StoredRace = { ...race, frozenAt: now, digest, unallocated: placement.unallocated };
    const event = (signed: SignedResult | undefined) =>
      finalizedEvent(frozen, { entries, unallocated: placement.unallocated }, signed);
    const history = await freezeHistory(this.options.store, race.id, placement.rows, placementRules(race, counted));
    const { signer } = this.options;
    // The signed result carries the race's history as recorded before its freeze (no change is allowed after the end).
    const seal =
      signer === undefined
        ? undefined
        : resultSealer(signer, {
            ...{ race, entries, unallocated: placement.unallocated, frozenAt: now, digest },
            historySummary: raceHistorySummary(
              await this.options.store.history(race.id),
              history.standings ?? NO_VOIDS,
            ),
          });
    const owed = {
      started: raceEvent("race.started", race),
      ended: raceEvent("race.ended", race),
      next: this.nextOf(race),
    } as const;
    return this.options.store.freeze(race.id, result, event, owed, history, seal);
  }

  /** A series race's next race, when it exists (and the race still holds its slug). */
  private nextExisting(race: StoredRace): Promise<StoredRace | undefined> {
    if (race.repeat === "none" || !race.slugHeld) return Promise.resolve(undefined);
    return this.options.store.seriesRace(race.affiliateId, race.slug, race.seriesIndex + 1);
  }

  private async owned(affiliateId: number, id: string): Promise<StoredRace | undefined> {
    const race = await this.options.store.byId(id);
    return race !== undefined && race.affiliateId === affiliateId ? race : undefined;
  }

  private async current(affiliateId: number, slug: string, now: number): Promise<StoredRace | undefined> {
    const { started, upcoming } = await this.options.store.aroundNow(affiliateId, slug, now);
    if (started !== undefined && started.endTimestamp >= now && started.cancelledAt === null) return started;
    return upcoming ?? started;
  }

  private bareView(race: StoredRace, now: number): RaceView {
    return {
      race,
      state: stateOf(race, now),
      now,
      finalAt: finalAt({ end: race.endTimestamp, reviewSeconds: race.reviewSeconds }),
      next: null,
      entries: [],
      unallocated: "",
    };
  }

  private async viewOf(race: StoredRace, now: number): Promise<RaceView> {
    const state = stateOf(race, now);
    const nextRace = await this.nextExisting(race);
    const next = nextRace === undefined ? null : { id: nextRace.id, startsAt: nextRace.startTimestamp };
    const base = {
      race,
      state,
      now,
      finalAt: finalAt({ end: race.endTimestamp, reviewSeconds: race.reviewSeconds }),
      next,
    };
    if (state === "final") {
      const [frozen, signed] = await Promise.all([
        this.options.store.frozenEntries(race.id),
        this.options.store.signedResult(race.id),
      ]);
      const view = { ...base, entries: frozen.map(standingOfFrozen), unallocated: race.unallocated ?? "" };
      return signed === undefined ? view : { ...view, signed };
    }
    if (state === "scheduled" || state === "cancelled") {
      return { ...base, entries: [], unallocated: prizeSum(race.prizes) };
    }
    const placement = await this.place(race, undefined);
    return {
      ...base,
      entries: placement.entries.map((entry) => standingOfPlaced(entry, this.options.defaultAvatarUrl)),
      unallocated: placement.unallocated,
    };
  }

  /** Places the race's board, from `direct` or else the cached boards; `shown`: places listed (the race's). */
  private place(race: StoredRace, direct: StandingsStore | undefined, shown = race.shown): Promise<BoardPlacement> {
    const board = direct ?? this.options.standings;
    return placeFromBoard(board, race.affiliateId, race.startTimestamp, race.endTimestamp, placementRules(race, shown));
  }
}

type CompletePlacement = Extract<Placement, { kind: "complete" }>;

/** A race as an update left it, with the series' later races it changed too (their ids). */
export interface UpdatedRace extends RaceView {
  readonly following: readonly string[];
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
/** A placement with the board rows it was placed on. */
type BoardPlacement = CompletePlacement & { readonly rows: readonly RankedRow[] };

function placementRules(race: StoredRace, shown: number): PlacementRules {
  const { prizes, minWagered, excludedUserIds, rankBy } = race;
  return { prizes, minWagered, excludedUserIds, shown, rankBy };
}

/**
 * Places a race on the board of the inclusive period [start, end]: asks the store for the rows
 * prizes.ts needs first, and for more while it says the cut is not settled (excluded users, users
 * below the minimum, a tie at the cut).
 */
export async function placeFromBoard(
  store: StandingsStore,
  affiliateId: number,
  start: number,
  end: number,
  rules: PlacementRules,
): Promise<BoardPlacement> {
  let limit = firstLimit(rules);
  for (;;) {
    const rows = await store.topUsers(affiliateId, start, end, limit, rules.rankBy);
    const placement = placeRace(rows, limit, rules);
    if (placement.kind === "complete") return { ...placement, rows };
    if (limit >= MAX_PLACEMENT_ROWS) throw new Error(`a tie longer than ${MAX_PLACEMENT_ROWS} rows at the cut`);
    limit = Math.min(MAX_PLACEMENT_ROWS, Math.max(placement.limit, limit + 1));
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

function stateOf(race: StoredRace, now: number): RaceState {
  return raceStateAt(
    {
      start: race.startTimestamp,
      end: race.endTimestamp,
      reviewSeconds: race.reviewSeconds,
      cancelledAt: race.cancelledAt,
      frozenAt: race.frozenAt,
    },
    now,
  );
}

/** A definition as race-rules.ts checked it, as the store keeps it. */
function stored(definition: RulesDefinition): RaceDefinition {
  const { start, end, ...rest } = definition;
  return { ...rest, startTimestamp: start, endTimestamp: end };
}

/** A stored race's definition as race-rules.ts takes it. */
function rulesDefinitionOf(race: StoredRace): RulesDefinition {
  const { startTimestamp, endTimestamp, ...rest } = definitionOf(race);
  return { ...rest, start: startTimestamp, end: endTimestamp };
}

function definitionOf(race: StoredRace): RaceDefinition {
  return {
    slug: race.slug,
    title: race.title,
    startTimestamp: race.startTimestamp,
    endTimestamp: race.endTimestamp,
    rankBy: race.rankBy,
    prizes: race.prizes,
    currency: race.currency,
    minWagered: race.minWagered,
    excludedUserIds: race.excludedUserIds,
    reviewSeconds: race.reviewSeconds,
    shown: race.shown,
    repeat: race.repeat,
    timeZone: race.timeZone,
  };
}

function avatarOf(row: RankedRow, defaultAvatarUrl: string): string {
  return row.avatarUrl === null || row.avatarUrl === "" ? defaultAvatarUrl : row.avatarUrl;
}

function standingOfPlaced(entry: PlacedEntry, defaultAvatarUrl: string): RaceStanding {
  return {
    rank: entry.rank,
    userId: entry.row.userExternalId,
    username: entry.row.username,
    avatar: avatarOf(entry.row, defaultAvatarUrl),
    totalWagered: canonicalDecimal(entry.row.total),
    weightedWagered: canonicalDecimal(entry.row.weightedTotal),
    prize: entry.prize,
  };
}

function standingOfFrozen(entry: FrozenEntry): RaceStanding {
  return {
    rank: entry.rank,
    userId: entry.userExternalId,
    username: entry.username,
    avatar: entry.avatarUrl,
    totalWagered: entry.total,
    weightedWagered: entry.weightedTotal,
    prize: entry.prize,
  };
}

/** The prize table's sum at its scale. */
function prizeSum(prizes: readonly string[]): string {
  const scale = Math.max(0, ...prizes.map(scaleOf));
  return unitsText(
    prizes.reduce((sum, prize) => sum + toUnits(prize, scale), 0n),
    scale,
  );
}

function digestInput(race: StoredRace, entries: readonly FrozenEntry[], unallocated: string): DigestedResult {
  return {
    raceId: race.id,
    slug: race.slug,
    startTimestamp: race.startTimestamp,
    endTimestamp: race.endTimestamp,
    rankBy: race.rankBy,
    currency: race.currency,
    entries: entries.map((entry) => ({
      rank: entry.rank,
      username: entry.username,
      wagered: entry.total,
      weighted: entry.weightedTotal,
      prize: entry.prize,
    })),
    unallocated,
  };
}

/** What voids did to a race none touched. */
const NO_VOIDS = { voidedWagers: 0, usersAffected: 0, ranksMoved: [] } as const;

function pageToken(race: StoredRace): string {
  return Buffer.from(JSON.stringify([race.startTimestamp, race.id]), "utf8").toString("base64url");
}

function pageTokenValue(token: string): { start: number; id: string } | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
    if (!Array.isArray(value) || value.length !== 2) return null;
    const [start, id] = value as unknown[];
    if (typeof start !== "number" || !Number.isInteger(start) || typeof id !== "string") return null;
    return { start, id };
  } catch {
    return null;
  }
}

/**
 * The refusal of one more race for an affiliate holding its cap of scheduled and live races. Counted before the
 * insert: creates racing each other may pass together, so the cap can be passed by a few, never by many.
 */
async function raceCapReached(
  options: RacesOptions,
  affiliateId: number,
  now: number,
): Promise<RaceOutcome<never> | undefined> {
  const cap = options.racesPerAffiliate;
  if (cap === undefined) return undefined;
  const open = await options.store.list({ affiliateId, states: ["scheduled", "live"], now, limit: cap });
  if (open.length < cap) return undefined;
  const message = `the affiliate has ${cap} scheduled and live races, the most allowed (RACES_PER_AFFILIATE). Cancel one first`;
  return { kind: "limit", message, setting: "RACES_PER_AFFILIATE", limit: cap };
}
