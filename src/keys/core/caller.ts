/**
 * Who is calling: the caller an API key resolves to. Keys are resolved by the
 * in-memory key set (key-set.ts), never by a database lookup per call.
 */
import type { Scope } from "../../values/scopes.js";
import type { RankBy } from "../../values/weights.js";
import type { KeyKind } from "./api-key-secret.js";

export interface Caller {
  readonly keyId: string;
  /** Internal key of the affiliate whose wagers this caller may read. */
  readonly affiliateId: number;
  /** The key's own rate limit, or null for the service default. */
  readonly rateLimit: { readonly points: number; readonly windowSeconds: number } | null;
  /** Secret (server side) or publishable (browser-safe, counted per client address). */
  readonly kind: KeyKind;
  /** Exact origins a publishable key may be used from (CORS); empty for a secret key. */
  readonly allowedOrigins: readonly string[];
  /** How this key's boards rank when a request does not say; null: no default (total wagered). */
  readonly defaultRankBy: RankBy | null;
  /** What the key may do (values/scopes.ts); a skin checks the one it needs with keys/gate/scopes.ts requireScope. */
  readonly scopes: readonly Scope[];
}
