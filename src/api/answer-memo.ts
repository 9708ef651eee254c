/**
 * What a skin made from one cached answer (REST's rendered bytes, RPC's response message), kept
 * so a cache hit does not make it again. Keyed by the answer's cache key (new whenever the answer
 * is reloaded) and the list length; bounded, the oldest entries go first; entries never expire
 * (a reloaded answer has a new key). Values are never mutated.
 */
import { ExpiringCache } from "../expiring-cache.js";

export class AnswerMemo<T> {
  private readonly made: ExpiringCache<{ readonly expiresAt: number; readonly value: T }>;

  constructor(maxEntries = 2_000) {
    this.made = new ExpiringCache({ maxEntries, now: () => 0 });
  }

  get(cacheKey: string, numUsers: number, make: () => T): T {
    const key = `${cacheKey}:${numUsers}`;
    const known = this.made.fresh(key);
    if (known !== undefined) return known.value;
    const value = make();
    this.made.set(key, { expiresAt: Number.POSITIVE_INFINITY, value });
    return value;
  }
}
