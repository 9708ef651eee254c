/**
 * A small in-process cache of leaderboard answers, per affiliate and period.
 * It holds the top 100 (any smaller list is a slice of it), lets concurrent
 * identical requests share one query (single flight), and bounds its size by
 * dropping the least recently used entries.
 *
 * Entries are dropped early when the data under them changes (`drop`, driven
 * by the change feed). A load that was already running when its key was
 * dropped may have read the data from before the change: its result still
 * answers the requests that were waiting for it, but it is not stored.
 */
import { ExpiringCache, SingleFlight } from "../../values/expiring-cache.js";

export interface CachedValue<T> {
  readonly value: T;
  /** Unix ms after which the value is stale. */
  readonly expiresAt: number;
}

export class ResultCache<T> {
  /** Least recently used first. */
  private readonly entries: ExpiringCache<CachedValue<T>>;
  private readonly loads = new SingleFlight<CachedValue<T>>();
  hits = 0;
  misses = 0;
  /** Entries dropped because their data changed. */
  invalidations = 0;

  constructor(
    maxEntries: number,
    private readonly nowMs: () => number = Date.now,
  ) {
    this.entries = new ExpiringCache({ maxEntries, now: nowMs, refreshOnRead: true });
  }

  /** The cached value for `key` while it is fresh (a hit), else undefined (nothing is counted). */
  peek(key: string): CachedValue<T> | undefined {
    const cached = this.entries.fresh(key);
    if (cached !== undefined) this.hits += 1;
    return cached;
  }

  /**
   * The cached value for `key`, or the result of `load` stored for `ttlMs(value)`
   * milliseconds. A `load` that throws caches nothing.
   */
  async get(key: string, load: () => Promise<T>, ttlMs: (value: T) => number): Promise<CachedValue<T>> {
    const cached = this.entries.fresh(key);
    if (cached !== undefined) {
      this.hits += 1;
      return cached;
    }
    const pending = this.loads.current(key);
    if (pending !== undefined) {
      this.hits += 1;
      return pending;
    }
    this.misses += 1;
    const flight: Promise<CachedValue<T>> = this.loads.run(key, () =>
      load().then((value) => {
        // A new object per load: renderers key what they make of it by its identity (Standings.memoKey).
        const entry = { value, expiresAt: this.nowMs() + ttlMs(value) };
        // Dropped while loading (no longer the current load of its key): answer, but do not store.
        if (this.loads.current(key) === flight) this.entries.set(key, entry);
        return entry;
      }),
    );
    return flight;
  }

  /**
   * Drops every entry for which `affected(key, value)` holds, and lets go of running loads of keys
   * for which `affected(key, undefined)` holds so their results are not stored (later requests
   * start a new load).
   */
  drop(affected: (key: string, value: T | undefined) => boolean): void {
    this.invalidations += this.entries.deleteWhere((key, entry) => affected(key, entry.value));
    this.loads.forget((key) => affected(key, undefined));
  }

  get size(): number {
    return this.entries.size;
  }
}
