/**
 * What a skin made from one cached answer (REST's rendered bytes, RPC's response message), kept
 * so a cache hit does not make it again. Keyed by the cached answer itself (`Standings.memoKey`, a
 * new object whenever the answer is reloaded) and a variant number (the list length, and for REST
 * whether the weighted total is shown): no key text is built or hashed per call. What is kept goes
 * with the cached answer it was made from (a WeakMap), so it needs no bound of its own. Values are
 * never mutated.
 */
export class AnswerMemo<T> {
  private readonly made = new WeakMap<object, Map<number, T>>();

  get(memoKey: object, variant: number, make: () => T): T {
    let variants = this.made.get(memoKey);
    if (variants === undefined) {
      variants = new Map();
      this.made.set(memoKey, variants);
    }
    const known = variants.get(variant);
    if (known !== undefined) return known;
    const value = make();
    variants.set(variant, value);
    return value;
  }
}
