/**
 * Signed final results, chained per affiliate (issue 36 item 2). Races frozen by one instance (its own Races
 * and signer, as a process has) are read from another (a public server on the same database): the result's
 * JWS (`typ` race-result+jws) verifies with that server's JWKS under jose's own verifier; changing any byte of
 * the payload or the signature, the kid, or leaving out the `typ` header, fails; results signed before and after a
 * key rotation, by the retired key and the new one, all verify; the chain (checked here by a few lines independent of the server) finds a removed and a
 * replaced result. GetRace and the race.finalized event carry the same bytes.
 */
import { createHash } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { CompactSign, compactVerify, createLocalJWKSet, generateKeyPair, type JSONWebKeySet } from "jose";
import type { RowDataPacket } from "mysql2/promise";
import { beforeAll, describe, expect, it } from "vitest";
import { RaceService } from "../../gen/topwagers/v1/races_pb.js";
import { SecretBox } from "../../src/platform/database/secret-box.js";
import { makeSigningKey } from "../../src/signing/core/keys.js";
import { Signer } from "../../src/signing/core/signer.js";
import { mariadbSigningKeys } from "../../src/signing/sql/signing-keys.js";
import { bearerConnect } from "../support/calls.js";
import { NOV_1 } from "../support/dates.js";
import { addBoard, affiliateKey, createKey } from "../support/fixtures.js";
import { instanceRaces, ok, subscribeToRaceEvents } from "../support/races.js";
import { useTestServer } from "../support/server.js";

const ISSUER = "https://casino.example";
const server = useTestServer("signed_results", { ISSUER });
const DAY = 86_400;
let now = NOV_1 - 100;
let apiKey = "";
let otherKey = "";
const keys = () => mariadbSigningKeys(server.database.db.write, new SecretBox(undefined));

interface Signed {
  readonly jws: string;
  readonly kid: string;
  readonly sha256: string;
}

/** Instance A: freezes with its own signer; the server (instance B) only answers. */
function instanceA() {
  const signer = new Signer(keys(), { issuer: ISSUER, refreshMs: 0 });
  return instanceRaces(server.database.db, { now: () => now, freeze: "primary", signer });
}

interface RaceAnswer {
  readonly result: { readonly digest: string; readonly frozenAt: number; readonly signed?: Signed };
}

/** GET /races/{id} on the server with the affiliate's key (`key`: another affiliate's). */
async function raceJson(id: string, key = apiKey): Promise<RaceAnswer> {
  const response = await fetch(`${server.baseUrl}/races/${id}`, { headers: { authorization: `Bearer ${key}` } });
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: RaceAnswer }).data;
}

async function jwks(): Promise<JSONWebKeySet> {
  return (await (await fetch(`${server.baseUrl}/.well-known/jwks.json`)).json()) as JSONWebKeySet;
}

const sha256 = (text: string) => createHash("sha256").update(text, "ascii").digest("hex");
const payloadOf = (jws: string) =>
  JSON.parse(Buffer.from(jws.split(".")[1] as string, "base64url").toString("utf8")) as Record<string, unknown>;

/** The chain check docs/verify.md describes: each result names the one before it by the SHA-256 of its JWS. */
function chainProblems(results: readonly string[]): string[] {
  const problems: string[] = [];
  results.forEach((jws, index) => {
    const chain = payloadOf(jws).chain as { sequence: number; previous: { raceId: string; sha256: string } | null };
    const before = results[index - 1];
    if (chain.sequence !== index + 1) problems.push(`result ${index + 1} says it is number ${chain.sequence}`);
    const expected = before === undefined ? null : sha256(before);
    if ((chain.previous?.sha256 ?? null) !== expected)
      problems.push(`result ${index + 1} does not follow the one before`);
  });
  return problems;
}

/** Creates a race of `affiliate` in [start, end] and freezes it on instance A; its id. */
async function frozenRace(affiliateId: number, slug: string, start: number, end: number): Promise<string> {
  const races = instanceA();
  const created = ok(
    await races.create(
      affiliateId,
      {
        slug,
        title: `Race ${slug}`,
        startTimestamp: start,
        endTimestamp: end,
        prizes: ["100.00", "50.00"],
        reviewSeconds: 0,
      },
      [],
      undefined,
      end < now,
    ),
  );
  now = end + 1;
  await races.tick();
  now = end + 2;
  await races.tick();
  return created.race.id;
}

