/**
 * What one signature and one verification cost (issue 36): a final result of 10 placed entries, as the freeze
 * signs it (src/signing/core/signer.ts: RFC 8785 canonical JSON, compact EdDSA JWS, the key held in memory), and as a
 * verifier checks it (jose's compactVerify against a local JWK Set). Used by the races scenario (bench/races.ts).
 */
import { compactVerify, createLocalJWKSet } from "jose";
import { jwkSet, makeSigningKey } from "../src/signing/core/keys.js";
import { Signer } from "../src/signing/core/signer.js";

/** A payload the size of a 10-entry result. */
function resultLike(i: number): Record<string, unknown> {
  return {
    type: "topwagers.race-result.v1",
    affiliateId: "aff-1",
    raceId: `race_${String(i).padStart(20, "a")}`,
    entries: Array.from({ length: 10 }, (_, rank) => ({
      rank: rank + 1,
      userId: `user-${rank}`,
      username: `player_${rank}`,
      totalWageredDecimal: `${1_000_000 - rank * 1_000}.25`,
      weightedWageredDecimal: `${1_000_000 - rank * 1_000}.25`,
      prize: "100.00",
    })),
    frozenAt: 1_795_000_000 + i,
    chain: { sequence: i + 1, previous: null },
  };
}

/** Microseconds per signature and per verification, over `count` of each (after 200 of each to warm up). */
export async function signAndVerifyCost(count: number): Promise<{ signMicros: number; verifyMicros: number }> {
  const key = await makeSigningKey();
  const store = { active: async () => key };
  const signer = new Signer(store, { issuer: "https://casino.example", refreshMs: 3_600_000 });
  const keys = createLocalJWKSet(
    jwkSet([{ kid: key.kid, x: key.x, state: "active", createdAt: 0, activatedAt: 0, retiredAt: null }]) as never,
  );
  const signed: string[] = [];
  for (let i = 0; i < 200; i++) await compactVerify((await signer.sign(resultLike(i)))?.jws as string, keys);
  let started = performance.now();
  for (let i = 0; i < count; i++) signed.push((await signer.sign(resultLike(i)))?.jws as string);
  const signMicros = ((performance.now() - started) * 1000) / count;
  started = performance.now();
  for (const jws of signed) await compactVerify(jws, keys);
  const verifyMicros = ((performance.now() - started) * 1000) / count;
  return { signMicros, verifyMicros };
}
