/**
 * What a skin made from one cached answer (REST's rendered bytes, RPC's response message), kept
 * so a cache hit does not make it again. Keyed by the answer's cache key (new whenever the answer
 * is reloaded) and the list length; bounded, the entry stored longest ago goes first; entries
 * never expire (a reloaded answer has a new key), so this is a plain bounded map, not an
 * ExpiringCache. Values are never mutated.
 */
export class AnswerMemo<T> {
  // A Map iterates in insertion order: the first key is the oldest.
  private readonly made = new Map<string, T>();

  constructor(private readonly maxEntries = 2_000) {}

  get(cacheKey: string, numUsers: number, make: () => T): T {
    const key = `${cacheKey}:${numUsers}`;
    const known = this.made.get(key);
    if (known !== undefined) return known;
    const value = make();
    this.made.set(key, value);
    if (this.made.size > this.maxEntries) {
      const oldest = this.made.keys().next();
      if (oldest.done !== true) this.made.delete(oldest.value);
    }
    return value;
  }
}
