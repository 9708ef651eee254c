/**
 * Who is calling: an API key from the Authorization header, resolved to its
 * affiliate. Lookups are cached for a short time so the database is asked at
 * most once per key every couple of seconds; that time bounds how long a
 * revoked key keeps working (contract: within 5 s). Unknown keys are cached too,
 * so a flood of bad keys does not reach the database each time.
 */
import type { Pool } from "mysql2/promise";
import { fromDatabase, unauthenticated } from "../errors.js";
import { type Expiring, ExpiringCache, SingleFlight } from "../expiring-cache.js";
import { findApiKeyByHash } from "../storage/api-keys.js";
import { apiKeyHashText, bearerCredential, looksLikeApiKey, sameHash } from "./api-key-secret.js";

export interface Caller {
  readonly keyId: string;
  /** Internal key of the affiliate whose wagers this caller may read. */
  readonly affiliateId: number;
  /** The key's own rate limit, or null for the service default. */
  readonly rateLimit: { readonly points: number; readonly windowSeconds: number } | null;
}

interface CacheEntry extends Expiring {
  readonly caller: Caller | null;
  /** When the key itself expires (ms), enforced on every use, cached or not. */
  readonly keyExpiresAt: number;
}

export interface AuthenticatorOptions {
  /** How long a lookup result is trusted; keep well under 5 s (revocation promise). */
  readonly cacheTtlMs?: number;
  readonly maxCachedKeys?: number;
  readonly now?: () => number;
}

export class Authenticator {
  /** By the key hash (base64); when full, the lookup made longest ago goes first. */
  private readonly cache: ExpiringCache<CacheEntry>;
  private readonly lookups = new SingleFlight<Caller | null>();
  private readonly ttlMs: number;
  private readonly now: () => number;

  constructor(
    private readonly pool: Pool,
    options: AuthenticatorOptions = {},
  ) {
    this.ttlMs = options.cacheTtlMs ?? 2_000;
    this.now = options.now ?? Date.now;
    this.cache = new ExpiringCache({ maxEntries: options.maxCachedKeys ?? 10_000, now: this.now });
  }

  /** Resolves the caller or throws `unauthenticated`; a database failure throws `unavailable`. */
  async authenticate(authorization: string | null | undefined): Promise<Caller> {
    const secret = bearerCredential(authorization);
    if (secret === undefined || !looksLikeApiKey(secret)) throw unauthenticated();
    const cacheKey = apiKeyHashText(secret);
    const cached = this.cache.fresh(cacheKey);
    const caller =
      cached === undefined
        ? await this.lookups.run(cacheKey, () => this.lookUp(Buffer.from(cacheKey, "base64"), cacheKey))
        : cached.keyExpiresAt > this.now()
          ? cached.caller
          : null;
    if (caller === null) throw unauthenticated();
    return caller;
  }

  /**
   * What the cache already knows about this header, without database access:
   * `fresh`, the caller when a still-valid lookup found the key good; `knownValid`,
   * whether the last lookup of this key found it good, however long ago (such a
   * caller is not held back by its address's failed attempts, but is looked up
   * again all the same, so revocation holds).
   */
  cached(authorization: string | null | undefined): { fresh: Caller | undefined; knownValid: boolean } {
    const secret = bearerCredential(authorization);
    if (secret === undefined || !looksLikeApiKey(secret)) return { fresh: undefined, knownValid: false };
    const cacheKey = apiKeyHashText(secret);
    const entry = this.cache.last(cacheKey);
    const caller = entry !== undefined && entry.keyExpiresAt > this.now() ? (entry.caller ?? undefined) : undefined;
    return {
      fresh: caller !== undefined && this.cache.fresh(cacheKey) !== undefined ? caller : undefined,
      knownValid: caller !== undefined,
    };
  }

  private async lookUp(hash: Buffer, cacheKey: string): Promise<Caller | null> {
    let caller: Caller | null = null;
    let keyExpiresAt = Number.POSITIVE_INFINITY;
    try {
      const stored = await findApiKeyByHash(this.pool, hash);
      if (stored !== undefined && stored.revokedAt === null && sameHash(stored.hash, hash)) {
        caller = { keyId: stored.id, affiliateId: stored.affiliateId, rateLimit: stored.rateLimit };
        if (stored.expiresAt !== null) keyExpiresAt = stored.expiresAt * 1000;
      }
    } catch (error) {
      throw fromDatabase(error);
    }
    if (keyExpiresAt <= this.now()) caller = null;
    this.cache.set(cacheKey, { caller, expiresAt: this.now() + this.ttlMs, keyExpiresAt });
    return caller;
  }

  /** Forgets the cached lookup of one key, by id (after a revocation or rotation; its hash is not known here). */
  forgetKey(keyId: string): void {
    this.cache.deleteWhere((_, entry) => entry.caller?.keyId === keyId);
  }
}
