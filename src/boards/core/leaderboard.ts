/**
 * The answer to the one question: who are the top wagering users of this
 * affiliate in this period. Totals come from the standings store (a port: MariaDB's
 * rollups, or the reference model in tests) and are cached briefly per affiliate, period and
 * ranking (plain or weighted total).
 */

import type { FleetPeriod } from "../../ports/fleet.js";
import type { RankedRow, StandingsStore } from "../../ports/standings.js";
import { DAY } from "../../values/calendar.js";
import { canonicalDecimal } from "../../values/decimal.js";
import { StoreFailure } from "../../values/domain-errors.js";
import { RecentFlights } from "../../values/expiring-cache.js";
import type { RankedUser } from "../../values/ranked-user.js";
import { type BoardChange, ChangeSet } from "./change-set.js";
import { HeldBoards } from "./held-boards.js";
import { MAX_NUM_USERS, type PeriodQuery } from "./period-request.js";
import { type CachedValue, ResultCache } from "./result-cache.js";

export type { RankedUser };

export interface Standings {
  readonly ranked: readonly RankedUser[];
  /** Whole seconds this answer may still be reused by the caller (Cache-Control max-age). */
  readonly maxAgeSeconds: number;
  /**
   * This exact cached answer's identity (a new object whenever it is reloaded), for renderers that keep
   * what they make of it (boards/wire/parts/answer-memo.ts); undefined when the answer is not cached.
   */
  readonly memoKey: object | undefined;
}

export interface LeaderboardOptions {
  /** Where the totals come from (boards/sql/standings-store.ts on MariaDB). */
  readonly standings: StandingsStore;
  readonly defaultAvatarUrl: string;
  /** Lifetime of a cached answer; 0 disables the cache. */
  readonly cacheTtlMs: number;
  /** Current Unix time in seconds. */
  readonly now?: () => number;
  readonly maxCachedPeriods?: number;
  /**
   * Whether the change feed is current (src/boards/core/change-feed.ts): cached answers are
   * served only while it is, so every committed change is on every instance within a second.
   * Absent, entries live for their TTL (used only by tests of the cache itself).
   */
  readonly freshness?: { isCurrent(): boolean };
  /**
   * A fleet (boards/core/fleet-standings.ts): a period another instance leads is asked of it before it is
   * computed here. Absent, every answer is computed here.
   */
  readonly fleet?: { fromLeader(period: FleetPeriod, fresh: boolean): Promise<readonly RankedUser[] | undefined> };
  /**
   * Whether a live board shows this period here: its cached answer is then kept as long as a settled period's,
   * since the change feed drops it at every change that touches it, and a POST for a watched board is answered
   * from the live board's own computation instead of a second query.
   */
  readonly isWatched?: (period: FleetPeriod) => boolean;
  /**
   * Boards kept current from the change feed (held-boards.ts): on when the store can read changed
   * users (`standings.keyed`), answers are cached and a change feed drives them (`freshness`), unless false.
   */
  readonly incremental?: false | IncrementalOptions;
  /**
   * The retention horizons this instance answers under (issue 47): a period they refuse is refused before any cache,
   * held board or fleet leader is asked, so no answer computed before they moved, or by an instance that did not know
   * them, is served. `dropRefused()` drops what they refuse when they move. Absent: nothing is ever pruned.
   */
  readonly retention?: { refusal(affiliateId: number, start: number, end: number): Error | undefined };
}

export interface IncrementalOptions {
  /** Rows held below the shown ones. Default 50. */
  readonly margin?: number;
  /** A held board is computed in full again at least this often. Default 60 s. */
  readonly checkEverySeconds?: number;
  /** Boards held at most (least recently used let go). Default 2000. */
  readonly maxBoards?: number;
  /** Told when a check's full computation differs from the held rows (a change the feed missed). */
  readonly onMismatch?: (key: string, detail: string) => void;
}

/**
 * A period that ended this long ago changes only through late corrections and voids, and the
 * change feed drops its entry when one commits: cache it much longer.
 */
const SETTLED_AFTER_SECONDS = DAY;
const SETTLED_TTL_FACTOR = 360;
/** A cached answer's key: the affiliate, the period and the ranking (every list length is a slice of it). */
function cacheKeyOf(affiliateId: number, query: PeriodQuery): string {
  return `${affiliateId}:${query.start}:${query.end}:${query.rankBy ?? "wagered"}`;
}

