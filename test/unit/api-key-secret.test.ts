/**
 * API key secrets: the stored hash and the lookup cache key are SHA-256 of the
 * key text, checked against a digest made outside Node (sha256sum).
 */
import { describe, expect, it } from "vitest";
import {
  apiKeyHashText,
  bearerCredential,
  generateApiKey,
  hashApiKey,
  looksLikeApiKey,
} from "../../src/auth/api-key-secret.js";

// printf 'tw_abcdefghijklmnopqrstuvwxyz012345' | sha256sum
const KEY = "tw_abcdefghijklmnopqrstuvwxyz012345";
const KEY_SHA256_HEX = "fddc4cbce5daaad92274d442872a4b166b5cf087763d27d7eecc277b3aaa2c72";

describe("API key secrets", () => {
  it("hashes with SHA-256, as bytes and as base64 text", () => {
    expect(hashApiKey(KEY).toString("hex")).toBe(KEY_SHA256_HEX);
    expect(apiKeyHashText(KEY)).toBe(Buffer.from(KEY_SHA256_HEX, "hex").toString("base64"));
  });

  it("generates keys of the recognisable shape, with their hash", () => {
    const key = generateApiKey();
    expect(looksLikeApiKey(key.secret)).toBe(true);
    expect(key.hash.equals(hashApiKey(key.secret))).toBe(true);
    expect(key.id).toMatch(/^key_[0-9a-f]{16}$/);
  });

  it("reads the Bearer credential in any case, with spaces around it", () => {
    expect([
      bearerCredential(`Bearer ${KEY}`),
      bearerCredential(`  bearer   ${KEY}  `),
      bearerCredential(`Basic ${KEY}`),
      bearerCredential(undefined),
    ]).toEqual([KEY, KEY, undefined, undefined]);
    expect([looksLikeApiKey(KEY), looksLikeApiKey(`${KEY}x`), looksLikeApiKey("tw_short")]).toEqual([
      true,
      false,
      false,
    ]);
  });
});
