/**
 * Shared by the test/integration/rest-contract-*.test.ts files (the REST contract, docs/contract.md "The one public operation",
 * on a real socket over a real database): the constants, the ways of calling (fetch, node:http,
 * raw sockets, HTTP/2 prior knowledge), the expected envelopes and the test data.
 *
 * Most calls go through `fetch`; `node:http`, `node:http2` and raw sockets are
 * used where fetch cannot say it (no Content-Type, a chunked or lying body,
 * header-name casing, gzip bytes, HTTP/2 prior knowledge).
 */
import http2 from "node:http2";
import { afterAll, beforeAll, expect } from "vitest";
import type { Database } from "../../src/platform/database/database.js";
import { NOV_1, OCT_1, OCT_16 } from "./dates.js";
import { addBoard, addUsers, addWagers, createKey, wager } from "./fixtures.js";
import {
  errorBody,
  type HttpRequestOptions,
  httpRequest,
  type NodeReply,
  OPERATION,
  type RawReply,
  type RestCallOptions,
  type RestReply,
  rawExchange as rawExchangeOn,
  restCall,
} from "./rest.js";
import { startTestServer, type TestServer } from "./server.js";

export const OP = OPERATION;
export const EARLIEST_START = 1733115600; // 2024-12-02T05:00:00Z
/** The server's clock: noon on 1 November 2026 unless a test moves it. */
export const NOW = NOV_1 + 12 * 3600;
export const OCTOBER = { startTimestamp: OCT_1, endTimestamp: NOV_1 - 1 };
export const DEFAULT_AVATAR = "https://cdn.example.test/avatars/default.png";
export const MAX_BODY = 64 * 1024;

export const UNAUTHENTICATED_MESSAGE = "missing or invalid API key (send Authorization Bearer with your key)";
export const WWW_AUTHENTICATE = 'Bearer realm="topwagers"';
export const NOT_FOUND_MESSAGE = `no such path. The operation is POST ${OP}`;
export const TOO_LARGE_MESSAGE = "request body is larger than 65536 bytes";
export const NOT_AN_OBJECT_MESSAGE =
  "request body must be a JSON object with startTimestamp, endTimestamp and numUsers";
export const EMPTY_BODY_MESSAGE =
  "request body is empty. Send a JSON object with startTimestamp, endTimestamp and numUsers";
export const END_BEFORE_START_MESSAGE =
  "endTimestamp must not be before startTimestamp (both are inclusive. Equal means one second)";

/** The server of this test file, set by startRestContractServer; the calls below default to it. */
let server: TestServer;
/** The affiliates' keys, filled in by startRestContractServer. */
export const keys = {
  rank: "",
  sum: "",
  affA: "",
  affB: "",
  live: "",
  empty: "",
  pad: "",
};

export interface Entry {
  readonly username: string;
  readonly avatar: string;
  readonly totalWagered: number;
}

/** One call with fetch to this file's server (or `baseUrl`); see restCall. */
export function call(path: string, options: RestCallOptions & { baseUrl?: string } = {}): Promise<RestReply> {
  const { baseUrl = server.baseUrl, ...rest } = options;
  return restCall(`${baseUrl}${path}`, rest);
}

/** httpRequest to this file's server unless given another port. */
export function nodeRequest(options: HttpRequestOptions & { port?: number }): Promise<NodeReply> {
  return httpRequest(options.port ?? server.port, options);
}

/** rawExchange with this file's server unless given another port. */
export function rawExchange(request: string, port = server.port): Promise<RawReply> {
  return rawExchangeOn(request, port);
}

/** POST to the operation with a key and a JSON body. */
export function top(key: string | null, body: unknown, headers: Record<string, string> = {}): Promise<RestReply> {
  return call(OP, { key, body, headers });
}

/** The data of a 200 answer, checking the envelope on the way. */
export async function entries(key: string, body: unknown): Promise<Entry[]> {
  const reply = await top(key, body);
  expect(reply.status).toBe(200);
  const json = reply.json as { data: Entry[]; errors: null };
  expect(Object.keys(json)).toEqual(["data", "errors"]);
  expect(json.errors).toBeNull();
  for (const entry of json.data) expect(Object.keys(entry)).toEqual(["username", "avatar", "totalWagered"]);
  return json.data;
}

/** The answer to an unauthenticated call: exact body and headers, and no rate-limit headers. */
export function expectUnauthenticated(reply: RestReply): void {
  expect(reply.status).toBe(401);
  expect(reply.json).toEqual(errorBody({ code: "unauthenticated", message: UNAUTHENTICATED_MESSAGE }));
  expect(reply.headers["www-authenticate"]).toBe(WWW_AUTHENTICATE);
  expect(reply.headers["content-type"]).toBe("application/json; charset=utf-8");
  expect(reply.headers.ratelimit).toBeUndefined();
  expect(reply.headers["ratelimit-policy"]).toBeUndefined();
}