/**
 * How long a caller may reuse an answer (Cache-Control max-age): a change reaches every
 * instance within a second, so promising more would let callers show totals the service has
 * already corrected.
 */
const MAX_CLIENT_AGE_SECONDS = 1;

/** While the change feed is behind, an ask joins a computation of its period started at most this long ago. */
const BYPASS_JOIN_MS = 250;

export class Leaderboard {
  private readonly now: () => number;
  private readonly cache: ResultCache<readonly RankedUser[]>;
  /**
   * Computations made while the change feed is behind, shared by the asks of one period that come while one runs
   * (each joiner gets an answer at most BYPASS_JOIN_MS older than its ask): never stored.
   */
  private readonly bypassing = new RecentFlights<readonly RankedUser[]>(BYPASS_JOIN_MS);

  /** Boards kept current from the change feed; undefined when off (see LeaderboardOptions.incremental). */
  private readonly held: HeldBoards | undefined;

  constructor(private readonly options: LeaderboardOptions) {
    this.now = options.now ?? (() => Math.floor(Date.now() / 1000));
    this.cache = new ResultCache(options.maxCachedPeriods ?? 10_000, () => this.now() * 1000);
    this.held = heldBoardsFor(options, () => this.now() * 1000);
  }

  /** Requests answered from the database because the change feed was behind. */
  private bypassed = 0;

  get cacheStats(): { hits: number; misses: number; size: number } {
    return { hits: this.cache.hits, misses: this.cache.misses + this.bypassed, size: this.cache.size };
  }

  /** Entries dropped because their data changed. */
  get invalidations(): number {
    return this.cache.invalidations;
  }

  /**
   * The standings when they can be answered at once (a period not started yet, or a fresh cached
   * answer), else undefined: then topWagersForPeriod loads them. A cache hit so costs no promise.
   */
  cachedStandings(affiliateId: number, query: PeriodQuery): Standings | undefined {
    // A period that has not started yet has no wagers by definition (ingest
    // accepts wagers a few minutes ahead of the clock; they must not show early).
    if (query.start > this.now()) return { ranked: [], maxAgeSeconds: 0, memoKey: undefined };
    if (this.options.cacheTtlMs <= 0) return undefined;
    if (this.options.freshness !== undefined && !this.options.freshness.isCurrent()) return undefined;
    // A period the horizons refuse is never answered from a cache: topWagersForPeriod refuses it.
    if (this.options.retention?.refusal(affiliateId, query.start, query.end) !== undefined) return undefined;
    const key = this.recentKeyOf(affiliateId, query);
    const entry = this.cache.peek(key);
    return entry === undefined ? undefined : this.standingsOf(entry, query);
  }

  /** Each affiliate's last period asked and its cache key (recentKeyOf). */
  private readonly recentKeys = new Map<number, { start: number; end: number; rankBy: string; key: string }>();

  /**
   * The period's cache key, the same string as the last time this affiliate asked for this period: a string keeps
   * its hash once computed, so a hit of the hot period makes and hashes no new text (about 2,000 instructions of a
   * REST call; docs/benchmarks.md, issue 49 part 2). One entry per affiliate, replaced when it asks another period.
   */
  private recentKeyOf(affiliateId: number, query: PeriodQuery): string {
    const rankBy = query.rankBy ?? "wagered";
    const recent = this.recentKeys.get(affiliateId);
    if (recent !== undefined && recent.start === query.start && recent.end === query.end && recent.rankBy === rankBy) {
      return recent.key;
    }
    const key = cacheKeyOf(affiliateId, query);
    this.recentKeys.set(affiliateId, { start: query.start, end: query.end, rankBy, key });
    return key;
  }

  /** Answers computed here in full outside the held boards, and answers taken from the period's leader in a fleet. */
  private readonly counted = { full: 0, remote: 0 };

