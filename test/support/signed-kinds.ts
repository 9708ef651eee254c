/**
 * Every kind of signed object a verifier may be handed (issue 46 part 1), made by a real server for the tests of
 * the documented checks (docs/verify.md's Node, Python and chain scripts; the verify page): two final results of
 * one affiliate (November 1st and 2nd, frozen and signed with the result key), the first as 0.4.0 signed results
 * (no `typ`, no `state`), a live race's event and a live
 * board's answer as the server signs them for viewers (with its live key), each rebuilt as the compact JWS a
 * viewer would post, the same live race event as 0.4.0 signed it (the result key, no `typ`, payload type
 * `topwagers.race`), the first result with its header made `alg: none`, and its payload signed by a key that is
 * not the operator's.
 */
import { createPrivateKey } from "node:crypto";
import canonicalize from "canonicalize";
import { CompactSign, generateKeyPair } from "jose";
import { LEGACY_LIVE_TYPES } from "../../src/ports/signing.js";
import { NOV_1 } from "./dates.js";
import { addBoard, affiliateKey, createKey } from "./fixtures.js";
import { RawHttp1Stream } from "./live.js";
import { ok, raceNamed } from "./races.js";
import { restCall } from "./rest.js";
import type { TestServer } from "./server.js";
import { activeSigningKey, type Signed, signedRace } from "./signed-races.js";

/** A compact JWS and the race it names (undefined for a board). */
export interface SignedObject {
  readonly raceId: string | undefined;
  readonly jws: string;
}

export interface SignedKinds {
  /** The id of the result key (the one key in /.well-known/jwks.json). */
  readonly resultKid: string;
  /** The affiliate's first final result (November 1st: alice 300, prize 100.00; bob 200.5, prize 50.00). */
  readonly result: SignedObject;
  /** The first result as 0.4.0 signed results: the result key, header `{alg, kid}`, no `state` in the payload. */
  readonly oldResult: SignedObject;
  /** Its second (November 2nd: no one placed), chained after the first. */
  readonly next: SignedObject;
  /** A live race's event, signed by the server's live key, rebuilt as a compact JWS. */
  readonly liveRace: SignedObject;
  /** A live board's answer, signed by the server's live key, rebuilt as a compact JWS. */
  readonly liveBoard: SignedObject;
  /** The same live race event as 0.4.0 signed it: the result key, header `{alg, kid}`, type `topwagers.race`. */
  readonly oldLiveRace: SignedObject;
  /** The first result with the header `{"alg":"none",…}` and no signature. */
  readonly algNone: SignedObject;
  /** The first result's payload signed as a result by a key that is not the operator's (kid "not-ours"). */
  readonly foreign: SignedObject;
}

const base64url = (text: string) => Buffer.from(text, "utf8").toString("base64url");

/** A detached live signature (`header..signature` over `payload`) as the compact JWS a viewer could post. */
export function compactOf(signed: Signed): string {
  const [header, , signature] = signed.jws.split(".");
  return `${header}.${base64url(canonicalize(signed.payload) as string)}.${signature}`;
}

/** A result with bob renamed in its payload, signature kept: a byte changed after signing. */
export function tampered(jws: string): string {
  const [header, payload, signature] = jws.split(".") as [string, string, string];
  return [
    header,
    base64url(Buffer.from(payload, "base64url").toString("utf8").replace('"bob"', '"rob"')),
    signature,
  ].join(".");
}

async function signedResultOf(server: TestServer, raceId: string): Promise<SignedObject> {
  const answer = (await (await fetch(`${server.baseUrl}/verify/${raceId}/signed`)).json()) as { jws: string };
  return { raceId, jws: answer.jws };
}

/** The first signed event of the live race `slug`'s stream (signed=true) on `server`. */
async function liveRaceSigned(server: TestServer, slug: string, key: string): Promise<Signed> {
  const stream = new RawHttp1Stream(server.port, `/races/${slug}/stream?signed=true`, {
    authorization: `Bearer ${key}`,
  });
  try {
    const event = await stream.until((reply) => reply.events.find((e) => e.event === "race"), 30_000, "a race event");
    return (JSON.parse(event.data ?? "") as { signed: Signed }).signed;
  } finally {
    stream.close();
  }
}

/** Makes every kind on `server` for `affiliate`, signed as `issuer`, with a result key made active now. */
export async function everyKindSigned(server: TestServer, affiliate: string, issuer: string): Promise<SignedKinds> {
  const db = server.database.db;
  const resultKey = await activeSigningKey(db);
  const result = await signedResultOf(server, await signedRace(db, affiliate, issuer));
  const next = await signedResultOf(server, await signedRace(db, affiliate, issuer, 1));
  // A race of the same affiliate running now, with cy's wager in it.
  const now = Math.floor(Date.now() / 1000);
  await addBoard(db, affiliate, [["u3", "cy", "", ["42.5", now - 60]]]);
  const { secret } = await createKey(db, affiliate);
  const live = ok(
    await server.app.races.create(
      await affiliateKey(db.read, affiliate),
      raceNamed("live-now", "Live now", [now - 3_600, now + 86_400], { prizes: ["10.00"] }),
    ),
  );
  const liveSigned = await liveRaceSigned(server, "live-now", secret);
  const board = await restCall(`${server.baseUrl}/top-affiliate-wagers-by-period`, {
    key: secret,
    body: { startTimestamp: NOV_1, endTimestamp: NOV_1 + 86_399, numUsers: 3, signed: true },
  });
  // What 0.4.0 signed with the result key: header {alg, kid}, the canonical payload with its issuer.
  const asOldRelease = (payload: unknown) =>
    new CompactSign(new TextEncoder().encode(canonicalize(payload) as string))
      .setProtectedHeader({ alg: "EdDSA", kid: resultKey.kid })
      .sign(createPrivateKey({ key: { kty: "OKP", crv: "Ed25519", x: resultKey.x, d: resultKey.d }, format: "jwk" }));
  const oldLive = await asOldRelease({ ...liveSigned.payload, type: LEGACY_LIVE_TYPES.race });
  const [, resultPayload] = result.jws.split(".");
  const { state: _state, ...oldResultPayload } = JSON.parse(
    Buffer.from(resultPayload as string, "base64url").toString(),
  );
  const none = base64url(JSON.stringify({ alg: "none", kid: resultKey.kid, typ: "race-result+jws" }));
  const foreign = await new CompactSign(Buffer.from(resultPayload as string, "base64url"))
    .setProtectedHeader({ alg: "EdDSA", kid: "not-ours", typ: "race-result+jws" })
    .sign((await generateKeyPair("EdDSA")).privateKey);
  return {
    resultKid: resultKey.kid,
    result,
    oldResult: { raceId: result.raceId, jws: await asOldRelease(oldResultPayload) },
    next,
    liveRace: { raceId: live.race.id, jws: compactOf(liveSigned) },
    liveBoard: { raceId: undefined, jws: compactOf((board.json as { signed: Signed }).signed) },
    oldLiveRace: { raceId: live.race.id, jws: oldLive },
    algNone: { raceId: result.raceId, jws: `${none}.${resultPayload}.` },
    foreign: { raceId: result.raceId, jws: foreign },
  };
}
