/**
 * Who is calling: an API key from the Authorization header, resolved to its
 * affiliate. Lookups are cached for a short time so the database is asked at
 * most once per key every couple of seconds; that time bounds how long a
 * revoked key keeps working (contract: within 5 s). Unknown keys are cached too,
 * so a flood of bad keys does not reach the database each time.
 */
import type { Pool } from "mysql2/promise";
import { fromDatabase, unauthenticated } from "../errors.js";
import { findApiKeyByHash } from "../storage/api-keys.js";
import { bearerCredential, hashApiKey, looksLikeApiKey, sameHash } from "./api-key-secret.js";

export interface Caller {
  readonly keyId: string;
  /** Internal key of the affiliate whose wagers this caller may read. */
  readonly affiliateId: number;
  /** The key's own rate limit, or null for the service default. */
  readonly rateLimit: { readonly points: number; readonly windowSeconds: number } | null;
}

interface CacheEntry {
  readonly caller: Caller | null;
  readonly expiresAt: number;
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
  private readonly cache = new Map<string, CacheEntry>();
  private readonly inFlight = new Map<string, Promise<Caller | null>>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(
    private readonly pool: Pool,
    options: AuthenticatorOptions = {},
  ) {
    this.ttlMs = options.cacheTtlMs ?? 2_000;
    this.maxEntries = options.maxCachedKeys ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  /** Resolves the caller or throws `unauthenticated`; a database failure throws `unavailable`. */
  async authenticate(authorization: string | null | undefined): Promise<Caller> {
    const secret = bearerCredential(authorization);
    if (secret === undefined || !looksLikeApiKey(secret)) throw unauthenticated();
    const hash = hashApiKey(secret);
    const cacheKey = hash.toString("base64");
    const cached = this.cache.get(cacheKey);
    let caller: Caller | null;
    if (cached !== undefined && cached.expiresAt > this.now()) {
      caller = cached.keyExpiresAt > this.now() ? cached.caller : null;
    } else {
      let pending = this.inFlight.get(cacheKey);
      if (pending === undefined) {
        pending = this.lookUp(hash, cacheKey).finally(() => this.inFlight.delete(cacheKey));
        this.inFlight.set(cacheKey, pending);
      }
      caller = await pending;
    }
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
    const entry = this.cache.get(hashApiKey(secret).toString("base64"));
    const caller = entry !== undefined && entry.keyExpiresAt > this.now() ? (entry.caller ?? undefined) : undefined;
    return {
      fresh: caller !== undefined && (entry?.expiresAt ?? 0) > this.now() ? caller : undefined,
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
    if (this.cache.size >= this.maxEntries) {
      // Map iterates in insertion order: drop the oldest entry.
      const oldest = this.cache.keys().next();
      if (oldest.done !== true) this.cache.delete(oldest.value);
    }
    this.cache.delete(cacheKey);
    this.cache.set(cacheKey, { caller, expiresAt: this.now() + this.ttlMs, keyExpiresAt });
    return caller;
  }

  /** Forgets the cached lookup of one key, by id (after a revocation or rotation; its hash is not known here). */
  forgetKey(keyId: string): void {
    for (const [cacheKey, entry] of this.cache) if (entry.caller?.keyId === keyId) this.cache.delete(cacheKey);
  }
}