  /**
   * Answers computed here (from the database) by kind, and answers taken from the period's leader in a fleet:
   * full (the period's whole aggregation), incremental (only the changed users read and merged into a held
   * board; present when held boards are on), remote.
   */
  get computations(): Readonly<{ full: number; remote: number; incremental?: number }> {
    if (this.held === undefined) return { ...this.counted };
    const { full, incremental } = this.held.computations;
    return { full: this.counted.full + full, remote: this.counted.remote, incremental };
  }

  /**
   * The held boards: how many, loads answered with nothing to read (unchanged), and periodic checks that
   * found a held board different from its full computation (mismatches: a change the feed did not deliver).
   */
  get heldStats(): { boards: number; unchanged: number; mismatches: number } | undefined {
    if (this.held === undefined) return undefined;
    const { unchanged, mismatches } = this.held.computations;
    return { boards: this.held.size, unchanged, mismatches };
  }

  /**
   * The period's top `query.numUsers`, from the cache when it holds a fresh answer; else computed once however
   * many ask at the same time (asked of the period's leader first in a fleet, unless `here`: a leader serving the
   * fleet computes its answer itself).
   */
  async topWagersForPeriod(affiliateId: number, query: PeriodQuery, here = false): Promise<Standings> {
    const cached = this.cachedStandings(affiliateId, query);
    if (cached !== undefined) return cached;
    if (query.start > this.now()) return { ranked: [], maxAgeSeconds: 0, memoKey: undefined };
    const refusal = this.options.retention?.refusal(affiliateId, query.start, query.end);
    if (refusal !== undefined) throw new StoreFailure(refusal);
    if (this.options.cacheTtlMs <= 0) {
      return { ranked: await this.load(affiliateId, query, query.numUsers), maxAgeSeconds: 0, memoKey: undefined };
    }
    const key = cacheKeyOf(affiliateId, query);
    if (this.options.freshness !== undefined && !this.options.freshness.isCurrent()) {
      // The change feed is behind (database trouble, or an instance too busy to read it): store nothing.
      this.bypassed += 1;
      const ranked = await this.bypassing.run(key, () => this.loadShared(affiliateId, query, here, true));
      return { ranked: ranked.slice(0, query.numUsers), maxAgeSeconds: 0, memoKey: undefined };
    }
    const ttlMs = this.ttlFor(affiliateId, query);
    const entry = await this.cache.get(
      key,
      () => this.loadShared(affiliateId, query, here),
      () => ttlMs,
    );
    return this.standingsOf(entry, query);
  }

  private standingsOf(entry: CachedValue<readonly RankedUser[]>, query: PeriodQuery): Standings {
    const ranked = entry.value.length > query.numUsers ? entry.value.slice(0, query.numUsers) : entry.value;
    const left = Math.max(0, Math.floor((entry.expiresAt - this.now() * 1000) / 1000));
    return { ranked, maxAgeSeconds: Math.min(MAX_CLIENT_AGE_SECONDS, left), memoKey: entry };
  }

  /**
   * Drops the cached answers that committed changes touch: an affiliate's periods overlapping
   * the changed wagers' times, and every answer that lists a user whose profile changed or is cut
   * at MAX_NUM_USERS rows (a renamed user tied with the cut may enter it).
   */
  applyChanges(changes: Iterable<BoardChange> | ChangeSet): void {
    const changed = changes instanceof ChangeSet ? changes : new ChangeSet(changes);
    if (changed.empty) return;
    this.held?.applyChanges(changed);
    this.cache.drop((key, value) => {
      const [affiliate = "", start = "", end = ""] = key.split(":");
      if (changed.touchesPeriod(Number(affiliate), Number(start), Number(end))) return true;
      if (changed.users.size === 0) return false;
      // A running load may list a renamed user: it must not be stored. A board cut at MAX_NUM_USERS rows may
      // gain a renamed user it does not list (a new name can move a user tied with the cut above it).
      return value === undefined || value.length >= MAX_NUM_USERS || changed.touchesUsers(value);
    });
  }

  /**
   * Drops every cached answer, running load and held board whose period the retention horizons now refuse (they
   * moved): told by the horizons' watch before it reports them as read, on every instance.
   */
  dropRefused(): void {
    const refused = this.options.retention;
    if (refused === undefined) return;
    const affected = (affiliateId: number, start: number, end: number) =>
      refused.refusal(affiliateId, start, end) !== undefined;
    this.held?.recomputeWhere(affected);
    this.cache.drop((key) => {
      const [affiliate = "", start = "", end = ""] = key.split(":");
      return affected(Number(affiliate), Number(start), Number(end));
    });
  }

