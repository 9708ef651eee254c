/**
 * Live boards: the fan-out behind the streams (SSE and the watch RPC). One board per distinct question that has
 * viewers, however many viewers it has: a change that touches the board recomputes it once (one load in flight,
 * one more pending), and each protocol's bytes are encoded once per snapshot and written to every viewer. A board's
 * own state is a LiveBoard (live-board.ts); the limits of open streams are the StreamQuota (stream-quota.ts). Pure
 * domain: the protocols are viewers behind an interface, the database is the `load` port; see
 * docs/architecture.md.
 */

import type { Scope } from "../../values/scopes.js";
import { BoardSnapshot, boardVersion } from "./board-snapshot.js";
import { type BoardChange, ChangeSet } from "./change-set.js";
import type { RankedUser } from "./leaderboard.js";
import { type BoardQuery, type EndReason, LiveBoard, type Viewer } from "./live-board.js";
import { decrement, increment, type StreamLimits, StreamQuota, type ViewerOwner } from "./stream-quota.js";
import type { WatchedPeriods } from "./watched-periods.js";

export type DisconnectReason = "client" | "limit" | EndReason;

export interface LiveObserver {
  delivered(protocol: string, messages: number): void;
  disconnected(reason: DisconnectReason): void;
  recomputed(): void;
}

export interface LiveBoardsOptions {
  /** The board's answer now, from the database (or a cache the change feed keeps current). */
  load(board: BoardQuery): Promise<readonly RankedUser[]>;
  /** A heartbeat after this long without a board. */
  readonly heartbeatMs: number;
  readonly limits: StreamLimits;
  readonly observer?: LiveObserver;
  /** Told of each board's period while the board lives (the cache keeps watched periods' answers longer). */
  readonly watched?: WatchedPeriods;
  /** Unix ms. */
  readonly nowMs?: () => number;
  /** After a failed recompute the board is tried again after this, doubling up to `maxRetryMs`. */
  readonly retryMs?: number;
  readonly maxRetryMs?: number;
}

/** The hub is shutting down: no new streams. */
export class LiveShutdownError extends Error {
  constructor() {
    super("live boards are shutting down");
    this.name = "LiveShutdownError";
  }
}

/** An open stream; `close()` when the client went away. */
export interface Subscription {
  close(): void;
}

/**
 * A stream served elsewhere (a race's) that holds a slot here: counted with the boards' streams by protocol,
 * and ended like them when its key is revoked, expires or loses the stream's scope.
 */
export interface HeldStream {
  readonly protocol: string;
  end(reason: "revoked"): void;
}

interface HeldSlot {
  readonly owner: ViewerOwner;
  readonly stream: HeldStream;
}

const MAX_TIMER_MS = 2 ** 31 - 1;

export class LiveBoards {
  private readonly boardsById = new Map<string, LiveBoard>();
  private readonly quota: StreamQuota;
  private readonly byProtocol = new Map<string, number>();
  private readonly held = new Set<HeldSlot>();
  private closed = false;
  private readonly nowMs: () => number;
  private readonly retryMs: number;
  private readonly maxRetryMs: number;

  constructor(private readonly options: LiveBoardsOptions) {
    this.quota = new StreamQuota(options.limits);
    this.nowMs = options.nowMs ?? Date.now;
    this.retryMs = options.retryMs ?? 1_000;
    this.maxRetryMs = options.maxRetryMs ?? 10_000;
  }

  /** Distinct boards with viewers (or about to have some). */
  get boards(): number {
    return this.boardsById.size;
  }

  /** Open streams by protocol. */
  streams(): Readonly<Record<string, number>> {
    return Object.fromEntries(this.byProtocol);
  }

