/**
 * SIGNING_KEY_FILE's parsing and its key beside the database's (signing/core/key-file.ts): a PKCS#8 PEM and a JWK give
 * the same key, anything else none; the store signs with the file's key under its RFC 7638 thumbprint (jose's,
 * computed here independently) and lists it after the database's keys, once.
 */
import { generateKeyPairSync } from "node:crypto";
import { calculateJwkThumbprint } from "jose";
import { describe, expect, it } from "vitest";
import type { PublishedSigningKey, SigningKeyStore } from "../../src/ports/signing.js";
import { signingKeyOfFile, withKeyFile } from "../../src/signing/core/key-file.js";

const { privateKey, publicKey } = generateKeyPairSync("ed25519");
const jwk = privateKey.export({ format: "jwk" }) as { x: string; d: string };
const inDatabase: PublishedSigningKey = {
  kid: "db-key",
  x: "AAAA",
  state: "active",
  createdAt: 100,
  activatedAt: 100,
  retiredAt: null,
};
const store: SigningKeyStore = {
  insert: async () => undefined,
  insertActiveUnlessAny: async () => false,
  list: async () => [inDatabase],
  active: async () => ({ kid: "db-key", x: "AAAA", d: "BBBB" }),
  activate: async () => "activated",
  retire: async () => "retired",
};

describe("a signing key file", () => {
  it("holds an Ed25519 private key as a PKCS#8 PEM or a JWK, and nothing else does", () => {
    const pem = privateKey.export({ format: "pem", type: "pkcs8" }).toString();
    expect(signingKeyOfFile(pem)?.export({ format: "jwk" })).toEqual(jwk);
    expect(signingKeyOfFile(JSON.stringify(jwk))?.export({ format: "jwk" })).toEqual(jwk);
    expect(signingKeyOfFile(publicKey.export({ format: "pem", type: "spki" }).toString())).toBeUndefined();
    expect(signingKeyOfFile(JSON.stringify({ ...jwk, d: undefined }))).toBeUndefined();
    const x25519 = generateKeyPairSync("x25519").privateKey;
    expect(signingKeyOfFile(x25519.export({ format: "pem", type: "pkcs8" }).toString())).toBeUndefined();
    expect(signingKeyOfFile("not a key")).toBeUndefined();
    expect(signingKeyOfFile("")).toBeUndefined();
  });

  it("is the active key under its thumbprint, listed after the database's keys and only once", async () => {
    const kid = await calculateJwkThumbprint({ kty: "OKP", crv: "Ed25519", x: jwk.x }, "sha256");
    const withFile = withKeyFile(store, privateKey, 1_000);
    expect(await withFile.active()).toEqual({ kid, x: jwk.x, d: jwk.d });
    const fileKey: PublishedSigningKey = {
      kid,
      x: jwk.x,
      state: "active",
      createdAt: 1_000,
      activatedAt: 1_000,
      retiredAt: null,
    };
    expect(await withFile.list()).toEqual([inDatabase, fileKey]);
    // The same key also in the database: listed once, as the file's.
    const both = withKeyFile(
      { ...store, list: async () => [inDatabase, { ...fileKey, state: "retired" as const }] },
      privateKey,
      1_000,
    );
    expect(await both.list()).toEqual([inDatabase, fileKey]);
  });
});
