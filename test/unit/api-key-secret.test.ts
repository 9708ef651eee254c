/**
 * API key secrets: the stored hash and the key set's map key are SHA-256 of the
 * key text, checked against a digest made outside Node (sha256sum); the key
 * format (prefix, 32 base62 random characters, base62 CRC32 checksum) checked
 * against a CRC32 computed here by hand, bit by bit; keys issued before the
 * checksum keep their shape.
 */
import { describe, expect, it } from "vitest";
import {
  apiKeyHashText,
  base62Checksum,
  bearerCredential,
  generateApiKey,
  hashApiKey,
  keyKindOf,
  looksLikeApiKey,
} from "../../src/keys/core/api-key-secret.js";

// printf 'tw_abcdefghijklmnopqrstuvwxyz012345' | sha256sum
const KEY = "tw_abcdefghijklmnopqrstuvwxyz012345";
const KEY_SHA256_HEX = "fddc4cbce5daaad92274d442872a4b166b5cf087763d27d7eecc277b3aaa2c72";
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320), one bit at a time. */
function crc32ByHand(text: string): number {
  let crc = 0xffffffff;
  for (const byte of Buffer.from(text, "utf8")) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

function base62(value: number, width: number): string {
  let out = "";
  let rest = value;
  for (let i = 0; i < width; i++) {
    out = BASE62[rest % 62] + out;
    rest = Math.floor(rest / 62);
  }
  return out;
}

describe("API key secrets", () => {
  it("hashes with SHA-256, as bytes and as a 32-character latin1 string", () => {
    expect(hashApiKey(KEY).toString("hex")).toBe(KEY_SHA256_HEX);
    expect(apiKeyHashText(KEY)).toBe(Buffer.from(KEY_SHA256_HEX, "hex").toString("latin1"));
    expect(apiKeyHashText(KEY)).toHaveLength(32);
  });

  it("the checksum is CRC32 of the prefix and random part, in 6 base62 characters", () => {
    // "123456789" is CRC-32's published check value: 0xCBF43926.
    expect(crc32ByHand("123456789")).toBe(0xcbf43926);
    expect(base62Checksum("123456789")).toBe(base62(0xcbf43926, 6));
    const body = `tw_sk_${"a".repeat(32)}`;
    expect(base62Checksum(body)).toBe(base62(crc32ByHand(body), 6));
  });

  it("generates secret and publishable keys of their shape, with a valid checksum and their hash", () => {
    for (const [kind, prefix] of [
      ["secret", "tw_sk_"],
      ["publishable", "tw_pub_"],
    ] as const) {
      const key = generateApiKey(kind);
      expect(key.secret).toMatch(new RegExp(`^${prefix}[0-9A-Za-z]{38}$`));
      const body = key.secret.slice(0, -6);
      expect(key.secret.slice(-6)).toBe(base62(crc32ByHand(body), 6));
      expect(keyKindOf(key.secret)).toBe(kind);
      expect(key.hash.equals(hashApiKey(key.secret))).toBe(true);
      expect(key.id).toMatch(/^key_[0-9a-f]{16}$/);
    }
    expect(generateApiKey().secret.startsWith("tw_sk_")).toBe(true);
  });

  it("uses every base62 character in the random part", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) for (const c of generateApiKey().secret.slice(6, 38)) seen.add(c);
    expect([...seen].sort().join("")).toBe([...BASE62].sort().join(""));
  });

  it("refuses a string with a wrong checksum or shape without a lookup; keeps accepting legacy keys", () => {
    const key = generateApiKey().secret;
    const last = key.at(-1) === "A" ? "B" : "A";
    const publishable = generateApiKey("publishable").secret;
    // Two neighbouring characters of the random part that differ, swapped (CRC32 catches every such burst).
    let i = 6;
    while (key[i] === key[i + 1]) i++;
    const swapped = `${key.slice(0, i)}${key[i + 1]}${key[i]}${key.slice(i + 2)}`;
    expect([
      keyKindOf(`${key.slice(0, -1)}${last}`), // checksum off by one character
      keyKindOf(swapped),
      keyKindOf(publishable.replace("tw_pub_", "tw_sk__")),
      keyKindOf(`${key}x`),
      keyKindOf("tw_short"),
      keyKindOf(KEY), // legacy: tw_ + 32 base64url
      keyKindOf("tw_abc-efghijklmnopqrstuvwxyz_12345"),
    ]).toEqual([undefined, undefined, undefined, undefined, undefined, "secret", "secret"]);
    expect([looksLikeApiKey(KEY), looksLikeApiKey(`${KEY}x`), looksLikeApiKey(key)]).toEqual([true, false, true]);
  });

  it("reads the Bearer credential in any case, with spaces around it", () => {
    expect([
      bearerCredential(`Bearer ${KEY}`),
      bearerCredential(`  bearer   ${KEY}  `),
      bearerCredential(`Basic ${KEY}`),
      bearerCredential(undefined),
    ]).toEqual([KEY, KEY, undefined, undefined]);
  });

  it("reads exactly one credential after the scheme, on the usual form's short path too", () => {
    expect([
      bearerCredential(`Bearer ${KEY} `),
      bearerCredential(`Bearer\t${KEY}`),
      bearerCredential(`Bearer ${KEY} x`),
      bearerCredential(`Bearer ${KEY}\u00a0x`),
      bearerCredential("Bearer "),
      bearerCredential(`Bearer  ${KEY}`),
    ]).toEqual([KEY, KEY, undefined, undefined, undefined, KEY]);
  });
});