const results: { id: string; signed: Signed }[] = [];
let firstKid = "";
let secondKid = "";

beforeAll(async () => {
  const db = server.database.db;
  await addBoard(db, "sig-aff", [
    ["u1", "alice", "", ["300", NOV_1 + 10], ["1.5", NOV_1 + 3 * DAY]],
    ["u2", "bob", "", ["200.5", NOV_1 + 20]],
  ]);
  await addBoard(db, "other-aff", [["o1", "olga", "", ["5", NOV_1 + 10]]]);
  apiKey = (await createKey(db, "sig-aff")).secret;
  otherKey = (await createKey(db, "other-aff")).secret;
  await subscribeToRaceEvents(db.write, "ep_sig", "sig-aff");
  const first = await makeSigningKey();
  await keys().insert(first, NOV_1);
  await keys().activate(first.kid, NOV_1);
  firstKid = first.kid;
  const affiliate = await affiliateKey(db.read, "sig-aff");
  const ids = [await frozenRace(affiliate, "day-one", NOV_1, NOV_1 + DAY - 1)];
  // A rotation between two freezes: the next results are signed by the new key, the first one's key retires.
  const second = await makeSigningKey();
  await keys().insert(second, NOV_1 + DAY);
  await keys().activate(second.kid, NOV_1 + DAY);
  secondKid = second.kid;
  ids.push(await frozenRace(affiliate, "day-two", NOV_1 + DAY, NOV_1 + 2 * DAY - 1));
  ids.push(await frozenRace(await affiliateKey(db.read, "other-aff"), "other", NOV_1, NOV_1 + 4 * DAY - 1));
  ids.push(await frozenRace(affiliate, "days-3-4", NOV_1 + 2 * DAY, NOV_1 + 4 * DAY - 1));
  for (const [index, id] of ids.entries()) {
    const signed = (await raceJson(id, index === 2 ? otherKey : apiKey)).result.signed;
    if (signed === undefined) throw new Error(`race ${id} has no signed result`);
    results.push({ id, signed });
  }
});

