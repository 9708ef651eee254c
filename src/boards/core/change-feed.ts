/**
 * How every instance learns of every committed change within a second, whoever wrote it: polls
 * the change rows written with the data, retries ids missing below the highest seen, and says
 * whether cached answers are fresh. The why (gaps, Galera steps, the freshness rule):
 * docs/architecture.md, "The change feed".
 */
import type { Logger } from "../../platform/logger.js";
import type { ChangeStore, DataChange } from "../../ports/changes.js";

/** Told the change rows each poll read, in id order. */
export type ChangeListener = (changes: readonly DataChange[]) => void;

export interface ChangeFeedOptions {
  /** The first listener; more can follow (`follow`). */
  readonly onChanges?: ChangeListener;
  readonly logger?: Logger;
  /** Poll period. Default 200 ms. */
  readonly intervalMs?: number;
  /** How long an id missing below the highest seen is asked for again. Default 60 s. */
  readonly gapRetryMs?: number;
  /** Caches are served only while the last completed poll started less than this ago. Default 900 ms. */
  readonly freshWithinMs?: number;
  /** Change rows older than this are deleted (by any instance, in bounded batches). Default 1 hour. */
  readonly keepSeconds?: number;
  readonly nowMs?: () => number;
  /** The id step (`@@auto_increment_increment`); read from the database when absent. */
  readonly idStep?: number;
  /** Told whether each poll reached the database (the outage log lines). */
  readonly outcomes?: { answered(): void; failed(error: unknown): void };
}

/** Rows read per query; a longer backlog is read in several queries in one poll. */
const BATCH = 2000;
/** At most this many missing ids are tracked (the oldest are dropped first). */
const MAX_GAPS = 10_000;
/** How far below the highest id at start to look for ids not yet committed. */
const START_LOOKBACK = 500;
const PRUNE_EVERY_MS = 60_000;

export class ChangeFeed {
  private readonly intervalMs: number;
  private readonly gapRetryMs: number;
  private readonly freshWithinMs: number;
  private readonly keepSeconds: number;
  private readonly nowMs: () => number;
  private watermark = 0;
  /** Missing id → when to stop asking for it (ms). */
  private readonly gaps = new Map<number, number>();
  private lastGoodPollStartedAt = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private started = false;
  private begun = false;
  private lastPrune = 0;
  private lastErrorLogged = 0;
  private waiting: (() => void)[] = [];
  private idStep = 1;
  /** Id class (id modulo the step) → when a row of it was last seen (ms). */
  private readonly classesSeen = new Map<number, number>();
  /** Completed polls and change rows applied, for metrics and tests. */
  readonly stats = { polls: 0, changes: 0, failures: 0 };
  private readonly listeners: ChangeListener[] = [];

  constructor(
    /** The change rows (boards/sql/change-store.ts on MariaDB). */
    private readonly store: ChangeStore,
    private readonly options: ChangeFeedOptions,
  ) {
    this.intervalMs = options.intervalMs ?? 200;
    this.gapRetryMs = options.gapRetryMs ?? 60_000;
    this.freshWithinMs = options.freshWithinMs ?? 900;
    this.keepSeconds = options.keepSeconds ?? 3600;
    this.nowMs = options.nowMs ?? Date.now;
    this.lastPrune = this.nowMs();
    if (options.onChanges !== undefined) this.listeners.push(options.onChanges);
  }

  /** Adds a listener of the change rows, told after those added before it. */
  follow(listener: ChangeListener): void {
    this.listeners.push(listener);
  }

  /** Starts polling in the background. Caches stay bypassed until the first poll completes. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.pollSoon();
  }

  /** Whether cached answers may be served now (see the module comment). */
  isCurrent(): boolean {
    return this.lagMs() < this.freshWithinMs;
  }

  /** Ids still asked for because a change with that id may not have committed yet. */
  get pendingGaps(): number {
    return this.gaps.size;
  }

  /** The highest change id applied (0 before the first poll). */
  position(): number {
    return this.watermark;
  }

  /** Whether an id at or below `id` is still awaited (missing below the highest seen; it may commit later). */
  awaitsAtOrBelow(id: number): boolean {
    for (const gap of this.gaps.keys()) if (gap <= id) return true;
    return false;
  }

