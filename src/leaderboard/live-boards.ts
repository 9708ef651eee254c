/**
 * Live boards: the fan-out behind the streams (SSE and the watch RPC). One
 * entry per distinct board that has viewers, however many viewers it has: a
 * change that touches the board recomputes it once (one load in flight, one
 * pending), and each protocol's bytes are encoded once per snapshot and
 * written to every viewer. Pure domain: the protocols are viewers behind an
 * interface, the database is the `load` port; see docs/architecture.md.
 */

import type { RankBy } from "../values/weights.js";
import { BoardSnapshot, boardVersion } from "./board-snapshot.js";
import { type BoardChange, ChangeSet } from "./change-set.js";
import type { RankedUser } from "./leaderboard.js";

/** One distinct board: whose, which period, how many users, ranked by what (default "wagered"). */
export interface BoardQuery {
  readonly affiliateId: number;
  readonly start: number;
  readonly end: number;
  readonly numUsers: number;
  readonly rankBy?: RankBy;
}

/** How a protocol delivers to one viewer. Each method returns false when the viewer's connection does not drain. */
export interface Viewer {
  /** The protocol, for the counts by protocol ("sse", "grpc", ...). */
  readonly protocol: string;
  board(snapshot: BoardSnapshot): boolean;
  heartbeat(snapshot: BoardSnapshot): boolean;
  /**
   * The hub ends the stream: the server stops, the viewer does not read, or the key that opened it was
   * revoked (or expired).
   */
  end(reason: EndReason): void;
}

/** Who opens a stream, for the limits. */
export interface ViewerOwner {
  readonly keyId: string;
  readonly address: string;
}

export type EndReason = "slow" | "shutdown" | "revoked";
export type DisconnectReason = "client" | "limit" | EndReason;

export interface LiveObserver {
  delivered(protocol: string, messages: number): void;
  disconnected(reason: DisconnectReason): void;
  recomputed(): void;
}

export interface StreamLimits {
  readonly perKey: number;
  readonly perAddress: number;
  /** Streams on this instance. */
  readonly total: number;
}

export interface LiveBoardsOptions {
  /** The board's answer now, from the database (or a cache the change feed keeps current). */
  load(board: BoardQuery): Promise<readonly RankedUser[]>;
  /** A heartbeat after this long without a board. */
  readonly heartbeatMs: number;
  readonly limits: StreamLimits;
  readonly observer?: LiveObserver;
  /** Unix ms. */
  readonly nowMs?: () => number;
  /** After a failed recompute the board is tried again after this, doubling up to `maxRetryMs`. */
  readonly retryMs?: number;
  readonly maxRetryMs?: number;
}

/** A stream refused by a limit: per key, per client address, or this instance's total. */
export class StreamLimitError extends Error {
  constructor(
    readonly scope: "key" | "address" | "instance",
    readonly limit: number,
  ) {
    super(`stream limit per ${scope} (${limit}) reached`);
    this.name = "StreamLimitError";
  }
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

interface Entry {
  readonly id: string;
  readonly board: BoardQuery;
  /** Each viewer with who opened it (for the limits). */
  readonly viewers: Map<Viewer, ViewerOwner>;
  /** Opens waiting for the first snapshot. */
  waiting: number;
  snapshot: BoardSnapshot | undefined;
  /** Settles with the first load. */
  readonly first: Promise<void>;
  settleFirst: ((error?: unknown) => void) | undefined;
  loading: boolean;
  pending: boolean;
  failures: number;
  timer: NodeJS.Timeout | undefined;
  retry: NodeJS.Timeout | undefined;
  startTimer: NodeJS.Timeout | undefined;
  dropped: boolean;
}

const MAX_TIMER_MS = 2 ** 31 - 1;

export class LiveBoards {
  private readonly entries = new Map<string, Entry>();
  private readonly perKey = new Map<string, number>();
  private readonly perAddress = new Map<string, number>();
  private readonly byProtocol = new Map<string, number>();
  private total = 0;
  private closed = false;
  private readonly nowMs: () => number;
  private readonly retryMs: number;
  private readonly maxRetryMs: number;

  constructor(private readonly options: LiveBoardsOptions) {
    this.nowMs = options.nowMs ?? Date.now;
    this.retryMs = options.retryMs ?? 1_000;
    this.maxRetryMs = options.maxRetryMs ?? 10_000;
  }

