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

export interface CachedValue<T> {
  readonly value: T;
  /** Unix ms after which the value is stale. */
  readonly expiresAt: number;
  /** Unique per stored value: renderers key their own bytes by it. */
  readonly serial: number;
}

interface Flight<T> {
  readonly promise: Promise<CachedValue<T>>;
  /** Set when the key was dropped while loading: the result must not be stored. */
  dropped: boolean;
}

export class ResultCache<T> {
  private readonly entries = new Map<string, CachedValue<T>>();
  private readonly inFlight = new Map<string, Flight<T>>();
  private serials = 0;
  hits = 0;
  misses = 0;
  /** Entries dropped because their data changed. */
  invalidations = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /**
   * The cached value for `key`, or the result of `load` stored for `ttlMs(value)`
   * milliseconds. A `load` that throws caches nothing.
   */
  async get(key: string, load: () => Promise<T>, ttlMs: (value: T) => number): Promise<CachedValue<T>> {
    const cached = this.entries.get(key);
    if (cached !== undefined && cached.expiresAt > this.nowMs()) {
      // Refresh recency: Map keeps insertion order, so re-insert.
      this.entries.delete(key);
      this.entries.set(key, cached);
      this.hits += 1;
      return cached;
    }
    const pending = this.inFlight.get(key);
    if (pending !== undefined) {
      this.hits += 1;
      return pending.promise;
    }
    this.misses += 1;
    const flight: Flight<T> = {
      dropped: false,
      promise: load().then((value) => {
        this.serials += 1;
        const entry = { value, expiresAt: this.nowMs() + ttlMs(value), serial: this.serials };
        if (flight.dropped) return entry;
        this.entries.delete(key);
        this.entries.set(key, entry);
        while (this.entries.size > this.maxEntries) {
          const oldest = this.entries.keys().next();
          if (oldest.done === true) break;
          this.entries.delete(oldest.value);
        }
        return entry;
      }),
    };
    const settled = () => {
      if (this.inFlight.get(key) === flight) this.inFlight.delete(key);
    };
    flight.promise.then(settled, settled);
    this.inFlight.set(key, flight);
    return flight.promise;
  }

  /**
   * Drops every entry for which `affected(key, value)` holds, and marks running loads of keys for
   * which `affected(key, undefined)` holds so their results are not stored (later requests start
   * a new load).
   */
  drop(affected: (key: string, value: T | undefined) => boolean): void {
    for (const [key, entry] of this.entries) {
      if (affected(key, entry.value)) {
        this.entries.delete(key);
        this.invalidations += 1;
      }
    }
    for (const [key, flight] of this.inFlight) {
      if (affected(key, undefined)) {
        flight.dropped = true;
        this.inFlight.delete(key);
      }
    }
  }

  get size(): number {
    return this.entries.size;
  }
}
