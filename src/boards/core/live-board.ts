/**
 * One live board's state: its viewers, its snapshot, and where it stands. A board is first `waiting` (opens wait
 * for its first snapshot), then `live`, and at last `dropped` (no viewers left, a first load that failed, or
 * shutdown). Its loads never overlap: a change while one runs asks for exactly one more afterwards
 * (`loading-then-again`). Three timers at most: the heartbeat, the retry after a failed load, and the period's
 * start. LiveBoards (live-boards.ts) drives the transitions.
 */
import type { RankBy } from "../../values/weights.js";
import type { BoardSnapshot } from "./board-snapshot.js";
import type { ViewerOwner } from "./stream-quota.js";

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

export type EndReason = "slow" | "shutdown" | "revoked";

export type BoardPhase = "waiting" | "live" | "dropped";
export type BoardLoading = "idle" | "loading" | "loading-then-again";
type TimerName = "heartbeat" | "retry" | "start";

export class LiveBoard {
  phase: BoardPhase = "waiting";
  loading: BoardLoading = "idle";
  snapshot: BoardSnapshot | undefined;
  /** Each viewer with who opened it (for the quota). */
  readonly viewers = new Map<Viewer, ViewerOwner>();
  /** Opens waiting for the first snapshot. */
  waiting = 0;
  /** Loads that failed in a row (the retry backs off with it). */
  failures = 0;
  /** Settles with the first load. */
  readonly first: Promise<void>;
  private settleFirst: (error?: unknown) => void = () => undefined;
  private readonly timers = new Map<TimerName, NodeJS.Timeout>();

  constructor(
    readonly id: string,
    readonly board: BoardQuery,
  ) {
    this.first = new Promise<void>((resolve, reject) => {
      this.settleFirst = (error) => (error === undefined ? resolve() : reject(error));
    });
    // Nobody may be waiting when it fails (a viewer that left): never an unhandled rejection.
    this.first.catch(() => undefined);
  }

  /** Whether a load starts now; during a load, one more is asked for instead. */
  startLoad(): boolean {
    if (this.phase === "dropped") return false;
    if (this.loading !== "idle") {
      this.loading = "loading-then-again";
      return false;
    }
    this.clearTimer("retry");
    this.loading = "loading";
    return true;
  }

  /** The load ended: whether one more is due (a change came while it ran). */
  endLoad(): boolean {
    const again = this.loading === "loading-then-again";
    this.loading = "idle";
    return again;
  }

  /** The first snapshot is here: the opens waiting for it go on. */
  goLive(): void {
    this.phase = "live";
    this.settleFirst();
  }

  /** The first load failed: the waiting opens fail as the unary call would, and the board is dropped. */
  failFirst(error: unknown): void {
    this.settleFirst(error);
    this.drop();
  }

  drop(): void {
    this.phase = "dropped";
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  /** Runs `run` after `ms` (replacing that timer if it was set); never keeps the process alive. */
  setTimer(name: TimerName, ms: number, run: () => void): void {
    this.clearTimer(name);
    const timer = setTimeout(run, ms);
    timer.unref();
    this.timers.set(name, timer);
  }

  private clearTimer(name: TimerName): void {
    clearTimeout(this.timers.get(name));
    this.timers.delete(name);
  }
}
