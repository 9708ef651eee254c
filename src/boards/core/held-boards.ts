/**
 * Boards held in memory and kept current from the change feed, so that a change costs what it
 * touched, not the board's population: per board (affiliate, period, ranking) the top rows plus a
 * margin below them (held-board.ts says why the list stays exact); the change feed names the users
 * whose wagers changed, and the next load reads only those users' totals (primary-key reads on the
 * rollups) and merges them. A full computation runs on the first load, when the feed cannot name the
 * users (an older writer, a bulk load, too many), when the held rows no longer cover the shown ones,
 * after a failed full load, and every `checkEveryMs` as a check (a difference from the held rows is counted
 * and reported: it would mean a change the feed did not deliver).
 *
 * Loads may overlap (the result cache lets go of a load its key's change overtook): a load commits
 * what it computed only if no other load committed since it began; otherwise the users it read are
 * named again (reading absolute totals again is harmless; losing a changed user is not) and a merge
 * merges them into the list the other load kept, so that its answer lacks no change either.
 */
import type { KeyedRow, KeyedStandings } from "../../ports/standings.js";
import { sameDecimal } from "../../values/decimal.js";
import type { RankBy } from "../../values/weights.js";
import type { ChangeSet } from "./change-set.js";
import { type HeldList, heldFromBoard, mergeChanged } from "./held-board.js";

export interface HeldBoardsOptions {
  readonly store: KeyedStandings;
  /** Rows answered (the result cache's list). */
  readonly shown: number;
  /** Rows held below the shown ones. */
  readonly margin: number;
  /** A held board is computed in full again at least this often. */
  readonly checkEveryMs: number;
  /** Boards held at most (the least recently used is let go). */
  readonly maxBoards: number;
  /** More changed users waiting than this and the board is computed in full. */
  readonly maxPendingUsers: number;
  readonly nowMs: () => number;
  /** Told when a check's full computation differs from the held rows. */
  readonly onMismatch?: (key: string, detail: string) => void;
}

export interface BoardKey {
  readonly key: string;
  readonly affiliateId: number;
  readonly start: number;
  readonly end: number;
  readonly rankBy: RankBy;
}

interface BoardState extends BoardKey {
  list: HeldList | undefined;
  /** Users (internal keys) changed since the list was read. */
  readonly pending: Set<number>;
  /** Users not held (platform ids) whose profile changed since: read too, once their keys are known. */
  readonly renamed: Set<string>;
  needsFull: boolean;
  fullAtMs: number;
  /** Commits so far: a load commits only if none happened since it began. */
  version: number;
  /** Loads running now, and the profile changes seen meanwhile (checked again against what they commit). */
  loads: number;
  readonly profilesDuringLoads: Set<string>;
}

/** Computations by kind: full, incremental (changed users read), unchanged (nothing to read). */
export interface Computations {
  full: number;
  incremental: number;
  unchanged: number;
  mismatches: number;
}

/** Merges of one load, when other loads keep committing first (the last one answers without being kept). */
const MERGE_ATTEMPTS = 3;

/** Platform ids whose internal key is remembered at most (the oldest looked up are forgotten first). */
const MAX_KEYS_REMEMBERED = 10_000;

export class HeldBoards {
  /** Least recently used first. */
  private readonly boards = new Map<string, BoardState>();
  /** Platform id → the lookup of its internal key (renamed users not held). */
  private readonly keys = new Map<string, Promise<ReadonlyMap<string, number>>>();
  private readonly byAffiliate = new Map<number, Set<BoardState>>();
  readonly computations: Computations = { full: 0, incremental: 0, unchanged: 0, mismatches: 0 };

  constructor(private readonly options: HeldBoardsOptions) {}

  get size(): number {
    return this.boards.size;
  }

  /** The board's shown rows, computed as the module comment says. */
  async rows(board: BoardKey): Promise<readonly KeyedRow[]> {
    const state = this.stateOf(board);
    state.loads += 1;
    try {
      return await this.current(state, MERGE_ATTEMPTS);
    } finally {
      state.loads -= 1;
      if (state.loads === 0) state.profilesDuringLoads.clear();
    }
  }