  /** Distinct boards with viewers (or about to have some). */
  get boards(): number {
    return this.entries.size;
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
    board: BoardQuery,
    owner: ViewerOwner,
    viewer: Viewer,
    resumeVersion: string | undefined,
  ): Promise<Subscription> {
    if (this.closed) throw new LiveShutdownError();
    this.reserve(owner);
    const entry = this.entryFor(board);
    entry.waiting += 1;
    try {
      await entry.first;
    } catch (error) {
      this.release(owner);
      throw error;
    } finally {
      entry.waiting -= 1;
    }
    if (this.closed) {
      this.release(owner);
      throw new LiveShutdownError();
    }
    const snapshot = entry.snapshot as BoardSnapshot;
    entry.viewers.set(viewer, owner);
    this.byProtocol.set(viewer.protocol, (this.byProtocol.get(viewer.protocol) ?? 0) + 1);
    if (snapshot.version !== resumeVersion) {
      if (viewer.board(snapshot)) this.options.observer?.delivered(viewer.protocol, 1);
      else this.endSlow(entry, viewer);
    }
    return { close: () => this.detach(entry, viewer, "client") };
  }

  /**
   * Holds one stream slot for a stream served elsewhere (a race stream), under the same limits per
   * key, per client address and per instance as the boards' streams; returns its release (once).
   * Throws StreamLimitError or LiveShutdownError.
   */
  hold(owner: ViewerOwner): () => void {
    if (this.closed) throw new LiveShutdownError();
    this.reserve(owner);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.release(owner);
    };
  }

  /** Committed changes: recompute each board they touch (see ChangeSet). */
  applyChanges(changes: Iterable<BoardChange> | ChangeSet): void {
    const changed = changes instanceof ChangeSet ? changes : new ChangeSet(changes);
    if (changed.empty || this.entries.size === 0) return;
    for (const entry of this.entries.values()) {
      const { affiliateId, start, end } = entry.board;
      if (changed.touchesPeriod(affiliateId, start, end) || changed.touchesUsers(entry.snapshot?.ranked ?? [])) {
        this.recompute(entry);
      }
    }
  }

  /** Ends every stream at once and refuses new ones. */
  shutdown(): void {
    this.closed = true;
    for (const entry of this.entries.values()) {
      const viewers = [...entry.viewers.keys()];
      entry.viewers.clear();
      this.drop(entry);
      for (const viewer of viewers) {
        this.options.observer?.disconnected("shutdown");
        viewer.end("shutdown");
      }
    }
    this.perKey.clear();
    this.perAddress.clear();
    this.byProtocol.clear();
    this.total = 0;
  }

  /** Ends every stream opened with this key (it was revoked or expired): the viewers may not see more. */
  endKey(keyId: string): void {
    for (const entry of [...this.entries.values()]) {
      for (const [viewer, owner] of [...entry.viewers]) {
        if (owner.keyId !== keyId) continue;
        this.detach(entry, viewer, "revoked");
        viewer.end("revoked");
      }
    }
  }

  private reserve(owner: ViewerOwner): void {
    const { limits } = this.options;
    let refused: StreamLimitError | undefined;
    if (this.total >= limits.total) refused = new StreamLimitError("instance", limits.total);
    else if ((this.perKey.get(owner.keyId) ?? 0) >= limits.perKey) refused = new StreamLimitError("key", limits.perKey);
    else if ((this.perAddress.get(owner.address) ?? 0) >= limits.perAddress) {
      refused = new StreamLimitError("address", limits.perAddress);
    }
    if (refused !== undefined) {
      this.options.observer?.disconnected("limit");
      throw refused;
    }
    this.total += 1;
    this.perKey.set(owner.keyId, (this.perKey.get(owner.keyId) ?? 0) + 1);
    this.perAddress.set(owner.address, (this.perAddress.get(owner.address) ?? 0) + 1);
  }

  private release(owner: ViewerOwner): void {
    if (this.closed) return;
    this.total -= 1;
    decrement(this.perKey, owner.keyId);
    decrement(this.perAddress, owner.address);
  }

  /** Takes a viewer off its board (once; later calls do nothing) and drops a board left without viewers. */
  private detach(entry: Entry, viewer: Viewer, reason: DisconnectReason): void {
    const owner = entry.viewers.get(viewer);
    if (owner === undefined) return;
    entry.viewers.delete(viewer);
    decrement(this.byProtocol, viewer.protocol);
    this.release(owner);
    this.options.observer?.disconnected(reason);
    if (entry.viewers.size === 0 && entry.waiting === 0) this.drop(entry);
  }

