/**
 * A small in-process cache of leaderboard answers, per affiliate and period.
 * It holds the top 100 (any smaller list is a slice of it), lets concurrent
 * identical requests share one query (single flight), and bounds its size by
 * dropping the least recently used entries.
 */

export interface CachedValue<T> {
  readonly value: T;
  /** Unix ms after which the value is stale. */
  readonly expiresAt: number;
}

export class ResultCache<T> {
  private readonly entries = new Map<string, CachedValue<T>>();
  private readonly inFlight = new Map<string, Promise<CachedValue<T>>>();
  hits = 0;
  misses = 0;

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
      return pending;
    }
    this.misses += 1;
    const loading = load()
      .then((value) => {
        const entry = { value, expiresAt: this.nowMs() + ttlMs(value) };
        this.entries.delete(key);
        this.entries.set(key, entry);
        while (this.entries.size > this.maxEntries) {
          const oldest = this.entries.keys().next();
          if (oldest.done === true) break;
          this.entries.delete(oldest.value);
        }
        return entry;
      })
      .finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, loading);
    return loading;
  }

  get size(): number {
    return this.entries.size;
  }
}