describe("signed final results", () => {
  it("signs every field of the result once at the freeze; another instance's JWKS verifies it", async () => {
    const [first] = results;
    const race = await raceJson(first?.id as string);
    const verified = await compactVerify(first?.signed.jws as string, createLocalJWKSet(await jwks()));
    expect(verified.protectedHeader).toEqual({ alg: "EdDSA", kid: firstKid, typ: "race-result+jws" });
    expect(first?.signed.kid).toBe(firstKid);
    expect(first?.signed.sha256).toBe(sha256(first?.signed.jws as string));
    expect(JSON.parse(new TextDecoder().decode(verified.payload))).toEqual({
      type: "topwagers.race-result.v1",
      iss: ISSUER,
      affiliateId: "sig-aff",
      raceId: first?.id,
      state: "final",
      slug: "day-one",
      title: "Race day-one",
      period: { startsAt: NOV_1, endsAt: NOV_1 + DAY - 1 },
      timeZone: "UTC",
      rankBy: "wagered",
      currency: "USD",
      prizes: ["100.00", "50.00"],
      minWagered: "0",
      entries: [
        {
          rank: 1,
          userId: "u1",
          username: "alice",
          totalWageredDecimal: "300",
          weightedWageredDecimal: "300",
          prize: "100.00",
        },
        {
          rank: 2,
          userId: "u2",
          username: "bob",
          totalWageredDecimal: "200.5",
          weightedWageredDecimal: "200.5",
          prize: "50.00",
        },
      ],
      unallocated: "0.00",
      frozenAt: NOV_1 + DAY,
      digest: race.result.digest,
      chain: { sequence: 1, previous: null },
      // The race's history as recorded before the freeze (created by the admin side at the clock's time then).
      historySummary: {
        changes: 0,
        entries: [{ at: NOV_1 - 100, kind: "created", actor: { kind: "admin", id: "" }, fields: [] }],
        standings: {
          voidedWagers: 0,
          usersAffected: 0,
          ranksMoved: [],
          lateWagers: { wagers: 0, usersAffected: 0, ranksMoved: [] },
        },
      },
    });
    // The same bytes on every answer: REST again, and GetRace.
    expect((await raceJson(first?.id as string)).result.signed).toEqual(first?.signed);
    const rpc = createClient(RaceService, bearerConnect(server.baseUrl, apiKey));
    const answer = await rpc.getRace({ idOrSlug: first?.id as string });
    expect(answer.race?.signedResult).toMatchObject(first?.signed as Signed);
  });

  it("results signed before and after a rotation verify, the retired key's too", async () => {
    const set = createLocalJWKSet(await jwks());
    const kids = [];
    for (const { signed } of results) kids.push((await compactVerify(signed.jws, set)).protectedHeader.kid);
    expect(kids).toEqual([firstKid, secondKid, secondKid, secondKid]);
    expect((await keys().list()).map((k) => k.state)).toEqual(["retired", "active"]);
  });

  it("fails when any byte of the payload or the signature, or the kid, is changed", async () => {
    const set = createLocalJWKSet(await jwks());
    const jws = results[0]?.signed.jws ?? "";
    const [header, payload, signature] = jws.split(".") as [string, string, string];
    const tampered: string[] = [];
    for (const [part, text] of [
      [1, payload],
      [2, signature],
    ] as const) {
      const bytes = Buffer.from(text, "base64url");
      for (let i = 0; i < bytes.length; i += 1) {
        const changed = Buffer.from(bytes);
        changed[i] = (changed[i] as number) ^ 0x01;
        const parts = [header, payload, signature];
        parts[part] = changed.toString("base64url");
        tampered.push(parts.join("."));
      }
    }
    const otherKid = Buffer.from(JSON.stringify({ alg: "EdDSA", kid: secondKid })).toString("base64url");
    // The header as 0.4.0 wrote it (no typ): the header is signed too.
    const untyped = Buffer.from(JSON.stringify({ alg: "EdDSA", kid: firstKid })).toString("base64url");
    tampered.push([otherKid, payload, signature].join("."), [untyped, payload, signature].join("."));
    let accepted = 0;
    for (const jws of tampered)
      accepted += await compactVerify(jws, set).then(
        () => 1,
        () => 0,
      );
    expect([tampered.length > 600, accepted]).toEqual([true, 0]);
  });

  it("chains each affiliate's results; a removed or a replaced result breaks the chain", async () => {
    const own = results.filter((r) => r.id !== results[2]?.id).map((r) => r.signed.jws);
    expect(chainProblems(own)).toEqual([]);
    expect(payloadOf(own[1] as string).chain as object).toEqual({
      sequence: 2,
      previous: { raceId: results[0]?.id, sha256: results[0]?.signed.sha256 },
    });
    expect(payloadOf(results[2]?.signed.jws as string).chain).toEqual({ sequence: 1, previous: null });
    expect(chainProblems([own[0] as string, own[2] as string])).toEqual([
      "result 2 says it is number 3",
      "result 2 does not follow the one before",
    ]);
    // A replacement signed by someone else's key with the same place in the chain: its successor no longer follows.
    const forger = await generateKeyPair("EdDSA");
    const forged = await new CompactSign(
      Buffer.from(JSON.stringify({ ...payloadOf(own[1] as string), title: "Forged" })),
    )
      .setProtectedHeader({ alg: "EdDSA", kid: secondKid })
      .sign(forger.privateKey);
    expect(chainProblems([own[0] as string, forged, own[2] as string])).toEqual([
      "result 3 does not follow the one before",
    ]);
    await expect(compactVerify(forged, createLocalJWKSet(await jwks()))).rejects.toThrow();
  });

  it("the race.finalized event carries the signed result", async () => {
    const [rows] = await server.database.db.read.query<RowDataPacket[]>(
      "SELECT body FROM webhook_events WHERE type = 'race.finalized' ORDER BY id",
    );
    const signedOf = (row: RowDataPacket) =>
      (JSON.parse(Buffer.from(row.body).toString("utf8")).data as { signedResult: Signed }).signedResult;
    expect(rows.map(signedOf)).toEqual(results.filter((r) => r.id !== results[2]?.id).map((r) => r.signed));
  });
});
