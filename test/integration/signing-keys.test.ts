/**
 * Signing keys (issue 36 item 1): Ed25519 keys in the database, sealed at rest with the webhook secrets' box,
 * published as a JWK Set on the public port (no key) and over SigningKeyService; every instance signs with
 * the one active key and follows an activation without a restart; retired keys stay published.
 * Signatures are checked with jose's own verifier against the JWKS as served, and the signed bytes against
 * a canonical form written out by hand. Each key signs its own kinds (`typ` in the header); the live key is made
 * once for the fleet, sealed under its own name, and published apart (/.well-known/jwks-live.json, `live_keys`),
 * so the results' JWKS refuses what it signs.
 */
import { createHash, createPrivateKey, createPublicKey } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { compactVerify, createLocalJWKSet, type JSONWebKeySet } from "jose";
import type { RowDataPacket } from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { SigningKeyService } from "../../gen/topwagers/v1/signing_pb.js";
import { SecretBox } from "../../src/platform/database/secret-box.js";
import type { ActiveSigningKey } from "../../src/ports/signing.js";
import { makeSigningKey } from "../../src/signing/core/keys.js";
import { liveKeyMadeOnce } from "../../src/signing/core/live-key.js";
import { Signer } from "../../src/signing/core/signer.js";
import { mariadbSigningKeys } from "../../src/signing/sql/signing-keys.js";
import { useTestServer } from "../support/server.js";

const SECRET_KEY_HEX = "7f".repeat(32);
const RESULT = "topwagers.race-result.v1";
const server = useTestServer("signing_keys", { ISSUER: "https://casino.example", WEBHOOK_SECRET_KEY: SECRET_KEY_HEX });
const store = () => mariadbSigningKeys(server.database.db.write, new SecretBox(Buffer.from(SECRET_KEY_HEX, "hex")));

/** The public key of `d`, and its RFC 7638 thumbprint, computed here without our key code. */
function expectedJwk(key: ActiveSigningKey) {
  const privateKey = createPrivateKey({ key: { kty: "OKP", crv: "Ed25519", x: key.x, d: key.d }, format: "jwk" });
  const x = createPublicKey(privateKey).export({ format: "jwk" }).x as string;
  const kid = createHash("sha256").update(`{"crv":"Ed25519","kty":"OKP","x":"${x}"}`).digest("base64url");
  return { kty: "OKP", crv: "Ed25519", x, kid, use: "sig", alg: "EdDSA" };
}

async function jwks(): Promise<{ response: Response; body: JSONWebKeySet }> {
  const response = await fetch(`${server.baseUrl}/.well-known/jwks.json`);
  return { response, body: (await response.clone().json()) as JSONWebKeySet };
}