  /** Milliseconds since the last successful poll started (Infinity before the first). */
  lagMs(): number {
    return this.nowMs() - this.lastGoodPollStartedAt;
  }

  /** Resolves once a poll that started after this call has completed (every change committed before it is applied). */
  caughtUp(): Promise<void> {
    if (!this.started || this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.pollSoon();
    });
  }

  /** Polls as soon as possible (after a local commit, or a wake-up from another instance). */
  pollSoon(): void {
    if (this.stopped || !this.started) return;
    if (this.polling !== undefined) {
      this.again = true;
      return;
    }
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.polling = this.poll().finally(() => {
      this.polling = undefined;
      if (this.stopped) return;
      if (this.again) {
        this.again = false;
        this.pollSoon();
      } else {
        this.timer = setTimeout(() => {
          this.timer = undefined;
          this.pollSoon();
        }, this.intervalMs);
        this.timer.unref();
      }
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const resolve of this.waiting.splice(0)) resolve();
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.polling;
  }

  private async poll(): Promise<void> {
    const startedAt = this.nowMs();
    const waiting = this.waiting;
    this.waiting = [];
    try {
      if (!this.begun) await this.begin();
      for (;;) {
        const now = this.nowMs();
        for (const [id, until] of this.gaps) if (until <= now) this.gaps.delete(id);
        const read = await this.store.readChanges(this.watermark, [...this.gaps.keys()], BATCH);
        this.apply(read.changes, now);
        if (read.rows < BATCH) break;
      }
      this.stats.polls += 1;
      this.lastGoodPollStartedAt = startedAt;
      this.options.outcomes?.answered();
      for (const resolve of waiting) resolve();
      if (startedAt - this.lastPrune >= PRUNE_EVERY_MS) {
        this.lastPrune = startedAt;
        await this.store.prune(this.keepSeconds);
      }
    } catch (error) {
      this.waiting.push(...waiting); // resolved by the next good poll
      this.stats.failures += 1;
      if (!this.stopped) this.options.outcomes?.failed(error);
      if (!this.stopped && startedAt - this.lastErrorLogged > 10_000) {
        this.lastErrorLogged = startedAt;
        this.options.logger?.warn(
          { err: error },
          "change feed poll failed; cached answers are bypassed until it succeeds again",
        );
      }
    }
  }

  /** First poll: start after the newest change, remembering recent ids not committed yet. */
  private async begin(): Promise<void> {
    this.idStep = this.options.idStep ?? (await this.store.idStep());
    const latest = await this.store.latestChangeId();
    const from = Math.max(0, latest - START_LOOKBACK);
    const present = new Set(await this.store.changeIdsBetween(from, latest));
    const now = this.nowMs();
    for (const id of present) this.classesSeen.set(id % this.idStep, now);
    for (let id = from + 1; id <= latest; id++) if (!present.has(id)) this.rememberGap(id, now);
    this.watermark = latest;
    this.begun = true;
  }

  private apply(rows: readonly DataChange[], now: number): void {
    if (rows.length === 0) return;
    for (const row of rows) {
      if (row.id === this.watermark) continue; // another change of the same row
      this.classesSeen.set(row.id % this.idStep, now);
      if (row.id > this.watermark) {
        // An id jump (e.g. auto-increment values lost in a server restart) is bounded by MAX_GAPS.
        for (let id = Math.max(this.watermark + 1, row.id - MAX_GAPS); id < row.id; id++) this.rememberGap(id, now);
        this.watermark = row.id;
      } else {
        this.gaps.delete(row.id);
      }
    }
    while (this.gaps.size > MAX_GAPS) {
      const oldest = this.gaps.keys().next();
      if (oldest.done === true) break;
      this.gaps.delete(oldest.value);
    }
    this.stats.changes += rows.length;
    for (const listener of this.listeners) listener(rows);
  }

  /** Remembers a missing id, unless no node has written ids of its class lately (see the module comment). */
  private rememberGap(id: number, now: number): void {
    if (
      this.idStep > 1 &&
      now - (this.classesSeen.get(id % this.idStep) ?? Number.NEGATIVE_INFINITY) > this.gapRetryMs
    ) {
      return;
    }
    this.gaps.set(id, now + this.gapRetryMs);
  }
}