  /** The shown rows now: in full, unchanged, or merged (again, up to `attempts` times, when another load committed first). */
  private async current(state: BoardState, attempts: number): Promise<readonly KeyedRow[]> {
    const list = state.list;
    if (list === undefined || state.needsFull) return this.full(state, false);
    if (this.options.nowMs() - state.fullAtMs >= this.options.checkEveryMs) return this.full(state, true);
    if (state.pending.size === 0 && state.renamed.size === 0) {
      this.computations.unchanged += 1;
      return this.shownOf(list);
    }
    return this.incremental(state, list, attempts);
  }

  /** Notes what committed changes did to the held boards (called with every batch the change feed reads). */
  applyChanges(changes: ChangeSet): void {
    for (const affiliateId of changes.affiliates()) {
      for (const state of this.byAffiliate.get(affiliateId) ?? []) {
        if (state.needsFull || !changes.touchesPeriod(affiliateId, state.start, state.end)) continue;
        const named = changes.changedUsers(affiliateId, state.start, state.end, state.pending);
        if (!named || state.pending.size > this.options.maxPendingUsers) this.markFull(state);
      }
    }
    if (changes.users.size === 0) return;
    for (const state of this.boards.values()) {
      this.profilesChanged(state, changes.users);
      if (state.loads > 0) for (const user of changes.users) state.profilesDuringLoads.add(user);
    }
  }

  /**
   * Marks the boards for which `affected(affiliateId, start, end)` holds to be computed in full at their next load
   * (the retention horizons moved: that computation is refused if the period needs pruned rows).
   */
  recomputeWhere(affected: (affiliateId: number, start: number, end: number) => boolean): void {
    for (const state of this.boards.values()) {
      if (affected(state.affiliateId, state.start, state.end)) this.markFull(state);
    }
  }

  /** `check`: the held rows are believed current, and are compared with the result. */
  private async full(state: BoardState, check: boolean): Promise<readonly KeyedRow[]> {
    const { store, shown, margin } = this.options;
    const version = state.version;
    const before = check && state.pending.size === 0 ? state.list : undefined;
    state.pending.clear();
    state.renamed.clear();
    state.needsFull = false;
    let rows: KeyedRow[];
    try {
      rows = await store.boardWithKeys(state.affiliateId, state.start, state.end, shown + margin, state.rankBy);
    } catch (error) {
      state.needsFull = true;
      throw error;
    }
    this.computations.full += 1;
    const list = heldFromBoard(rows, shown + margin, state.rankBy);
    if (before !== undefined && state.pending.size === 0 && !state.needsFull) this.compare(state, before, list);
    if (this.commit(state, version, list)) state.fullAtMs = this.options.nowMs();
    else state.needsFull = true;
    return this.shownOf(list);
  }

  private async incremental(state: BoardState, base: HeldList, attempts: number): Promise<readonly KeyedRow[]> {
    const version = state.version;
    const changed = [...state.pending];
    const renamed = [...state.renamed];
    state.pending.clear();
    state.renamed.clear();
    let asked = changed;
    let fresh: KeyedRow[];
    try {
      if (renamed.length > 0) asked = [...new Set([...changed, ...(await this.keysOf(renamed))])];
      fresh = await this.options.store.totalsOf(state.affiliateId, state.start, state.end, asked);
    } catch (error) {
      for (const user of changed) state.pending.add(user);
      for (const user of renamed) state.renamed.add(user);
      throw error;
    }
    this.computations.incremental += 1;
    const merged = mergeChanged(base, asked, fresh, state.rankBy, this.options.shown + this.options.margin);
    // Fewer rows known exactly than are shown: only a full computation can tell the rest.
    if (merged.bound !== undefined && merged.entries.length < this.options.shown) return this.full(state, false);
    if (this.commit(state, version, merged)) return this.shownOf(merged);
    // Another load committed first: its list may hold changes this one's base lacks, so merge into it instead.
    for (const user of asked) state.pending.add(user);
    return attempts > 1 ? this.current(state, attempts - 1) : this.shownOf(merged);
  }

  /** Keeps `list` if no other load committed since this one began; false when it was not kept. */
  private commit(state: BoardState, version: number, list: HeldList): boolean {
    if (state.version !== version || this.boards.get(state.key) !== state) return false;
    state.version += 1;
    state.list = list;
    // A profile that changed while this load ran may be one the new list shows as it was.
    if (state.profilesDuringLoads.size > 0) this.profilesChanged(state, state.profilesDuringLoads);
    return true;
  }