describe("signing keys", () => {
  const made: ActiveSigningKey[] = [];

  it("publishes every key as a JWK Set, without an API key and cacheable, and over SigningKeyService", async () => {
    made.push(await makeSigningKey(), await makeSigningKey());
    await store().insert(made[0] as ActiveSigningKey, 1_764_000_000);
    await store().insert(made[1] as ActiveSigningKey, 1_764_000_001);
    expect(await store().activate(made[0]?.kid as string, 1_764_000_002)).toBe("activated");
    const { response, body } = await jwks();
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/jwk-set+json");
    expect(response.headers.get("cache-control")).toBe("public, max-age=300");
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    expect(body).toEqual({ keys: made.map(expectedJwk) });
    const client = createClient(
      SigningKeyService,
      createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" }),
    );
    const answer = await client.getSigningKeys({});
    expect(answer.issuer).toBe("https://casino.example");
    expect(answer.keys.map((k) => [k.kid, k.x, k.kty, k.crv, k.use, k.alg, k.state, k.createdAt])).toEqual([
      [made[0]?.kid, made[0]?.x, "OKP", "Ed25519", "sig", "EdDSA", "active", 1_764_000_000n],
      [made[1]?.kid, made[1]?.x, "OKP", "Ed25519", "sig", "EdDSA", "new", 1_764_000_001n],
    ]);
  });

  it("signs canonical JSON with the active key, the issuer and the kind's typ, verifiable with the published JWKS", async () => {
    const signer = new Signer(store(), { issuer: "https://casino.example", refreshMs: 0 });
    const signed = await signer.sign({ zeta: "ü", type: RESULT, alpha: [2, 1], mid: { b: "1.5", a: null } });
    expect(signed?.kid).toBe(made[0]?.kid);
    const verified = await compactVerify(signed?.jws as string, createLocalJWKSet((await jwks()).body));
    expect(verified.protectedHeader).toEqual({ alg: "EdDSA", kid: made[0]?.kid, typ: "race-result+jws" });
    expect(new TextDecoder().decode(verified.payload)).toBe(
      '{"alpha":[2,1],"iss":"https://casino.example","mid":{"a":null,"b":"1.5"},"type":"topwagers.race-result.v1","zeta":"ü"}',
    );
    expect(signer.signatures).toBe(1);
    // The result key signs nothing else: a live version, a board, an object that names no kind.
    for (const type of ["topwagers.live-race.v1", "topwagers.live-board.v1", "topwagers.race", undefined]) {
      await expect(signer.sign({ type, n: 1 })).rejects.toThrow(
        `the result key does not sign a payload of type ${JSON.stringify(type)}`,
      );
    }
    expect(signer.signatures).toBe(1);
  });

  it("follows an activation on every instance without a restart; the retired key stays published and verifies", async () => {
    const [first, second] = made as [ActiveSigningKey, ActiveSigningKey];
    let clock = 0;
    const instanceA = new Signer(store(), { issuer: "i", refreshMs: 1_000, now: () => clock });
    const instanceB = new Signer(store(), { issuer: "i", refreshMs: 1_000, now: () => clock });
    const before = await instanceA.sign({ type: RESULT, n: 1 });
    expect([before?.kid, (await instanceB.sign({ type: RESULT, n: 2 }))?.kid]).toEqual([first.kid, first.kid]);
    expect(await store().activate(second.kid, 1_764_000_100)).toBe("activated");
    clock += 1_000;
    const after = [await instanceA.sign({ type: RESULT, n: 3 }), await instanceB.sign({ type: RESULT, n: 4 })];
    expect(after.map((s) => s?.kid)).toEqual([second.kid, second.kid]);
    expect((await store().list()).map((k) => [k.kid, k.state])).toEqual([
      [first.kid, "retired"],
      [second.kid, "active"],
    ]);
    await new Promise((resolve) => setTimeout(resolve, 5_100)); // the JWKS is read again at most every 5 s
    const set = createLocalJWKSet((await jwks()).body);
    for (const signed of [before, ...after]) {
      expect((await compactVerify(signed?.jws as string, set)).protectedHeader.kid).toBe(signed?.kid);
    }
    expect(await store().activate(first.kid, 1_764_000_200)).toBe("retired");
    expect(await store().retire(second.kid, 1_764_000_200)).toBe("active");
    expect(await store().retire("nope", 1_764_000_200)).toBe("not_found");
  });

  it("keeps the private key sealed at rest and out of every answer and metric", async () => {
    const [rows] = await server.database.db.read.query<RowDataPacket[]>(
      "SELECT kid, private_sealed FROM signing_keys ORDER BY created_at",
    );
    for (const [index, row] of rows.entries()) {
      const sealed = Buffer.from(row.private_sealed).toString("utf8");
      expect(sealed.startsWith("enc1:")).toBe(true);
      expect(sealed).not.toContain(made[index]?.d);
    }
    const answers = [
      await (await jwks()).response.text(),
      JSON.stringify(await store().list()),
      await server.app.metrics.registry.metrics(),
    ];
    for (const key of made) {
      for (const answer of answers) {
        expect(answer).not.toContain(key.d);
        expect(answer).not.toContain(Buffer.from(key.d, "base64url").toString("hex"));
      }
    }
  });
});

