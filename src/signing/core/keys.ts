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

/**
 * The active key, made and activated when none is active (a server's first start, the bench), once for the fleet:
 * processes that ask together each make one, the store lets one in (`insertActiveUnlessAny`, a unique index), and
 * the others find it. Its id, and whether this call made it (undefined only if the key that went in was retired
 * at once).
 */
export async function ensureActiveKey(
  store: Pick<SigningKeyStore, "list" | "insertActiveUnlessAny">,
  at: number,
): Promise<{ readonly kid: string | undefined; readonly made: boolean }> {
  const activeOf = async () => (await store.list()).find((key) => key.state === "active")?.kid;
  const active = await activeOf();
  if (active !== undefined) return { kid: active, made: false };
  const key = await makeSigningKey();
  if (await store.insertActiveUnlessAny(key, at)) return { kid: key.kid, made: true };
  return { kid: await activeOf(), made: false };
}
