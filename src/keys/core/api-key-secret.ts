/**
 * API key secrets: shown once, stored only as their SHA-256 hash.
 *
 * The format, like GitHub's tokens: a prefix naming the kind, 32 random base62
 * characters (190 bits) and a 6-character base62 CRC32 of everything before it.
 * The prefix lets people and secret scanners recognise a key; the checksum lets
 * them (and this service) reject a random or mistyped string without a lookup.
 *
 *   secret       tw_sk_<32 random><6 checksum>    server side only
 *   publishable  tw_pub_<32 random><6 checksum>   browser-safe (allowed origins)
 *   legacy       tw_<32 base64url>                issued before; secret, accepted forever
 */
import { hash, randomBytes, timingSafeEqual } from "node:crypto";
import { crc32 } from "node:zlib";

export type KeyKind = "secret" | "publishable";

export const SECRET_PREFIX = "tw_sk_";
export const PUBLISHABLE_PREFIX = "tw_pub_";
const RANDOM_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const NEW_PATTERN = /^(tw_sk_|tw_pub_)[0-9A-Za-z]{38}$/;
const LEGACY_PATTERN = /^tw_[A-Za-z0-9_-]{32}$/;

/** `count` uniformly random base62 characters (bytes of 248 and above are dropped, so no character is favoured). */
function randomBase62(count: number): string {
  let out = "";
  while (out.length < count) {
    for (const byte of randomBytes(count + 8)) {
      if (byte < 248 && out.length < count) out += BASE62[byte % 62];
    }
  }
  return out;
}

/** CRC32 of the text as 6 base62 characters, most significant first. */
export function base62Checksum(text: string): string {
  let value = crc32(text);
  let out = "";
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = BASE62[value % 62] + out;
    value = Math.floor(value / 62);
  }
  return out;
}

export function generateApiKey(kind: KeyKind = "secret"): { id: string; secret: string; hash: Buffer } {
  const body = `${kind === "publishable" ? PUBLISHABLE_PREFIX : SECRET_PREFIX}${randomBase62(RANDOM_LENGTH)}`;
  const secret = `${body}${base62Checksum(body)}`;
  return { id: `key_${randomBytes(8).toString("hex")}`, secret, hash: hashApiKey(secret) };
}

/**
 * What the text is by its shape alone: a key of either kind (legacy keys are secret), or undefined
 * when it cannot be one of our keys (wrong shape or checksum), so it is refused without a lookup.
 */
export function keyKindOf(text: string): KeyKind | undefined {
  if (NEW_PATTERN.test(text)) {
    const body = text.slice(0, -CHECKSUM_LENGTH);
    if (base62Checksum(body) !== text.slice(-CHECKSUM_LENGTH)) return undefined;
    return text.startsWith(PUBLISHABLE_PREFIX) ? "publishable" : "secret";
  }
  return LEGACY_PATTERN.test(text) ? "secret" : undefined;
}

/**
 * True when the text is a key of the current format with a right checksum: the only text an unknown
 * key may be looked for with (keys/core/key-catch-up.ts). Keys of the earlier format are no longer issued,
 * so every one of them is held from the start, and an unknown one is refused at once.
 */
export function isIssuableKey(text: string): boolean {
  return NEW_PATTERN.test(text) && base62Checksum(text.slice(0, -CHECKSUM_LENGTH)) === text.slice(-CHECKSUM_LENGTH);
}

/** True when the text has the shape of one of our keys; anything else is refused without a lookup. */
export function looksLikeApiKey(text: string): boolean {
  return keyKindOf(text) !== undefined;
}

export function hashApiKey(secret: string): Buffer {
  return hash("sha256", secret, "buffer");
}

/**
 * The same hash as a 32-character latin1 string, one character per byte: the in-memory key set's
 * map key, made in one call (the smallest string that holds it: 32 bytes, not 44 as base64).
 */
export function apiKeyHashText(secret: string): string {
  return hash("sha256", secret, "binary");
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
  // The usual form, exactly "Bearer <key>", is read without the match array (every call carries one).
  if (authorization.startsWith("Bearer ")) {
    const key = authorization.slice(7);
    if (key !== "" && !WHITESPACE.test(key)) return key;
  }
  return BEARER.exec(authorization)?.[1];
}

const BEARER = /^\s*bearer\s+(\S+)\s*$/i;
const WHITESPACE = /\s/;
