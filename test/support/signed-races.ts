/**
 * A race frozen and signed as an instance does it (its own Races with a signer on the database's active key),
 * for the tests of what reads signed results (the verify page, the docs' offline checks); and a signed answer checked
 * against the server's published keys.
 */
import canonicalize from "canonicalize";
import { compactVerify, createLocalJWKSet, type JSONWebKeySet } from "jose";
import { afterAll, expect } from "vitest";
import type { ActiveSigningKey } from "../../src/ports/signing.js";
import { makeSigningKey } from "../../src/signing/keys.js";
import { Signer } from "../../src/signing/signer.js";
import type { Database } from "../../src/storage/database.js";
import { mariadbSigningKeys } from "../../src/storage/signing-keys.js";
import { WebhookSecretBox } from "../../src/storage/webhook-secrets.js";
import { NOV_1 } from "./dates.js";
import { addBoard, affiliateKey } from "./fixtures.js";
import type { RawHttp1Stream } from "./live.js";
import { instanceRaces, ok } from "./races.js";
import { type TestServer, useTestServer } from "./server.js";

/** Makes and activates a signing key on `db` (no WEBHOOK_SECRET_KEY: stored plain). */
export async function activeSigningKey(db: Database, at = NOV_1): Promise<ActiveSigningKey> {
  const keys = mariadbSigningKeys(db.write, new WebhookSecretBox(undefined));
  const key = await makeSigningKey();
  await keys.insert(key, at);
  await keys.activate(key.kid, at);
  return key;
}

/**
 * Affiliate `affiliate` with alice (300) and bob (200.5) on November 1st, and a one-day race of theirs with
 * prizes 100.00 and 50.00 frozen and signed by `issuer` with the active key; the race's id.
 */
export async function signedRace(db: Database, affiliate: string, issuer: string): Promise<string> {
  await addBoard(db, affiliate, [
    ["u1", "alice", "", ["300", NOV_1 + 10]],
    ["u2", "bob", "", ["200.5", NOV_1 + 20]],
  ]);
  let now = NOV_1 - 100;
  const signer = new Signer(mariadbSigningKeys(db.write, new WebhookSecretBox(undefined)), { issuer, refreshMs: 0 });
  const races = instanceRaces(db, { now: () => now, freeze: "primary", signer });
  const end = NOV_1 + 86_399;
  const created = ok(
    await races.create(await affiliateKey(db.read, affiliate), {
      ...{ slug: "november-first", title: "November 1st race", startTimestamp: NOV_1, endTimestamp: end },
      ...{ prizes: ["100.00", "50.00"], reviewSeconds: 0 },
    }),
  );
  now = end + 1;
  await races.tick();
  return created.race.id;
}

/** A signed answer's `signed` field: the payload as sent, the key id and the detached JWS. */
export interface Signed {
  readonly payload: Record<string, unknown>;
  readonly kid: string;
  readonly jws: string;
}

/**
 * Verifies a detached signature over `payload` with the JWKS the server at `baseUrl` serves (EdDSA, the named key);
 * the payload as the signature covers it.
 */
export async function verifiedWithServedKeys(baseUrl: string, signed: Signed): Promise<unknown> {
  const jwks = (await (await fetch(`${baseUrl}/.well-known/jwks.json`)).json()) as JSONWebKeySet;
  const [header, empty, signature] = signed.jws.split(".");
  expect(empty).toBe("");
  const payload = Buffer.from(canonicalize(signed.payload) as string, "utf8").toString("base64url");
  const result = await compactVerify(`${header}.${payload}.${signature}`, createLocalJWKSet(jwks));
  expect(result.protectedHeader).toEqual({ alg: "EdDSA", kid: signed.kid });
  return JSON.parse(new TextDecoder().decode(result.payload));
}

/** The issuer the signing tests' servers name in what they sign. */
export const ISSUER = "https://casino.example";
/** The WEBHOOK_SECRET_KEY (hex) the signing tests' servers seal their signing keys with. */
const SEALING_KEY_HEX = "6b".repeat(32);

/** A test server that signs as ISSUER, its signing keys sealed with its WEBHOOK_SECRET_KEY, `streams` streams per address. */
export function useSigningServer(label: string, streams: number): TestServer {
  return useTestServer(label, {
    ISSUER,
    WEBHOOK_SECRET_KEY: SEALING_KEY_HEX,
    STREAM_LIMIT_PER_ADDRESS: String(streams),
  });
}

/**
 * A signing server for a file of stream tests: the server (useSigningServer), the raw streams the file opens
 * (destroyed after its tests) and `verified`, a signed answer checked against the keys the server publishes.
 */
export function useSigningStreams(label: string, streamLimit: number) {
  const server = useSigningServer(label, streamLimit);
  const streams: RawHttp1Stream[] = [];
  afterAll(() => {
    for (const stream of streams) stream.socket.destroy();
  });
  const verified = (signed: Signed) => verifiedWithServedKeys(server.baseUrl, signed);
  return { server, streams, verified };
}

/** Makes a signing key on a signing server's database, sealed as it seals them, added at `at`, active from `activeAt`. */
export async function sealedSigningKey(db: Database, at: number, activeAt: number): Promise<ActiveSigningKey> {
  const keys = mariadbSigningKeys(db.write, new WebhookSecretBox(Buffer.from(SEALING_KEY_HEX, "hex")));
  const made = await makeSigningKey();
  await keys.insert(made, at);
  await keys.activate(made.kid, activeAt);
  return made;
}