  private entryFor(board: BoardQuery): Entry {
    const id = `${board.affiliateId}:${board.start}:${board.end}:${board.numUsers}:${board.rankBy ?? "wagered"}`;
    const existing = this.entries.get(id);
    if (existing !== undefined) return existing;
    let settleFirst: Entry["settleFirst"];
    const first = new Promise<void>((resolve, reject) => {
      settleFirst = (error) => (error === undefined ? resolve() : reject(error));
    });
    const entry: Entry = {
      id,
      board,
      viewers: new Map(),
      waiting: 0,
      snapshot: undefined,
      first,
      settleFirst,
      loading: false,
      pending: false,
      failures: 0,
      timer: undefined,
      retry: undefined,
      startTimer: undefined,
      dropped: false,
    };
    // Nobody may be waiting when it fails (a viewer that left): never an unhandled rejection.
    first.catch(() => undefined);
    this.entries.set(id, entry);
    this.recompute(entry);
    return entry;
  }

  private drop(entry: Entry): void {
    entry.dropped = true;
    clearTimeout(entry.timer);
    clearTimeout(entry.retry);
    clearTimeout(entry.startTimer);
    if (this.entries.get(entry.id) === entry) this.entries.delete(entry.id);
  }

  /** One load in flight per board; changes during it make one more afterwards. */
  private recompute(entry: Entry): void {
    if (entry.dropped) return;
    if (entry.loading) {
      entry.pending = true;
      return;
    }
    clearTimeout(entry.retry);
    entry.retry = undefined;
    entry.loading = true;
    this.options.observer?.recomputed();
    this.options.load(entry.board).then(
      (ranked) => this.loaded(entry, ranked),
      (error: unknown) => this.failed(entry, error),
    );
  }

  private loaded(entry: Entry, ranked: readonly RankedUser[]): void {
    entry.loading = false;
    entry.failures = 0;
    if (entry.dropped) return;
    const version = boardVersion(ranked);
    if (entry.snapshot?.version !== version) {
      entry.snapshot = new BoardSnapshot(ranked, version, Math.floor(this.nowMs() / 1000));
      if (entry.settleFirst !== undefined) {
        entry.settleFirst();
        entry.settleFirst = undefined;
        this.scheduleStart(entry);
      } else {
        this.broadcast(entry, "board");
      }
      this.armHeartbeat(entry);
    }
    if (entry.pending) {
      entry.pending = false;
      this.recompute(entry);
    }
  }

  private failed(entry: Entry, error: unknown): void {
    entry.loading = false;
    if (entry.dropped) return;
    if (entry.settleFirst !== undefined) {
      // Nobody has a board yet: the waiting opens fail as the unary call would, and the next open tries again.
      entry.settleFirst(error);
      entry.settleFirst = undefined;
      this.drop(entry);
      return;
    }
    // Streams stay open (heartbeats go on); the board is tried again, sooner if another change comes.
    entry.pending = false;
    const delay = Math.min(this.maxRetryMs, this.retryMs * 2 ** entry.failures);
    entry.failures += 1;
    entry.retry = setTimeout(() => this.recompute(entry), delay);
    entry.retry.unref();
  }

  /**
   * A period that has not started answers empty (wagers recorded ahead of the clock must not show
   * early), and its start changes the answer without any change: recompute then.
   */
  private scheduleStart(entry: Entry): void {
    const wait = entry.board.start * 1000 - this.nowMs();
    if (wait <= 0 || wait > MAX_TIMER_MS) return;
    entry.startTimer = setTimeout(() => this.recompute(entry), wait + 1_000);
    entry.startTimer.unref();
  }

  private armHeartbeat(entry: Entry): void {
    clearTimeout(entry.timer);
    entry.timer = setTimeout(() => {
      if (entry.dropped) return;
      this.broadcast(entry, "heartbeat");
      this.armHeartbeat(entry);
    }, this.options.heartbeatMs);
    entry.timer.unref();
  }

  /** Writes the current snapshot (or a heartbeat) to every viewer; viewers that do not drain are ended. */
  private broadcast(entry: Entry, kind: "board" | "heartbeat"): void {
    const snapshot = entry.snapshot;
    if (snapshot === undefined) return;
    const slow: Viewer[] = [];
    const sent = new Map<string, number>();
    for (const viewer of entry.viewers.keys()) {
      const ok = kind === "board" ? viewer.board(snapshot) : viewer.heartbeat(snapshot);
      if (ok) sent.set(viewer.protocol, (sent.get(viewer.protocol) ?? 0) + 1);
      else slow.push(viewer);
    }
    for (const [protocol, n] of sent) this.options.observer?.delivered(protocol, n);
    for (const viewer of slow) this.endSlow(entry, viewer);
  }

  private endSlow(entry: Entry, viewer: Viewer): void {
    this.detach(entry, viewer, "slow");
    viewer.end("slow");
  }
}

function decrement(map: Map<string, number>, key: string): void {
  const left = (map.get(key) ?? 0) - 1;
  if (left <= 0) map.delete(key);
  else map.set(key, left);
}
