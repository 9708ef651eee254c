/**
 * A signing key the operator mounts as a file (SIGNING_KEY_FILE, e.g. a Kubernetes secret) instead of one kept in
 * the database: an Ed25519 private key as a PKCS#8 PEM or a JWK. Every instance then signs with it; its id is its
 * RFC 7638 thumbprint, as for the database's keys, and it is published in the JWK Set beside them (a key made in
 * the database and retired still verifies what it signed). The private half stays in memory only: what this file
 * says about a bad key file never quotes it.
 */
import { createPrivateKey, type JsonWebKey, type KeyObject } from "node:crypto";
import { calculateJwkThumbprint } from "jose";
import type { PublishedSigningKey, SigningKeyStore } from "../../ports/signing.js";

/**
 * The Ed25519 private key in a key file's text (a PKCS#8 PEM, or a JWK with `kty: OKP`, `crv: Ed25519`, `d`),
 * or undefined when it holds none. Never says why: a parser's reason may quote the text, which is the key.
 */
export function signingKeyOfFile(text: string): KeyObject | undefined {
  try {
    const key = text.includes("-----BEGIN ")
      ? createPrivateKey({ key: text, format: "pem" })
      : createPrivateKey({ key: JSON.parse(text) as JsonWebKey, format: "jwk" });
    return key.asymmetricKeyType === "ed25519" ? key : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The store as signing sees it when a key file is set: the file's key is the active key on every instance, and it
 * is listed (so published) beside the database's keys, as active from `at` (Unix seconds). Making, activating and
 * retiring keys still act on the database's keys, which sign again once the file is unset.
 */
export function withKeyFile(store: SigningKeyStore, privateKey: KeyObject, at: number): SigningKeyStore {
  const { x, d } = privateKey.export({ format: "jwk" });
  if (x === undefined || d === undefined) throw new Error("the signing key file's key has no x or d");
  const kid = calculateJwkThumbprint({ kty: "OKP", crv: "Ed25519", x }, "sha256");
  return {
    ...store,
    active: async () => ({ kid: await kid, x, d }),
    list: async () => {
      const [keys, fileKid] = await Promise.all([store.list(), kid]);
      const fileKey: PublishedSigningKey = {
        kid: fileKid,
        x,
        state: "active",
        createdAt: at,
        activatedAt: at,
        retiredAt: null,
      };
      return [...keys.filter((key) => key.kid !== fileKid), fileKey];
    },
  };
}