  private ttlFor(affiliateId: number, query: PeriodQuery): number {
    const settled = query.end < this.now() - SETTLED_AFTER_SECONDS;
    const watched = this.options.isWatched?.(periodOf(affiliateId, query)) ?? false;
    return settled || watched ? this.options.cacheTtlMs * SETTLED_TTL_FACTOR : this.options.cacheTtlMs;
  }

  /**
   * The top 100 from the period's leader in a fleet, else computed here. `fresh`: this instance's change feed is
   * behind, so only a leader whose own feed is current may answer, and a held board is not used here.
   */
  private async loadShared(
    affiliateId: number,
    query: PeriodQuery,
    here: boolean,
    fresh = false,
  ): Promise<readonly RankedUser[]> {
    if (!here && this.options.fleet !== undefined) {
      const remote = await this.options.fleet.fromLeader(periodOf(affiliateId, query), fresh);
      if (remote !== undefined) {
        this.counted.remote += 1;
        return remote;
      }
    }
    // A held board is only as current as the change feed: while the feed is behind, the board is computed in full.
    const unsettled = query.end >= this.now() - SETTLED_AFTER_SECONDS;
    const held = this.held !== undefined && unsettled && !fresh ? this.held : undefined;
    if (held !== undefined) return this.loadHeld(held, cacheKeyOf(affiliateId, query), affiliateId, query);
    return this.load(affiliateId, query, MAX_NUM_USERS);
  }

  /** A board whose period has not settled: from the held boards (computed in full or incrementally). */
  private async loadHeld(held: HeldBoards, key: string, affiliateId: number, query: PeriodQuery) {
    const board = { key, affiliateId, start: query.start, end: query.end, rankBy: query.rankBy ?? "wagered" };
    try {
      return (await held.rows(board)).map((row, index) => this.rankedUser(row, index));
    } catch (error) {
      throw new StoreFailure(error);
    }
  }

  private async load(affiliateId: number, query: PeriodQuery, limit: number): Promise<RankedUser[]> {
    this.counted.full += 1;
    let rows: RankedRow[];
    try {
      rows = await this.options.standings.topUsers(
        affiliateId,
        query.start,
        query.end,
        limit,
        query.rankBy ?? "wagered",
      );
    } catch (error) {
      throw new StoreFailure(error);
    }
    return rows.map((row, index) => this.rankedUser(row, index));
  }

  private rankedUser(row: RankedRow, index: number): RankedUser {
    return {
      rank: index + 1,
      userId: row.userExternalId,
      username: row.username,
      avatar: row.avatarUrl === null || row.avatarUrl === "" ? this.options.defaultAvatarUrl : row.avatarUrl,
      totalWagered: canonicalDecimal(row.total),
      weightedWagered: canonicalDecimal(row.weightedTotal),
    };
  }
}

/** Rows held below the shown ones, by default: changes may push that many shown users down before a full computation. */
const DEFAULT_MARGIN = 50;

function heldBoardsFor(options: LeaderboardOptions, nowMs: () => number): HeldBoards | undefined {
  const keyed = options.standings.keyed;
  const settings = options.incremental ?? {};
  if (settings === false || keyed === undefined || options.freshness === undefined || options.cacheTtlMs <= 0) {
    return undefined;
  }
  return new HeldBoards({
    store: keyed,
    shown: MAX_NUM_USERS,
    margin: settings.margin ?? DEFAULT_MARGIN,
    checkEveryMs: (settings.checkEverySeconds ?? 60) * 1000,
    maxBoards: settings.maxBoards ?? 2000,
    // Reading 1,000 changed users cost about a full month board of 20,000 players (npm run bench -- incremental).
    maxPendingUsers: 2000,
    nowMs,
    ...(settings.onMismatch === undefined ? {} : { onMismatch: settings.onMismatch }),
  });
}

function periodOf(affiliateId: number, query: PeriodQuery): FleetPeriod {
  return { affiliateId, start: query.start, end: query.end, rankBy: query.rankBy ?? "wagered" };
}
