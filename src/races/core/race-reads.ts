/**
 * The race reads: a race by id or a series' current race by slug, an affiliate's races a page at a time,
 * a signed result and a race's history, each as a RaceView at the reader's `now`. Live standings come from
 * the leaderboard (its cache and the change feed's freshness, like any board); a final race answers its
 * frozen result as stored. The owner's writes (race-admin.ts) and the clock (race-clock.ts) answer views
 * through these reads too.
 */

import type { FrozenEntry, RaceListQuery, SignedResult, StoredRace } from "../../ports/races.js";
import type { LogInclusion } from "../../ports/results-log.js";
import type { StandingsStore } from "../../ports/standings.js";
import type { Violation } from "../../values/violation.js";
import { scaleOf, toUnits, unitsText } from "./amounts.js";
import { type HistoryReader, historyOf, type RaceHistory } from "./race-history.js";
import { isRaceId } from "./race-id.js";
import { type BoardPlacement, frozenEntry, placeFromBoard, placementRules } from "./race-placing.js";
import { finalAt, type RaceState, raceStateAt } from "./race-state.js";
import type { RaceListRequest, RaceOutcome, RaceStanding, RacesOptions, RaceView } from "./race-view.js";

const DEFAULT_PAGE_SIZE = 20;
const MAX_PAGE_SIZE = 100;

export class RaceReads {
  constructor(
    private readonly options: RacesOptions,
    private readonly now: () => number,
  ) {}

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

  /** The race's history (races/core/race-history.ts) as `reader` may see it. */
  history(race: StoredRace, reader: HistoryReader): Promise<RaceHistory> {
    return historyOf(this.options.store, race.id, reader);
  }

  /**
   * The history of a race that was deleted, for a reader of the affiliate that owned it: every entry, the
   * deletion last (when, by whom). `not-found` for a race that is not deleted, or was another affiliate's:
   * the race itself stays not found (`get`).
   */
  async deletedHistory(affiliateId: number, id: string, reader: HistoryReader): Promise<RaceOutcome<RaceHistory>> {
    const owner = isRaceId(id) ? await this.options.store.deletedOwner(id) : undefined;
    if (owner !== affiliateId) return { kind: "not-found", id };
    return { kind: "ok", value: await historyOf(this.options.store, id, reader) };
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

  /** The race's entry and proof in the results log (a race frozen, or cancelled after its start, is logged). */
  logOf(race: StoredRace): Promise<LogInclusion | undefined> {
    const { log } = this.options;
    const cancelledBeforeStart = race.cancelledAt !== null && race.cancelledAt < race.startTimestamp;
    if (log === undefined || cancelledBeforeStart) return Promise.resolve(undefined);
    return log.inclusionOf(race.id);
  }

  /** A series race's next race, when it exists (and the race still holds its slug). */
  nextExisting(race: StoredRace): Promise<StoredRace | undefined> {
    if (race.repeat === "none" || !race.slugHeld) return Promise.resolve(undefined);
    return this.options.store.seriesRace(race.affiliateId, race.slug, race.seriesIndex + 1);
  }

  /** The race `id` when `affiliateId` owns it. */
  async owned(affiliateId: number, id: string): Promise<StoredRace | undefined> {
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

  /** The race as it stands at `now`: its standings live, or its frozen result once final. */
  async viewOf(race: StoredRace, now: number): Promise<RaceView> {
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
      const [frozen, signed, log] = await Promise.all([
        this.options.store.frozenEntries(race.id),
        this.options.store.signedResult(race.id),
        this.logOf(race),
      ]);
      const view = { ...base, entries: frozen.map(standingOfFrozen), unallocated: race.unallocated ?? "" };
      return { ...view, ...(signed === undefined ? {} : { signed }), ...(log === undefined ? {} : { log }) };
    }
    if (state === "scheduled" || state === "cancelled") {
      const log = state === "cancelled" ? await this.logOf(race) : undefined;
      return { ...base, entries: [], unallocated: prizeSum(race.prizes), ...(log === undefined ? {} : { log }) };
    }
    const placement = await this.place(race, undefined);
    return {
      ...base,
      entries: placement.entries.map((entry) => standingOfFrozen(frozenEntry(entry, this.options.defaultAvatarUrl))),
      unallocated: placement.unallocated,
    };
  }

  /** Places the race's board, from `direct` or else the cached boards; `shown`: places listed (the race's). */
  place(race: StoredRace, direct: StandingsStore | undefined, shown = race.shown): Promise<BoardPlacement> {
    const board = direct ?? this.options.standings;
    return placeFromBoard(board, race.affiliateId, race.startTimestamp, race.endTimestamp, placementRules(race, shown));
  }
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

/** A frozen or placed entry as a reader sees it. */
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
