/**
 * Boards held in memory and kept current from the change feed, so that a change costs what it
 * touched, not the board's population: per board (affiliate, period, ranking) the top rows plus a
 * margin below them (held-board.ts says why the list stays exact); the change feed names the users
 * whose wagers changed, and the next load reads only those users' totals (primary-key reads on the
 * rollups) and merges them. A full computation runs on the first load, when the feed cannot name the
 * users (an older writer, a bulk load, too many), when the held rows no longer cover the shown ones,
 * when a user the list does not hold changed profile while the list is not the whole board, after a
 * failed full load, and every `checkEveryMs` as a check (a difference from the held rows is counted
 * and reported: it would mean a change the feed did not deliver).
 *
 * Loads may overlap (the result cache lets go of a load its key's change overtook): a load commits
 * what it computed only if no other load committed since it began; otherwise the users it read are
 * named again (reading absolute totals again is harmless; losing a changed user is not).
 */
import type { KeyedRow, KeyedStandings } from "../ports/standings.js";
import { sameDecimal } from "../values/decimal.js";
import type { RankBy } from "../values/weights.js";
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

export class HeldBoards {
  /** Least recently used first. */
  private readonly boards = new Map<string, BoardState>();
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
      const list = state.list;
      if (list === undefined || state.needsFull) return await this.full(state, false);
      if (this.options.nowMs() - state.fullAtMs >= this.options.checkEveryMs) return await this.full(state, true);
      if (state.pending.size === 0) {
        this.computations.unchanged += 1;
        return this.shownOf(list);
      }
      return await this.incremental(state, list);
    } finally {
      state.loads -= 1;
      if (state.loads === 0) state.profilesDuringLoads.clear();
    }
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

  /** `check`: the held rows are believed current, and are compared with the result. */
  private async full(state: BoardState, check: boolean): Promise<readonly KeyedRow[]> {
    const { store, shown, margin } = this.options;
    const version = state.version;
    const before = check && state.pending.size === 0 ? state.list : undefined;
    state.pending.clear();
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

  private async incremental(state: BoardState, base: HeldList): Promise<readonly KeyedRow[]> {
    const version = state.version;
    const asked = [...state.pending];
    state.pending.clear();
    let fresh: KeyedRow[];
    try {
      fresh = await this.options.store.totalsOf(state.affiliateId, state.start, state.end, asked);
    } catch (error) {
      for (const user of asked) state.pending.add(user);
      throw error;
    }
    this.computations.incremental += 1;
    const merged = mergeChanged(base, asked, fresh, state.rankBy, this.options.shown + this.options.margin);
    // Fewer rows known exactly than are shown: only a full computation can tell the rest.
    if (merged.bound !== undefined && merged.entries.length < this.options.shown) return this.full(state, false);
    if (!this.commit(state, version, merged)) for (const user of asked) state.pending.add(user);
    return this.shownOf(merged);
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
   * moves it among equal totals); one not held could now rank at or before the bound only if its
   * total equals the bound's, which only a full computation can tell, unless the list is the whole board.
   */
  private profilesChanged(state: BoardState, users: ReadonlySet<string>): void {
    const list = state.list;
    if (list === undefined) return;
    let held = 0;
    for (const entry of list.entries) {
      if (!users.has(entry.row.userExternalId)) continue;
      state.pending.add(entry.row.userKey);
      held += 1;
    }
    if (held < users.size && list.bound !== undefined) this.markFull(state);
  }

  private markFull(state: BoardState): void {
    state.needsFull = true;
    state.pending.clear();
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