/** One POST over HTTP/2 cleartext with prior knowledge (no upgrade), on its own session. */
export async function h2Request(
  headers: Record<string, string>,
  body: string,
  path = OP,
): Promise<{ status: number; headers: http2.IncomingHttpHeaders; body: string }> {
  const session = http2.connect(server.baseUrl);
  try {
    return await new Promise((resolve, reject) => {
      session.on("error", reject);
      const stream = session.request({ ":method": "POST", ":path": path, ...headers });
      let head: http2.IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      stream.on("response", (h) => {
        head = h;
      });
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () =>
        resolve({ status: Number(head[":status"]), headers: head, body: Buffer.concat(chunks).toString("utf8") }),
      );
      stream.on("error", reject);
      stream.end(body);
    });
  } finally {
    await new Promise<void>((resolve) => session.close(() => resolve()));
  }
}

// ---- test data -------------------------------------------------------------

export const img = (name: string) => `https://img.example.test/${name}.png`;

/** aff-rank, October, in the contract's order. Ties at 100 are ordered by username code points, then user id. */
export const OCTOBER_RANKING: Entry[] = [
  { username: "big", avatar: img("big"), totalWagered: 1000.5 },
  { username: "whale", avatar: img("whale"), totalWagered: 500 },
  { username: "Zed", avatar: img("zed"), totalWagered: 100 },
  { username: "alice", avatar: img("alice"), totalWagered: 100 },
  { username: "twin", avatar: img("twin-B"), totalWagered: 100 }, // user id "rank-B"
  { username: "twin", avatar: img("twin-a"), totalWagered: 100 }, // user id "rank-a"
  { username: "zebra", avatar: DEFAULT_AVATAR, totalWagered: 100 },
  { username: "éclair", avatar: img("eclair"), totalWagered: 100 }, // U+00E9
  { username: "\uE000x", avatar: img("private-use"), totalWagered: 100 }, // U+E000
  { username: "😀", avatar: img("emoji"), totalWagered: 100 }, // U+1F600, a surrogate pair in UTF-16
  { username: "small", avatar: img("small"), totalWagered: 99.99999999 },
];

/** Deterministic amounts with 8 fraction digits, and their exact sum in units of 10^-8. */
function manyAmounts(count: number): { amounts: string[]; totalUnits: bigint } {
  let state = 20261122;
  const next = (modulus: number) => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state % modulus;
  };
  const amounts: string[] = [];
  let totalUnits = 0n;
  for (let i = 0; i < count; i += 1) {
    const whole = next(1_000_000);
    const fraction = 1 + next(99_999_999);
    totalUnits += BigInt(whole) * 100_000_000n + BigInt(fraction);
    amounts.push(`${whole}.${String(fraction).padStart(8, "0")}`);
  }
  return { amounts, totalUnits };
}

/** Canonical decimal text of a count of 10^-8 units: no trailing zeros, no trailing point. */
export function renderUnits(units: bigint): string {
  const whole = units / 100_000_000n;
  const fraction = String(units % 100_000_000n)
    .padStart(8, "0")
    .replace(/0+$/, "");
  return fraction === "" ? String(whole) : `${whole}.${fraction}`;
}

export const MANY = manyAmounts(2000);

/**
 * The data of a test with a server of its own: a key of `affiliateId`, whose board holds one user (avatar
 * img(username)) with one wager of `amount` on 16 October. Returns the key.
 */
export async function oneWagerBoard(
  db: Database,
  affiliateId: string,
  userId: string,
  username: string,
  amount: string,
): Promise<string> {
  const key = (await createKey(db, affiliateId)).secret;
  await addBoard(db, affiliateId, [[userId, username, img(username), [amount, OCT_16]]]);
  return key;
}

/**
 * Starts this test file's server and data before its tests and closes them after; returns the
 * server (for tests that add keys of their own).
 */
export function useRestContractServer(now?: () => number): () => TestServer {
  beforeAll(async () => {
    await startRestContractServer(now);
  });
  afterAll(async () => {
    await server?.close();
  });
  return () => server;
}

/**
 * The contract's server and data: one throwaway database and server per test file, as the single
 * file had. `now` is the server's clock (NOW unless a test moves it).
 */
