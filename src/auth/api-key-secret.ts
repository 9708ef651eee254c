/**
 * API key secrets: generated from 192 random bits with a recognisable prefix,
 * shown once, and stored only as their SHA-256 hash.
 */
import { hash, randomBytes, timingSafeEqual } from "node:crypto";

export const KEY_PREFIX = "tw_";
const KEY_PATTERN = /^tw_[A-Za-z0-9_-]{32}$/;

export function generateApiKey(): { id: string; secret: string; hash: Buffer } {
  const secret = `${KEY_PREFIX}${randomBytes(24).toString("base64url")}`;
  return { id: `key_${randomBytes(8).toString("hex")}`, secret, hash: hashApiKey(secret) };
}

export function hashApiKey(secret: string): Buffer {
  return hash("sha256", secret, "buffer");
}

/** The same hash as base64 text (a lookup cache key), made in one call: no Buffer on a cache hit. */
export function apiKeyHashText(secret: string): string {
  return hash("sha256", secret, "base64");
}

/** True when the text has the shape of one of our keys; anything else is refused without a lookup. */
export function looksLikeApiKey(secret: string): boolean {
  return KEY_PATTERN.test(secret);
}

/** Constant-time comparison of two hashes. */
export function sameHash(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The credential in an Authorization header: `Bearer <key>`, scheme in any case,
 * spaces around the key tolerated. Returns undefined when there is none.
 */
export function bearerCredential(authorization: string | null | undefined): string | undefined {
  if (authorization == null) return undefined;
  const match = /^\s*bearer\s+(\S+)\s*$/i.exec(authorization);
  return match?.[1];
}
