/**
 * A race frozen and signed as an instance does it (its own Races with a signer on the database's active key),
 * for the tests of what reads signed results (the verify page, the docs' offline checks); and a signed answer checked
 * against the server's published keys.
 */
import canonicalize from "canonicalize";
import { compactVerify, createLocalJWKSet, type JSONWebKeySet } from "jose";
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, expect } from "vitest";
import type { Database } from "../../src/platform/database/database.js";
import { SecretBox } from "../../src/platform/database/secret-box.js";
import type { ActiveSigningKey } from "../../src/ports/signing.js";
import { makeSigningKey } from "../../src/signing/core/keys.js";
import { Signer } from "../../src/signing/core/signer.js";
import { mariadbSigningKeys } from "../../src/signing/sql/signing-keys.js";
import { NOV_1 } from "./dates.js";
import { addBoard, affiliateKey } from "./fixtures.js";
import type { RawHttp1Stream } from "./live.js";
import { instanceRaces, ok } from "./races.js";
import { type TestServer, useTestServer } from "./server.js";

/** Makes and activates a signing key on `db` (no WEBHOOK_SECRET_KEY: stored plain). */
export async function activeSigningKey(db: Database, at = NOV_1): Promise<ActiveSigningKey> {
  const keys = mariadbSigningKeys(db.write, new SecretBox(undefined));
  const key = await makeSigningKey();
  await keys.insert(key, at);
  await keys.activate(key.kid, at);
  return key;
}

/**
 * Affiliate `affiliate` with alice (300) and bob (200.5) on November 1st, and a one-day race of theirs with
 * prizes 100.00 and 50.00 frozen and signed by `issuer` with the active key; the race's id. With `day` n > 0, the
 * affiliate's race of the (n+1)th day of November instead (made by a call with day 0 before it: no one wagered).
 */
export async function signedRace(db: Database, affiliate: string, issuer: string, day = 0): Promise<string> {
  if (day === 0) {
    await addBoard(db, affiliate, [
      ["u1", "alice", "", ["300", NOV_1 + 10]],
      ["u2", "bob", "", ["200.5", NOV_1 + 20]],
    ]);
  }
  const start = NOV_1 + day * 86_400;
  let now = start - 100;
  const signer = new Signer(mariadbSigningKeys(db.write, new SecretBox(undefined)), { issuer, refreshMs: 0 });
  const races = instanceRaces(db, { now: () => now, freeze: "primary", signer });
  const end = start + 86_399;
  const names =
    day === 0
      ? { slug: "november-first", title: "November 1st race" }
      : { slug: `november-${day + 1}`, title: `November ${day + 1} race` };
  const created = ok(
    await races.create(await affiliateKey(db.read, affiliate), {
      ...{ ...names, startTimestamp: start, endTimestamp: end },
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

/** The JWK Set the server at `baseUrl` serves at `path`. */
async function servedKeys(baseUrl: string, path: "jwks.json" | "jwks-live.json") {
  return createLocalJWKSet((await (await fetch(`${baseUrl}/.well-known/${path}`)).json()) as JSONWebKeySet);
}

/**
 * Verifies a live detached signature over `payload` with the live JWK Set the server at `baseUrl` serves (EdDSA, the
 * named key, the header's `typ` `typ`), after checking that the results' JWK Set refuses it (its key is not there);
 * the payload as the signature covers it.
 */
export async function verifiedWithServedKeys(baseUrl: string, signed: Signed, typ: string): Promise<unknown> {
  const [header, empty, signature] = signed.jws.split(".");
  expect(empty).toBe("");
  const payload = Buffer.from(canonicalize(signed.payload) as string, "utf8").toString("base64url");
  const compact = `${header}.${payload}.${signature}`;
  await expect(compactVerify(compact, await servedKeys(baseUrl, "jwks.json"))).rejects.toThrow(
    "no applicable key found in the JSON Web Key Set",
  );
  const result = await compactVerify(compact, await servedKeys(baseUrl, "jwks-live.json"));
  expect(result.protectedHeader).toEqual({ alg: "EdDSA", kid: signed.kid, typ });
  return JSON.parse(new TextDecoder().decode(result.payload));
}

/** The id of the live key (the one row of live_signing_keys, active), made by the server that signed live. */
export async function liveKid(db: Database): Promise<string> {
  const [rows] = await db.read.query<RowDataPacket[]>("SELECT kid, active FROM live_signing_keys");
  expect(rows.map((row) => Number(row.active))).toEqual([1]);
  return String(rows[0]?.kid);
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
 * (destroyed after its tests) and `verified`, a live signed answer of `typ` checked against the live keys the
 * server publishes (and refused by its results' keys).
 */
export function useSigningStreams(label: string, streamLimit: number, typ: string) {
  const server = useSigningServer(label, streamLimit);
  const streams: RawHttp1Stream[] = [];
  afterAll(() => {
    for (const stream of streams) stream.socket.destroy();
  });
  const verified = (signed: Signed) => verifiedWithServedKeys(server.baseUrl, signed, typ);
  return { server, streams, verified };
}

/** Makes a signing key on a signing server's database, sealed as it seals them, added at `at`, active from `activeAt`. */
export async function sealedSigningKey(db: Database, at: number, activeAt: number): Promise<ActiveSigningKey> {
  const keys = mariadbSigningKeys(db.write, new SecretBox(Buffer.from(SEALING_KEY_HEX, "hex")));
  const made = await makeSigningKey();
  await keys.insert(made, at);
  await keys.activate(made.kid, activeAt);
  return made;
}
