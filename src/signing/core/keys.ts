/**
 * Making a signing key, and the JWK Set that publishes every key (RFC 7517): `kty: OKP`, `crv: Ed25519`
 * (RFC 8037), `use: sig`, `alg: EdDSA`. A key's id is its RFC 7638 thumbprint, so anyone holding the
 * public key can check that the id names it.
 */
import { generateKeyPairSync } from "node:crypto";
import { calculateJwkThumbprint } from "jose";
import type { ActiveSigningKey, PublishedSigningKey, SigningKeyStore } from "../../ports/signing.js";

export interface PublicJwk {
  readonly kty: "OKP";
  readonly crv: "Ed25519";
  readonly x: string;
  readonly kid: string;
  readonly use: "sig";
  readonly alg: "EdDSA";
}

/** A new Ed25519 key pair with its private half; store it (sealed), then activate it. */
export async function makeSigningKey(): Promise<ActiveSigningKey> {
  const { privateKey } = generateKeyPairSync("ed25519");
  const jwk = privateKey.export({ format: "jwk" });
  if (jwk.x === undefined || jwk.d === undefined) throw new Error("node:crypto made an Ed25519 key without x or d");
  const kid = await calculateJwkThumbprint({ kty: "OKP", crv: "Ed25519", x: jwk.x }, "sha256");
  return { kid, x: jwk.x, d: jwk.d };
}

/** The published keys, every state included (a retired key still verifies what it signed). */
export function jwkSet(keys: readonly PublishedSigningKey[]): { readonly keys: readonly PublicJwk[] } {
  return {
    keys: keys.map((key) => ({ kty: "OKP", crv: "Ed25519", x: key.x, kid: key.kid, use: "sig", alg: "EdDSA" })),
  };
}

/** Makes and activates a key when none is active (the demo's signing key); the active key's id. */
export async function ensureActiveKey(
  store: Pick<SigningKeyStore, "list" | "insert" | "activate">,
  at: number,
): Promise<string> {
  const active = (await store.list()).find((key) => key.state === "active");
  if (active !== undefined) return active.kid;
  const key = await makeSigningKey();
  await store.insert(key, at);
  await store.activate(key.kid, at);
  return key.kid;
}