  /**
   * Opens a stream once the board has a snapshot: sends it first, unless the viewer already shows
   * `resumeVersion` and it is current. Throws StreamLimitError, LiveShutdownError, or what the
   * first load threw (the board could not be computed).
   */
  async open(
    query: BoardQuery,
    owner: ViewerOwner,
    viewer: Viewer,
    resumeVersion: string | undefined,
  ): Promise<Subscription> {
    if (this.closed) throw new LiveShutdownError();
    this.reserve(owner);
    const board = this.boardFor(query);
    board.waiting += 1;
    try {
      await board.first;
    } catch (error) {
      this.quota.release(owner);
      throw error;
    } finally {
      board.waiting -= 1;
    }
    if (this.closed) {
      this.quota.release(owner);
      throw new LiveShutdownError();
    }
    const snapshot = board.snapshot as BoardSnapshot;
    board.viewers.set(viewer, owner);
    increment(this.byProtocol, viewer.protocol);
    if (snapshot.version !== resumeVersion) {
      if (viewer.board(snapshot)) this.options.observer?.delivered(viewer.protocol, 1);
      else this.endSlow(board, viewer);
    }
    return { close: () => this.detach(board, viewer, "client") };
  }

  /**
   * Holds one stream slot for a stream served elsewhere (a race stream), under the same limits per
   * key, per client address and per instance as the boards' streams, and counts it by protocol; returns
   * its release (once; nothing after `endKeyStreams` ended it). Throws StreamLimitError or LiveShutdownError.
   */
  hold(owner: ViewerOwner, stream: HeldStream): () => void {
    if (this.closed) throw new LiveShutdownError();
    this.reserve(owner);
    const slot: HeldSlot = { owner, stream };
    this.held.add(slot);
    increment(this.byProtocol, stream.protocol);
    return () => this.letGo(slot, "client");
  }

  /** Committed changes: recompute each board they touch (see ChangeSet). */
  applyChanges(changes: Iterable<BoardChange> | ChangeSet): void {
    const changed = changes instanceof ChangeSet ? changes : new ChangeSet(changes);
    if (changed.empty || this.boardsById.size === 0) return;
    for (const board of this.boardsById.values()) {
      const { affiliateId, start, end, numUsers } = board.board;
      const shown = board.snapshot?.ranked ?? [];
      // A board cut at its length may gain a renamed user it does not list (a new name moves a user tied at the cut).
      const renamedAtCut = changed.users.size > 0 && shown.length >= numUsers;
      if (changed.touchesPeriod(affiliateId, start, end) || renamedAtCut || changed.touchesUsers(shown)) {
        this.recompute(board);
      }
    }
  }

  /** Ends every stream at once and refuses new ones. */
  shutdown(): void {
    this.closed = true;
    for (const board of this.boardsById.values()) {
      const viewers = [...board.viewers.keys()];
      board.viewers.clear();
      this.drop(board);
      for (const viewer of viewers) {
        this.options.observer?.disconnected("shutdown");
        viewer.end("shutdown");
      }
    }
    // Held streams are ended by their own hub (the race watch shuts down with the boards).
    this.held.clear();
    this.quota.close();
    this.byProtocol.clear();
  }

  /**
   * Ends every stream of every kind opened with this key (boards' and held ones) that may not go on: all of
   * them when the key is gone (revoked, expired: `scopes` undefined), else those needing a scope it lost.
   */
  endKeyStreams(keyId: string, scopes?: readonly Scope[]): void {
    const ended = (owner: ViewerOwner) => owner.keyId === keyId && !(scopes?.includes(owner.scope) ?? false);
    for (const board of [...this.boardsById.values()]) {
      for (const [viewer, owner] of [...board.viewers]) {
        if (!ended(owner)) continue;
        this.detach(board, viewer, "revoked");
        viewer.end("revoked");
      }
    }
    for (const slot of [...this.held]) {
      if (ended(slot.owner) && this.letGo(slot, "revoked")) slot.stream.end("revoked");
    }
  }

  /** Gives a held stream's slot back (once); false when it was already given back. */
  private letGo(slot: HeldSlot, reason: DisconnectReason): boolean {
    if (!this.held.delete(slot)) return false;
    decrement(this.byProtocol, slot.stream.protocol);
    this.quota.release(slot.owner);
    this.options.observer?.disconnected(reason);
    return true;
  }

  /** A slot of the quota, or the refusal counted as a disconnect by limit. */
  private reserve(owner: ViewerOwner): void {
    try {
      this.quota.reserve(owner);
    } catch (refused) {
      this.options.observer?.disconnected("limit");
      throw refused;
    }
  }