  /**
   * Users (platform ids) whose username or avatar changed: a held one is read again (a new name
   * moves it among equal totals); one not held could now rank at or before the bound if its total
   * equals the bound's, so it is read too (by its key, looked up once), unless the list is the whole board.
   */
  private profilesChanged(state: BoardState, users: ReadonlySet<string>): void {
    const list = state.list;
    if (list === undefined) return;
    const held = new Set<string>();
    for (const entry of list.entries) {
      if (!users.has(entry.row.userExternalId)) continue;
      state.pending.add(entry.row.userKey);
      held.add(entry.row.userExternalId);
    }
    if (list.bound === undefined || held.size === users.size) return;
    for (const user of users) if (!held.has(user)) state.renamed.add(user);
    if (state.renamed.size > this.options.maxPendingUsers) this.markFull(state);
  }

  /** Internal keys of these users (a user's key never changes): each looked up once, shared by every board. */
  private async keysOf(users: readonly string[]): Promise<number[]> {
    const missing = users.filter((user) => !this.keys.has(user));
    if (missing.length > 0) {
      const lookup = this.options.store.userKeys(missing);
      // A failed lookup is not remembered: the next load asks again.
      lookup.catch(() => {
        for (const user of missing) if (this.keys.get(user) === lookup) this.keys.delete(user);
      });
      for (const user of missing) this.keys.set(user, lookup);
      while (this.keys.size > MAX_KEYS_REMEMBERED) this.keys.delete(this.keys.keys().next().value as string);
    }
    const found = await Promise.all(users.map(async (user) => (await this.keys.get(user))?.get(user)));
    return found.filter((key): key is number => key !== undefined);
  }

  private markFull(state: BoardState): void {
    state.needsFull = true;
    state.pending.clear();
    state.renamed.clear();
  }

  private compare(state: BoardState, before: HeldList, after: HeldList): void {
    const shown = this.options.shown;
    const was = before.entries.slice(0, shown).map((e) => e.row);
    const now = after.entries.slice(0, shown).map((e) => e.row);
    const differs = was.length !== now.length || was.some((row, i) => !sameRow(row, now[i]));
    if (!differs) return;
    this.computations.mismatches += 1;
    this.options.onMismatch?.(state.key, `held ${was.length} rows, the full computation ${now.length}`);
  }

  private shownOf(list: HeldList): readonly KeyedRow[] {
    const shown = list.entries.length > this.options.shown ? list.entries.slice(0, this.options.shown) : list.entries;
    return shown.map((entry) => entry.row);
  }

  private stateOf(board: BoardKey): BoardState {
    const existing = this.boards.get(board.key);
    if (existing !== undefined) {
      this.boards.delete(board.key);
      this.boards.set(board.key, existing);
      return existing;
    }
    const state: BoardState = {
      ...board,
      list: undefined,
      pending: new Set(),
      renamed: new Set(),
      needsFull: true,
      fullAtMs: 0,
      version: 0,
      loads: 0,
      profilesDuringLoads: new Set(),
    };
    this.boards.set(board.key, state);
    const same = this.byAffiliate.get(board.affiliateId) ?? new Set();
    this.byAffiliate.set(board.affiliateId, same);
    same.add(state);
    this.evict();
    return state;
  }

  private evict(): void {
    for (const [key, state] of this.boards) {
      if (this.boards.size <= this.options.maxBoards) return;
      this.boards.delete(key);
      const same = this.byAffiliate.get(state.affiliateId);
      same?.delete(state);
      if (same?.size === 0) this.byAffiliate.delete(state.affiliateId);
    }
  }
}

function sameRow(a: KeyedRow, b: KeyedRow | undefined): boolean {
  return (
    b !== undefined &&
    a.userKey === b.userKey &&
    a.username === b.username &&
    a.avatarUrl === b.avatarUrl &&
    decimalEqual(a.total, b.total) &&
    decimalEqual(a.weightedTotal, b.weightedTotal)
  );
}

function decimalEqual(a: string, b: string): boolean {
  return a === b || sameDecimal(a, b);
}