describe("the live key", () => {
  const liveStore = () =>
    mariadbSigningKeys(server.database.db.write, new SecretBox(Buffer.from(SECRET_KEY_HEX, "hex")), "live");
  const liveRows = async () =>
    (
      await server.database.db.read.query<RowDataPacket[]>("SELECT kid, active, private_sealed FROM live_signing_keys")
    )[0];

  it("is not made while the deployment does not sign", async () => {
    const off = liveKeyMadeOnce(liveStore(), { signingOn: async () => false });
    expect(await off.active()).toBeUndefined();
    expect(await liveRows()).toEqual([]);
  });

  it("is made and activated once for the fleet, whichever of 16 signers on two instances asks first", async () => {
    const madeBy: string[] = [];
    const instances = [liveStore(), liveStore()].map((keys) =>
      liveKeyMadeOnce(keys, { signingOn: async () => true, now: () => 1_764_000_300, onMade: (k) => madeBy.push(k) }),
    );
    const got = await Promise.all(Array.from({ length: 16 }, (_, i) => instances[i % 2]?.active()));
    const rows = await liveRows();
    expect(rows.map((row) => [String(row.kid), Number(row.active)])).toEqual([[madeBy[0], 1]]);
    expect(madeBy).toHaveLength(1);
    expect(new Set(got.map((key) => key?.kid))).toEqual(new Set(madeBy));
    // Sealed at rest under its own name: the results' name does not open it.
    const sealed = rows[0]?.private_sealed as Buffer;
    const box = new SecretBox(Buffer.from(SECRET_KEY_HEX, "hex"));
    expect(box.open(`live-signing-key:${madeBy[0]}`, sealed)).toBe(got[0]?.d);
    expect(() => box.open(`signing-key:${madeBy[0]}`, sealed)).toThrow();
  });

  it("signs live kinds only, is published apart from the results' keys, and the results' JWKS refuses its signatures", async () => {
    const live = new Signer(liveKeyMadeOnce(liveStore(), { signingOn: async () => true }), {
      issuer: "https://casino.example",
      purpose: "live",
      refreshMs: 0,
    });
    const [liveKey] = await liveStore().list();
    const race = await live.sign({ type: "topwagers.live-race.v1", raceId: "race_x" });
    const board = await live.sign({ type: "topwagers.live-board.v1", version: "v1" });
    await expect(live.sign({ type: RESULT, raceId: "race_x" })).rejects.toThrow(
      'the live key does not sign a payload of type "topwagers.race-result.v1"',
    );
    const liveSet = await fetch(`${server.baseUrl}/.well-known/jwks-live.json`);
    expect([liveSet.status, liveSet.headers.get("cache-control"), liveSet.headers.get("content-type")]).toEqual([
      200,
      "public, max-age=300",
      "application/jwk-set+json",
    ]);
    const liveBody = (await liveSet.json()) as JSONWebKeySet;
    const liveJwk = { kty: "OKP", crv: "Ed25519", x: liveKey?.x, kid: liveKey?.kid, use: "sig", alg: "EdDSA" };
    expect(liveBody).toEqual({ keys: [liveJwk] });
    const resultSet = (await jwks()).body;
    const resultKids = (await store().list()).map((k) => k.kid);
    expect(resultKids).toHaveLength(2);
    expect(resultSet.keys.map((k) => k.kid)).toEqual(resultKids);
    for (const [signed, typ] of [
      [race, "live-race+jws"],
      [board, "live-board+jws"],
    ] as const) {
      expect(signed?.kid).toBe(liveKey?.kid);
      const verified = await compactVerify(signed?.jws as string, createLocalJWKSet(liveBody));
      expect(verified.protectedHeader).toEqual({ alg: "EdDSA", kid: liveKey?.kid, typ });
      await expect(compactVerify(signed?.jws as string, createLocalJWKSet(resultSet))).rejects.toThrow(
        "no applicable key found in the JSON Web Key Set",
      );
    }
    const client = createClient(
      SigningKeyService,
      createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" }),
    );
    const answer = await client.getSigningKeys({});
    expect(answer.keys.map((k) => k.kid)).toEqual(resultKids);
    expect(answer.liveKeys.map((k) => [k.kid, k.x, k.state, k.createdAt])).toEqual([
      [liveKey?.kid, liveKey?.x, "active", 1_764_000_300n],
    ]);
  });
});
