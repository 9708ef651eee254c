/**
 * The published signing keys as the JWKS answers serve them: read from the store at most every
 * `maxAgeMs` (default 5 s) whatever the number of callers, so a key made or activated anywhere is
 * published everywhere within that time. Only public halves pass through here.
 */
import type { PublishedSigningKey, SigningKeyStore } from "../../ports/signing.js";

export class PublishedKeys {
  private held: { readonly keys: readonly PublishedSigningKey[]; readonly until: number } | undefined;
  private reading: Promise<readonly PublishedSigningKey[]> | undefined;

  constructor(
    private readonly store: Pick<SigningKeyStore, "list">,
    private readonly options: { readonly issuer: string; readonly maxAgeMs?: number; readonly now?: () => number },
  ) {}

  get issuer(): string {
    return this.options.issuer;
  }

  async keys(): Promise<readonly PublishedSigningKey[]> {
    const now = (this.options.now ?? Date.now)();
    if (this.held !== undefined && now < this.held.until) return this.held.keys;
    this.reading ??= this.store
      .list()
      .then((keys) => {
        this.held = { keys, until: now + (this.options.maxAgeMs ?? 5_000) };
        return keys;
      })
      .finally(() => {
        this.reading = undefined;
      });
    return this.reading;
  }
}