  /** Takes a viewer off its board (once; later calls do nothing) and drops a board left without viewers. */
  private detach(board: LiveBoard, viewer: Viewer, reason: DisconnectReason): void {
    const owner = board.viewers.get(viewer);
    if (owner === undefined) return;
    board.viewers.delete(viewer);
    decrement(this.byProtocol, viewer.protocol);
    this.quota.release(owner);
    this.options.observer?.disconnected(reason);
    if (board.viewers.size === 0 && board.waiting === 0) this.drop(board);
  }

  /** The board of this question, made (and its first load started) when it has none yet. */
  private boardFor(query: BoardQuery): LiveBoard {
    const id = `${query.affiliateId}:${query.start}:${query.end}:${query.numUsers}:${query.rankBy ?? "wagered"}`;
    const existing = this.boardsById.get(id);
    if (existing !== undefined) return existing;
    const board = new LiveBoard(id, query);
    this.boardsById.set(id, board);
    this.options.watched?.add(query);
    this.recompute(board);
    return board;
  }

  private drop(board: LiveBoard): void {
    board.drop();
    if (this.boardsById.get(board.id) !== board) return;
    this.boardsById.delete(board.id);
    this.options.watched?.remove(board.board);
  }

  /** One load in flight per board; changes during it make one more afterwards. */
  private recompute(board: LiveBoard): void {
    if (!board.startLoad()) return;
    this.options.observer?.recomputed();
    this.options.load(board.board).then(
      (ranked) => this.loaded(board, ranked),
      (error: unknown) => this.failed(board, error),
    );
  }

  private loaded(board: LiveBoard, ranked: readonly RankedUser[]): void {
    const again = board.endLoad();
    board.failures = 0;
    if (board.phase === "dropped") return;
    const version = boardVersion(ranked);
    if (board.snapshot?.version !== version) {
      board.snapshot = new BoardSnapshot(ranked, version, Math.floor(this.nowMs() / 1000));
      if (board.phase === "waiting") {
        board.goLive();
        this.scheduleStart(board);
      } else {
        this.broadcast(board, "board");
      }
      this.armHeartbeat(board);
    }
    if (again) this.recompute(board);
  }

  private failed(board: LiveBoard, error: unknown): void {
    board.endLoad();
    if (board.phase === "dropped") return;
    if (board.phase === "waiting") {
      // Nobody has a board yet: the waiting opens fail, and the next open tries again.
      board.failFirst(error);
      this.drop(board);
      return;
    }
    // Streams stay open (heartbeats go on); the board is tried again, sooner if another change comes.
    const delay = Math.min(this.maxRetryMs, this.retryMs * 2 ** board.failures);
    board.failures += 1;
    board.setTimer("retry", delay, () => this.recompute(board));
  }

  /**
   * A period that has not started answers empty (wagers recorded ahead of the clock must not show
   * early), and its start changes the answer without any change: recompute then.
   */
  private scheduleStart(board: LiveBoard): void {
    const wait = board.board.start * 1000 - this.nowMs();
    if (wait <= 0 || wait > MAX_TIMER_MS) return;
    board.setTimer("start", wait + 1_000, () => this.recompute(board));
  }

  private armHeartbeat(board: LiveBoard): void {
    board.setTimer("heartbeat", this.options.heartbeatMs, () => {
      if (board.phase === "dropped") return;
      this.broadcast(board, "heartbeat");
      this.armHeartbeat(board);
    });
  }

  /** Writes the current snapshot (or a heartbeat) to every viewer; viewers that do not drain are ended. */
  private broadcast(board: LiveBoard, kind: "board" | "heartbeat"): void {
    const snapshot = board.snapshot;
    if (snapshot === undefined) return;
    const slow: Viewer[] = [];
    const sent = new Map<string, number>();
    for (const viewer of board.viewers.keys()) {
      const ok = kind === "board" ? viewer.board(snapshot) : viewer.heartbeat(snapshot);
      if (ok) increment(sent, viewer.protocol);
      else slow.push(viewer);
    }
    for (const [protocol, n] of sent) this.options.observer?.delivered(protocol, n);
    for (const viewer of slow) this.endSlow(board, viewer);
  }

  private endSlow(board: LiveBoard, viewer: Viewer): void {
    this.detach(board, viewer, "slow");
    viewer.end("slow");
  }
}
