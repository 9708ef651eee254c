/** What key administration (KeyAdmin) and the in-memory key set (KeySet) read and write. */
import type { Scope } from "../values/scopes.js";
import type { RankBy } from "../values/weights.js";

export interface StoredApiKey {
  readonly id: string;
  readonly affiliateId: number;
  readonly affiliateExternalId: string;
  readonly label: string;
  readonly createdAt: number;
  readonly revokedAt: number | null;
  /** Unix seconds from which the key is refused; null: never expires. */
  readonly expiresAt: number | null;
  readonly rateLimit: { readonly points: number; readonly windowSeconds: number } | null;
  /** A browser-safe key, usable only from its allowed origins. */
  readonly publishable: boolean;
  /** Exact origins ("https://board.example.com") of a publishable key; empty for a secret key. */
  readonly allowedOrigins: readonly string[];
  /** How the key's boards rank when a request does not say; null: no default (total wagered). */
  readonly defaultRankBy: RankBy | null;
  /** What the key may do, in catalogue order (values/scopes.ts). */
  readonly scopes: readonly Scope[];
}

/** A key as the in-memory key set holds it: with its hash. */
export interface StoredKeyWithHash extends StoredApiKey {
  readonly hash: Buffer;
}

export interface NewStoredKey {
  readonly id: string;
  readonly hash: Buffer;
  readonly affiliateExternalId: string;
  readonly label: string;
  readonly rateLimit: { points: number; windowSeconds: number } | null;
  /** Unix seconds; must lie in the future. */
  readonly expiresAt?: number | null;
  /**
   * A browser-safe key (tw_pub_…), readable by pages on `allowedOrigins` (CORS); with none, by no
   * other site's page: an overlay-only key (the overlay is served by this service, so needs no CORS).
   */
  readonly publishable?: boolean;
  /** Exact origins such as https://board.example.com; only for a publishable key. */
  readonly allowedOrigins?: readonly string[];
  /** How the key's boards rank when a request does not say (weighted boards for a site that cannot ask). */
  readonly defaultRankBy?: RankBy | null;
  /** What the key may do; absent: every scope its kind may have (values/scopes.ts scopesOfKind). */
  readonly scopes?: readonly Scope[];
}

/**
 * Keys by id, stored only as hashes. Every change is visible to every instance's key set
 * (through the change feed); `insert` creates the affiliate on first sight and stamps the
 * creation time. The boolean answers are false when no key has the id.
 */
export interface ApiKeyStore {
  insert(key: NewStoredKey): Promise<StoredApiKey>;
  findById(id: string): Promise<StoredApiKey | undefined>;
  /** Every key (of one affiliate, by its external id), oldest first, then by id. */
  list(affiliateExternalId?: string): Promise<StoredApiKey[]>;
  /** Revoking twice keeps the first time. */
  revoke(id: string): Promise<boolean>;
  setRateLimit(id: string, rateLimit: { points: number; windowSeconds: number } | null): Promise<boolean>;
  setRankBy(id: string, rankBy: RankBy | null): Promise<boolean>;
  /**
   * A new key with the old one's affiliate, label, limit, kind, origins, default ranking and scopes; the old
   * key expires at `oldExpiresAt` (never later than it already would). Undefined: no such old key.
   */
  rotate(
    oldId: string,
    fresh: { id: string; hash: Buffer },
    oldExpiresAt: number,
  ): Promise<{ old: StoredApiKey; created: StoredApiKey } | undefined>;
  /** Whether any user of this affiliate (external id) is known. */
  affiliateHasUsers(affiliateExternalId: string): Promise<boolean>;
}

/**
 * A key as storage gives it (the fields the key set needs). `scopes` absent: every scope its kind
 * may have.
 */
export type KeyRecord = Pick<
  StoredKeyWithHash,
  | "id"
  | "affiliateId"
  | "hash"
  | "revokedAt"
  | "expiresAt"
  | "rateLimit"
  | "publishable"
  | "allowedOrigins"
  | "defaultRankBy"
> &
  Partial<Pick<StoredKeyWithHash, "scopes">>;

/** Where the key set reads keys from (keys/sql/key-stores.ts on MariaDB). */
export interface KeyStore {
  /** Every key neither revoked nor expired at `nowSeconds`. */
  usable(nowSeconds: number): Promise<readonly KeyRecord[]>;
  /** These keys as they are now; unknown ids are left out. */
  byIds(ids: readonly string[]): Promise<readonly KeyRecord[]>;
}
