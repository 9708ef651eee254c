/**
 * Two cache pieces: a bounded map whose entries expire, and loads shared by concurrent callers
 * (single flight). Used by the leaderboard answer cache (boards/core/result-cache.ts) and readiness
 * probes (platform/observability/readiness.ts). Times are milliseconds on the caller's clock.
 */

export interface Expiring {
  /** When the entry stops being fresh (ms, on the cache's clock). */
  readonly expiresAt: number;
}

export interface ExpiringCacheOptions {
  /** At most this many entries; storing one more drops the oldest. */
  readonly maxEntries: number;
  readonly now?: () => number;
  /**
   * Whether reading a fresh entry makes it the newest (least recently used goes first); else the
   * entry stored longest ago goes first.
   */
  readonly refreshOnRead?: boolean;
}

export class ExpiringCache<E extends Expiring> {
  // A Map iterates in insertion order: the first key is the oldest.
  private readonly entries = new Map<string, E>();
  /** The key stored or refreshed last: reading it again changes no order (a hot key is read again and again). */
  private newest: string | undefined;
  private readonly now: () => number;

  constructor(private readonly options: ExpiringCacheOptions) {
    this.now = options.now ?? Date.now;
  }

  /** The entry of `key` while it has not expired. */
  fresh(key: string): E | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined || entry.expiresAt <= this.now()) return undefined;
    if (this.options.refreshOnRead === true && key !== this.newest) {
      this.entries.delete(key);
      this.entries.set(key, entry);
      this.newest = key;
    }
    return entry;
  }

  /** The entry of `key`, expired or not: what was last learned about it. */
  last(key: string): E | undefined {
    return this.entries.get(key);
  }

  /** Stores `entry` as the newest, dropping the oldest entries beyond the bound. */
  set(key: string, entry: E): void {
    this.entries.delete(key);
    this.entries.set(key, entry);
    this.newest = key;
    while (this.entries.size > this.options.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done === true) break;
      this.entries.delete(oldest.value);
    }
  }

  /** Drops every entry for which `drop(key, entry)` holds; returns how many were dropped. */
  deleteWhere(drop: (key: string, entry: E) => boolean): number {
    let dropped = 0;
    for (const [key, entry] of this.entries) {
      if (drop(key, entry)) {
        this.entries.delete(key);
        dropped += 1;
      }
    }
    return dropped;
  }

  get size(): number {
    return this.entries.size;
  }
}

/** Concurrent loads of one key share one promise until it settles. */
export class SingleFlight<V> {
  private readonly running = new Map<string, Promise<V>>();

  /** The load of `key` running now, if any. */
  current(key: string): Promise<V> | undefined {
    return this.running.get(key);
  }

  /** The load of `key` running now, or a new one started with `load`. */
  run(key: string, load: () => Promise<V>): Promise<V> {
    const running = this.running.get(key);
    if (running !== undefined) return running;
    const promise = load();
    this.running.set(key, promise);
    const settled = () => {
      if (this.running.get(key) === promise) this.running.delete(key);
    };
    promise.then(settled, settled);
    return promise;
  }

  /**
   * Lets go of the running loads of the keys for which `forget(key)` holds: they still answer their
   * callers, but `current` no longer returns them and the next `run` starts a new load.
   */
  forget(forget: (key: string) => boolean): void {
    for (const key of this.running.keys()) if (forget(key)) this.running.delete(key);
  }
}

/**
 * Single flight with an age limit: a caller joins the load of its key only if that load started at most `maxAgeMs`
 * ago, else starts a new one (which later callers join). For answers that must not be older than a bound and are
 * never stored.
 */
export class RecentFlights<V> {
  private readonly running = new Map<string, { readonly promise: Promise<V>; readonly startedAt: number }>();

  constructor(
    private readonly maxAgeMs: number,
    private readonly nowMs: () => number = Date.now,
  ) {}

  run(key: string, load: () => Promise<V>): Promise<V> {
    const now = this.nowMs();
    const running = this.running.get(key);
    if (running !== undefined && now - running.startedAt <= this.maxAgeMs) return running.promise;
    const promise = load();
    const flight = { promise, startedAt: now };
    this.running.set(key, flight);
    const settled = () => {
      if (this.running.get(key) === flight) this.running.delete(key);
    };
    promise.then(settled, settled);
    return promise;
  }
}