export async function startRestContractServer(now: () => number = () => NOW): Promise<TestServer> {
  server = await startTestServer(
    "rest_contract",
    { CACHE_TTL_MS: "0", DEFAULT_AVATAR_URL: DEFAULT_AVATAR },
    // Many calls in the rest-contract files fail authentication on purpose; the per-address brake on bad keys
    // (not part of the REST contract) is set out of their way.
    { now, failedAuthPolicy: { points: 10_000, windowSeconds: 60 } },
  );
  const db = server.database.db;
  keys.rank = (await createKey(db, "aff-rank")).secret;
  keys.sum = (await createKey(db, "aff-sum")).secret;
  keys.affA = (await createKey(db, "aff-a")).secret;
  keys.affB = (await createKey(db, "aff-b")).secret;
  keys.live = (await createKey(db, "aff-live")).secret;
  keys.empty = (await createKey(db, "aff-empty")).secret;
  keys.pad = (await createKey(db, "aff-pad")).secret;

  // Inserted in an order unlike the expected one, so insertion order or
  // internal ids cannot produce the right answer by accident.
  await addBoard(db, "aff-rank", [
    // below 100 as a number, above it as text
    ["r-small", "small", img("small"), ["99.99999999", OCT_16], ["1000", NOV_1]],
    ["r-emoji", "😀", img("emoji"), ["100", OCT_16]],
    ["r-private", "\uE000x", img("private-use"), ["100", OCT_16]],
    ["r-eclair", "éclair", img("eclair"), ["100", OCT_16]],
    ["r-zebra", "zebra", "", ["99.5", OCT_16], ["0.5", OCT_16 + 60]],
    ["rank-a", "twin", img("twin-a"), ["100", OCT_16]],
    ["rank-B", "twin", img("twin-B"), ["100", OCT_16]],
    ["r-alice", "alice", img("alice"), ["60", OCT_16], ["40.00000000", OCT_16 + 7200]],
    ["r-zed", "Zed", img("zed"), ["100", OCT_16]],
    // 499 at the first second and 1 at the last second of October: 500 only if both bounds are inclusive;
    // then the last second of September and the first second of November.
    ["r-whale", "whale", img("whale"), ["499", OCT_1], ["1", NOV_1 - 1], ["10000", OCT_1 - 1], ["10000", NOV_1]],
    ["r-big", "big", img("big"), ["1000", OCT_16], ["0.5", OCT_16 + 1]],
  ]);

  const huge = ["999999999999.99999999", OCT_16] as const;
  await addBoard(db, "aff-sum", [
    ["s-many", "summer", img("summer"), ...MANY.amounts.map((amount, i) => [amount, OCT_1 + i * 600] as const)],
    ["s-whole", "whole", img("whole"), ["0.5", OCT_16], ["0.50000000", OCT_16], ["12999", OCT_16]],
    ["s-huge", "huge", img("huge"), huge, huge, huge],
    ["s-tiny", "tiny", img("tiny"), ["0.00000001", OCT_16]],
    ["s-half", "half", img("half"), ["1.00000001", OCT_1], ["2.5", OCT_16 - 1]],
  ]);

  // Two affiliates; "mover" starts with aff-a and moves to aff-b after two wagers.
  await addUsers(db, [
    { id: "m-1", affiliateId: "aff-a", username: "mover", avatar: img("mover") },
    { id: "a-1", affiliateId: "aff-a", username: "stays-a", avatar: img("stays-a") },
    { id: "b-1", affiliateId: "aff-b", username: "stays-b", avatar: img("stays-b") },
  ]);
  await addWagers(db, [
    wager("m-1", "10", OCT_1 + 100),
    wager("m-1", "20", OCT_1 + 200),
    wager("a-1", "1", OCT_1 + 100),
    wager("b-1", "50", OCT_1 + 100),
  ]);
  await addUsers(db, [{ id: "m-1", affiliateId: "aff-b", username: "mover", avatar: img("mover") }]);
  await addWagers(db, [wager("m-1", "4", OCT_1 + 300), wager("m-1", "0.5", OCT_1 + 400)]);

  // A running period around the server clock, and a wager a minute ahead of it (ingest allows 5 minutes).
  await addUsers(db, [
    { id: "l-1", affiliateId: "aff-live", username: "live-now", avatar: img("live-now") },
    { id: "l-2", affiliateId: "aff-live", username: "live-ahead", avatar: img("live-ahead") },
  ]);
  await addWagers(db, [wager("l-1", "5", NOV_1), wager("l-1", "7.25", NOW - 10), wager("l-2", "3", NOW + 60)]);

  // Usernames equal but for trailing characters below U+0021.
  await addBoard(db, "aff-pad", [
    ["pad-1", "pad ", img("pad-space"), ["1", OCT_16]],
    ["pad-2", "pad", img("pad"), ["1", OCT_16]],
    ["tab-1", "a\t", img("a-tab"), ["1", OCT_16]],
    ["tab-2", "a", img("a"), ["1", OCT_16]],
  ]);
  return server;
}
