/**
 * The REST contract (CONTRACT.md §1) on a real socket over a real database:
 * the success envelope and its ordering, exact decimal totals, every
 * validation rule with its message and field, every error status with its
 * envelope and headers, the order of the checks, routing and header
 * tolerance, gzip, HTTP/2 with prior knowledge and the health endpoints.
 *
 * Most calls go through `fetch`; `node:http`, `node:http2` and raw sockets are
 * used where fetch cannot say it (no Content-Type, a chunked or lying body,
 * header-name casing, gzip bytes, HTTP/2 prior knowledge).
 */
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPublicApp } from "../../src/apps/public.js";
import { loadConfig } from "../../src/config.js";
import { revokeApiKey } from "../../src/storage/api-keys.js";
import { type Database, openDatabase } from "../../src/storage/database.js";
import { LATEST_SCHEMA_VERSION } from "../../src/storage/migrations.js";
import { createOnePortServer, type OnePortServer } from "../../src/transport/one-port-server.js";
import { createTestDatabase, TEST_SERVER_URL, type TestDatabase } from "../support/database.js";
import { addUsers, addWagers, createKey, wager } from "../support/fixtures.js";
import { startTestServer, type TestServer } from "../support/server.js";

const OP = "/top-affiliate-wagers-by-period";
const EARLIEST_START = 1733115600; // 2024-12-02T05:00:00Z
const OCT_1 = 1790812800; // 2026-10-01T00:00:00Z
const OCT_16 = 1792108800; // 2026-10-16T00:00:00Z
const NOV_1 = 1793491200; // 2026-11-01T00:00:00Z
/** The server's clock: noon on 1 November 2026 unless a test moves it. */
const NOW = NOV_1 + 12 * 3600;
const OCTOBER = { startTimestamp: OCT_1, endTimestamp: NOV_1 - 1 };
const DEFAULT_AVATAR = "https://cdn.example.test/avatars/default.png";
const MAX_BODY = 64 * 1024;

const UNAUTHENTICATED_MESSAGE = "missing or invalid API key (send Authorization Bearer with your key)";
const WWW_AUTHENTICATE = 'Bearer realm="topwagers"';
const NOT_FOUND_MESSAGE = `no such path. The operation is POST ${OP}`;
const TOO_LARGE_MESSAGE = "request body is larger than 65536 bytes";
const NOT_AN_OBJECT_MESSAGE = "request body must be a JSON object with startTimestamp, endTimestamp and numUsers";
const EMPTY_BODY_MESSAGE = "request body is empty. Send a JSON object with startTimestamp, endTimestamp and numUsers";
const END_BEFORE_START_MESSAGE =
  "endTimestamp must not be before startTimestamp (both are inclusive. Equal means one second)";

let clock = NOW;
let server: TestServer;
const keys = {
  rank: "",
  sum: "",
  affA: "",
  affB: "",
  live: "",
  empty: "",
  pad: "",
};

interface Entry {
  readonly username: string;
  readonly avatar: string;
  readonly totalWagered: number;
}

interface Reply {
  readonly status: number;
  /** Lower-case names; undefined when absent. */
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly text: string;
  readonly json: unknown;
}

function parseOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** One call with fetch. `body` is sent as given when it is a string, else as JSON. */
async function call(
  path: string,
  options: {
    method?: string;
    key?: string | null;
    body?: unknown;
    headers?: Record<string, string>;
    baseUrl?: string;
  } = {},
): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (options.key != null) headers.authorization = `Bearer ${options.key}`;
  const method = options.method ?? "POST";
  let body: string | undefined;
  if (options.body !== undefined) {
    body = typeof options.body === "string" ? options.body : JSON.stringify(options.body);
    headers["content-type"] = "application/json";
  }
  Object.assign(headers, options.headers ?? {});
  const response = await fetch(`${options.baseUrl ?? server.baseUrl}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body }),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: Object.fromEntries(response.headers),
    text,
    json: parseOrText(text),
  };
}

/** POST to the operation with a key and a JSON body. */
function top(key: string | null, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  return call(OP, { key, body, headers });
}

/** The data of a 200 answer, checking the envelope on the way. */
async function entries(key: string, body: unknown): Promise<Entry[]> {
  const reply = await top(key, body);
  expect(reply.status).toBe(200);
  const json = reply.json as { data: Entry[]; errors: null };
  expect(Object.keys(json)).toEqual(["data", "errors"]);
  expect(json.errors).toBeNull();
  for (const entry of json.data) expect(Object.keys(entry)).toEqual(["username", "avatar", "totalWagered"]);
  return json.data;
}

interface ErrorItem {
  code: string;
  message: string;
  field?: string;
}

function refusal(...items: ErrorItem[]): { data: null; errors: ErrorItem[] } {
  return { data: null, errors: items };
}

function invalid(message: string, field?: string): ErrorItem {
  return field === undefined ? { code: "invalid_argument", message } : { code: "invalid_argument", message, field };
}

/** The answer to an unauthenticated call: exact body and headers, and no rate-limit headers. */
function expectUnauthenticated(reply: Reply): void {
  expect(reply.status).toBe(401);
  expect(reply.json).toEqual(refusal({ code: "unauthenticated", message: UNAUTHENTICATED_MESSAGE }));
  expect(reply.headers["www-authenticate"]).toBe(WWW_AUTHENTICATE);
  expect(reply.headers["content-type"]).toBe("application/json; charset=utf-8");
  expect(reply.headers.ratelimit).toBeUndefined();
  expect(reply.headers["ratelimit-policy"]).toBeUndefined();
}

interface NodeReply {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
}

/**
 * One call with node:http on its own connection: only the headers given are
 * sent (plus Host and Connection), header names exactly as written, the body
 * as one piece with a Content-Length or as chunks without one (chunked).
 */
function nodeRequest(options: {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  chunks?: readonly Buffer[];
  /** With `chunks`: never end the body, like a client still uploading; the connection is dropped after the response. */
  unfinished?: boolean;
  port?: number;
}): Promise<NodeReply> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: "127.0.0.1",
        port: options.port ?? server.port,
        method: options.method ?? "POST",
        path: options.path,
        agent: false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => {
          if (options.unfinished === true) request.destroy();
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) });
        });
        response.on("error", reject);
      },
    );
    request.on("error", reject);
    for (const [name, value] of Object.entries(options.headers ?? {})) request.setHeader(name, value);
    if (options.body !== undefined) {
      request.setHeader("Content-Length", Buffer.byteLength(options.body));
      request.end(options.body);
    } else if (options.chunks !== undefined) {
      for (const chunk of options.chunks) request.write(chunk);
      if (options.unfinished !== true) request.end();
    } else {
      request.end();
    }
  });
}

interface RawReply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** Writes the bytes as given on a fresh socket and reads the response until the server closes it. */
function rawExchange(request: string, port = server.port): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.setTimeout(5_000, () => socket.destroy(new Error("no complete response within 5 s")));
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      const headerEnd = raw.indexOf("\r\n\r\n");
      if (headerEnd < 0) return reject(new Error(`no response head in ${JSON.stringify(raw)}`));
      const [statusLine = "", ...lines] = raw.slice(0, headerEnd).split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(":");
        headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ status: Number(statusLine.split(" ")[1]), headers, body: raw.slice(headerEnd + 4) });
    });
    socket.write(request);
  });
}

/** One POST over HTTP/2 cleartext with prior knowledge (no upgrade), on its own session. */
async function h2Request(
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

/** What V8 says about text that is not JSON; the server quotes it in its message. */
function jsonParseMessage(text: string): string {
  try {
    JSON.parse(text);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error(`${JSON.stringify(text)} is valid JSON`);
}

// ---- test data -------------------------------------------------------------

const img = (name: string) => `https://img.example.test/${name}.png`;

/** aff-rank, October, in the contract's order. Ties at 100 are ordered by username code points, then user id. */
const OCTOBER_RANKING: Entry[] = [
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
function renderUnits(units: bigint): string {
  const whole = units / 100_000_000n;
  const fraction = String(units % 100_000_000n)
    .padStart(8, "0")
    .replace(/0+$/, "");
  return fraction === "" ? String(whole) : `${whole}.${fraction}`;
}

const MANY = manyAmounts(2000);

beforeAll(async () => {
  server = await startTestServer(
    "rest_contract",
    { CACHE_TTL_MS: "0", DEFAULT_AVATAR_URL: DEFAULT_AVATAR },
    // Many calls below fail authentication on purpose; the per-address brake on bad keys
    // (not part of §1) is set out of their way.
    { now: () => clock, failedAuthPolicy: { points: 10_000, windowSeconds: 60 } },
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
  await addUsers(db, [
    { id: "r-small", affiliateId: "aff-rank", username: "small", avatar: img("small") },
    { id: "r-emoji", affiliateId: "aff-rank", username: "😀", avatar: img("emoji") },
    { id: "r-private", affiliateId: "aff-rank", username: "\uE000x", avatar: img("private-use") },
    { id: "r-eclair", affiliateId: "aff-rank", username: "éclair", avatar: img("eclair") },
    { id: "r-zebra", affiliateId: "aff-rank", username: "zebra", avatar: "" },
    { id: "rank-a", affiliateId: "aff-rank", username: "twin", avatar: img("twin-a") },
    { id: "rank-B", affiliateId: "aff-rank", username: "twin", avatar: img("twin-B") },
    { id: "r-alice", affiliateId: "aff-rank", username: "alice", avatar: img("alice") },
    { id: "r-zed", affiliateId: "aff-rank", username: "Zed", avatar: img("zed") },
    { id: "r-whale", affiliateId: "aff-rank", username: "whale", avatar: img("whale") },
    { id: "r-big", affiliateId: "aff-rank", username: "big", avatar: img("big") },
  ]);
  await addWagers(db, [
    wager("r-big", "1000", OCT_16),
    wager("r-big", "0.5", OCT_16 + 1),
    // 499 at the first second and 1 at the last second of October: 500 only if both bounds are inclusive.
    wager("r-whale", "499", OCT_1),
    wager("r-whale", "1", NOV_1 - 1),
    wager("r-whale", "10000", OCT_1 - 1), // last second of September
    wager("r-whale", "10000", NOV_1), // first second of November
    wager("r-zed", "100", OCT_16),
    wager("r-alice", "60", OCT_16),
    wager("r-alice", "40.00000000", OCT_16 + 7200),
    wager("rank-a", "100", OCT_16),
    wager("rank-B", "100", OCT_16),
    wager("r-zebra", "99.5", OCT_16),
    wager("r-zebra", "0.5", OCT_16 + 60),
    wager("r-eclair", "100", OCT_16),
    wager("r-private", "100", OCT_16),
    wager("r-emoji", "100", OCT_16),
    wager("r-small", "99.99999999", OCT_16), // below 100 as a number, above it as text
    wager("r-small", "1000", NOV_1),
  ]);

  await addUsers(db, [
    { id: "s-many", affiliateId: "aff-sum", username: "summer", avatar: img("summer") },
    { id: "s-whole", affiliateId: "aff-sum", username: "whole", avatar: img("whole") },
    { id: "s-huge", affiliateId: "aff-sum", username: "huge", avatar: img("huge") },
    { id: "s-tiny", affiliateId: "aff-sum", username: "tiny", avatar: img("tiny") },
    { id: "s-half", affiliateId: "aff-sum", username: "half", avatar: img("half") },
  ]);
  await addWagers(db, [
    ...MANY.amounts.map((amount, i) => wager("s-many", amount, OCT_1 + i * 600)),
    wager("s-whole", "0.5", OCT_16),
    wager("s-whole", "0.50000000", OCT_16),
    wager("s-whole", "12999", OCT_16),
    wager("s-huge", "999999999999.99999999", OCT_16),
    wager("s-huge", "999999999999.99999999", OCT_16),
    wager("s-huge", "999999999999.99999999", OCT_16),
    wager("s-tiny", "0.00000001", OCT_16),
    wager("s-half", "1.00000001", OCT_1),
    wager("s-half", "2.5", OCT_16 - 1),
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
  await addUsers(db, [
    { id: "pad-1", affiliateId: "aff-pad", username: "pad ", avatar: img("pad-space") },
    { id: "pad-2", affiliateId: "aff-pad", username: "pad", avatar: img("pad") },
    { id: "tab-1", affiliateId: "aff-pad", username: "a\t", avatar: img("a-tab") },
    { id: "tab-2", affiliateId: "aff-pad", username: "a", avatar: img("a") },
  ]);
  await addWagers(db, [
    wager("pad-1", "1", OCT_16),
    wager("pad-2", "1", OCT_16),
    wager("tab-1", "1", OCT_16),
    wager("tab-2", "1", OCT_16),
  ]);
});

afterAll(async () => {
  await server?.close();
});

// ---- success ---------------------------------------------------------------

describe("200: the envelope, ordering and totals", () => {
  it("answers 200 with data, errors null, exactly three fields per entry and the contract's headers", async () => {
    const reply = await top(keys.rank, { ...OCTOBER, numUsers: 3 });
    expect(reply.status).toBe(200);
    expect(reply.text).toBe(
      '{"data":[' +
        `{"username":"big","avatar":"${img("big")}","totalWagered":1000.5},` +
        `{"username":"whale","avatar":"${img("whale")}","totalWagered":500},` +
        `{"username":"Zed","avatar":"${img("zed")}","totalWagered":100}` +
        '],"errors":null}',
    );
    expect(reply.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(reply.headers["cache-control"]).toBe("no-store");
    expect(reply.headers.vary).toBe("Accept-Encoding");
  });

  it("orders by total descending, ties by username in code-point order, then by user id", async () => {
    // Code-point order differs from a case-insensitive or locale collation ("Zed" < "alice",
    // "zebra" < "éclair", user id "rank-B" < "rank-a") and from JavaScript's default UTF-16
    // sort (U+E000 < U+1F600 although the surrogate pair of U+1F600 sorts first in UTF-16).
    // "small" has 99.99999999, which sorts above 100 as text.
    expect(await entries(keys.rank, { ...OCTOBER, numUsers: 100 })).toEqual(OCTOBER_RANKING);
    const usernames = OCTOBER_RANKING.slice(2, 10).map((e) => e.username);
    expect([...usernames].sort()).not.toEqual(usernames); // the test would catch a UTF-16 sort
    expect([...usernames].sort((a, b) => a.localeCompare(b))).not.toEqual(usernames);
  });

  it("orders usernames that differ only by a trailing space or tab in code-point order", async () => {
    // Usernames and ids are stored as VARBINARY: byte (code point) order, no PAD SPACE, so
    // "pad" < "pad " and "a" < "a\t", as code point order requires.
    expect(await entries(keys.pad, { ...OCTOBER, numUsers: 10 })).toEqual([
      { username: "a", avatar: img("a"), totalWagered: 1 },
      { username: "a\t", avatar: img("a-tab"), totalWagered: 1 },
      { username: "pad", avatar: img("pad"), totalWagered: 1 },
      { username: "pad ", avatar: img("pad-space"), totalWagered: 1 },
    ]);
  });

  it("returns the first numUsers entries of that order", async () => {
    expect(await entries(keys.rank, { ...OCTOBER, numUsers: 1 })).toEqual(OCTOBER_RANKING.slice(0, 1));
    // The cut falls between the two users named "twin": the lower user id stays.
    expect(await entries(keys.rank, { ...OCTOBER, numUsers: 5 })).toEqual(OCTOBER_RANKING.slice(0, 5));
    expect(await entries(keys.rank, { ...OCTOBER, numUsers: 11 })).toEqual(OCTOBER_RANKING);
  });

  it("returns a shorter list when fewer users wagered, and data [] when nobody did", async () => {
    expect(await entries(keys.rank, { ...OCTOBER, numUsers: 12 })).toEqual(OCTOBER_RANKING);
    expect((await top(keys.empty, { ...OCTOBER, numUsers: 10 })).text).toBe('{"data":[],"errors":null}');
    // aff-rank has no wagers in the first half of September.
    const september = { startTimestamp: OCT_1 - 30 * 86400, endTimestamp: OCT_1 - 15 * 86400, numUsers: 10 };
    const reply = await top(keys.rank, september);
    expect(reply.status).toBe(200);
    expect(reply.text).toBe('{"data":[],"errors":null}');
  });

  it("counts wagers at the first and the last second of the period (both bounds inclusive)", async () => {
    const whale = OCTOBER_RANKING[1];
    expect(await entries(keys.rank, { startTimestamp: OCT_1, endTimestamp: OCT_1, numUsers: 10 })).toEqual([
      { ...whale, totalWagered: 499 },
    ]);
    expect(await entries(keys.rank, { startTimestamp: NOV_1 - 1, endTimestamp: NOV_1 - 1, numUsers: 10 })).toEqual([
      { ...whale, totalWagered: 1 },
    ]);
    // One second after the first, one before the last: neither of the whale's edge wagers.
    expect(await entries(keys.rank, { startTimestamp: OCT_1 + 1, endTimestamp: NOV_1 - 2, numUsers: 2 })).toEqual(
      OCTOBER_RANKING.slice(0, 1).concat([{ username: "Zed", avatar: img("zed"), totalWagered: 100 }]),
    );
  });

  it("treats endTimestamp == startTimestamp as a one-second period", async () => {
    expect(await entries(keys.rank, { startTimestamp: OCT_16 + 1, endTimestamp: OCT_16 + 1, numUsers: 10 })).toEqual([
      { username: "big", avatar: img("big"), totalWagered: 0.5 },
    ]);
    expect(await entries(keys.rank, { startTimestamp: OCT_1 + 1, endTimestamp: OCT_1 + 1, numUsers: 10 })).toEqual([]);
  });

  it("allows an end in the future (a running period)", async () => {
    expect(await entries(keys.live, { startTimestamp: NOV_1, endTimestamp: NOW + 30, numUsers: 10 })).toEqual([
      { username: "live-now", avatar: img("live-now"), totalWagered: 12.25 },
    ]);
    // The largest end accepted (10^11 s, the year 5138): October plus the November wagers.
    const far = await top(keys.rank, { startTimestamp: OCT_1, endTimestamp: 100_000_000_000, numUsers: 3 });
    expect(far.status).toBe(200);
    expect(far.json).toEqual({
      data: [
        { username: "whale", avatar: img("whale"), totalWagered: 10500 },
        { username: "small", avatar: img("small"), totalWagered: 1099.99999999 },
        { username: "big", avatar: img("big"), totalWagered: 1000.5 },
      ],
      errors: null,
    });
  });

  it("answers a start in the future with 200 and data [], even when a wager is already recorded there", async () => {
    const ahead = { startTimestamp: NOW + 1, endTimestamp: NOW + 3600, numUsers: 10 };
    const reply = await top(keys.live, ahead);
    expect(reply.status).toBe(200);
    expect(reply.text).toBe('{"data":[],"errors":null}');
    // Once the clock has passed the start, the same question has an answer.
    clock = NOW + 120;
    try {
      expect(await entries(keys.live, ahead)).toEqual([
        { username: "live-ahead", avatar: img("live-ahead"), totalWagered: 3 },
      ]);
    } finally {
      clock = NOW;
    }
  });

  it("sums 2,000 wagers with 8 fraction digits exactly, and writes every digit in the JSON number", async () => {
    const summer = renderUnits(MANY.totalUnits);
    // The data are chosen so that adding the amounts as floats gives another number.
    const floatSum = MANY.amounts.reduce((sum, amount) => sum + Number(amount), 0);
    expect(String(floatSum)).not.toBe(summer);
    expect(summer).toMatch(/^\d+\.\d{8}$/);
    const reply = await top(keys.sum, { ...OCTOBER, numUsers: 100 });
    expect(reply.status).toBe(200);
    expect(reply.text).toBe(
      '{"data":[' +
        `{"username":"huge","avatar":"${img("huge")}","totalWagered":2999999999999.99999997},` +
        `{"username":"summer","avatar":"${img("summer")}","totalWagered":${summer}},` +
        `{"username":"whole","avatar":"${img("whole")}","totalWagered":13000},` +
        `{"username":"half","avatar":"${img("half")}","totalWagered":3.50000001},` +
        `{"username":"tiny","avatar":"${img("tiny")}","totalWagered":0.00000001}` +
        '],"errors":null}',
    );
  });

  it("shows a key only its own affiliate's wagers; a user who moved keeps old wagers with the old affiliate", async () => {
    expect(await entries(keys.affA, { ...OCTOBER, numUsers: 10 })).toEqual([
      { username: "mover", avatar: img("mover"), totalWagered: 30 },
      { username: "stays-a", avatar: img("stays-a"), totalWagered: 1 },
    ]);
    expect(await entries(keys.affB, { ...OCTOBER, numUsers: 10 })).toEqual([
      { username: "stays-b", avatar: img("stays-b"), totalWagered: 50 },
      { username: "mover", avatar: img("mover"), totalWagered: 4.5 },
    ]);
    // The same period through another affiliate's key shows none of these users.
    expect(await entries(keys.rank, { startTimestamp: OCT_1 + 100, endTimestamp: OCT_1 + 400, numUsers: 10 })).toEqual(
      [],
    );
  });

  it("gives users without an avatar the configured DEFAULT_AVATAR_URL", async () => {
    expect(await entries(keys.rank, { startTimestamp: OCT_16 + 60, endTimestamp: OCT_16 + 60, numUsers: 10 })).toEqual([
      { username: "zebra", avatar: DEFAULT_AVATAR, totalWagered: 0.5 },
    ]);
  });
});

// ---- validation ------------------------------------------------------------

describe("400: validation, every problem reported with its field", () => {
  const valid = { ...OCTOBER, numUsers: 3 };
  const TOP_3 = { data: OCTOBER_RANKING.slice(0, 3), errors: null };
  const whole = (field: string, got: string) => invalid(`${field} must be a whole number, got ${got}`, field);
  const required = (field: string) => invalid(`${field} is required`, field);

  const cases: [string, unknown, ErrorItem[]][] = [
    ["{} reports all three fields", {}, [required("startTimestamp"), required("endTimestamp"), required("numUsers")]],
    ["missing startTimestamp", { endTimestamp: NOV_1 - 1, numUsers: 3 }, [required("startTimestamp")]],
    ["missing endTimestamp", { startTimestamp: OCT_1, numUsers: 3 }, [required("endTimestamp")]],
    ["missing numUsers (missing is not 0)", { ...OCTOBER }, [required("numUsers")]],
    [
      "a fractional startTimestamp",
      { ...valid, startTimestamp: 1733115600.5 },
      [whole("startTimestamp", "1733115600.5")],
    ],
    ["a fractional endTimestamp", { ...valid, endTimestamp: 1790812800.25 }, [whole("endTimestamp", "1790812800.25")]],
    ["numUsers 2.5", { ...valid, numUsers: 2.5 }, [whole("numUsers", "2.5")]],
    ["a boolean", { ...valid, startTimestamp: true }, [whole("startTimestamp", "true")]],
    ["null (present, not missing)", { ...valid, endTimestamp: null }, [whole("endTimestamp", "null")]],
    ["an array", { ...valid, numUsers: [3] }, [whole("numUsers", "[3]")]],
    ["an object", { ...valid, numUsers: { value: 3 } }, [whole("numUsers", '{"value":3}')]],
    ["a non-numeric string", { ...valid, startTimestamp: "yesterday" }, [whole("startTimestamp", '"yesterday"')]],
    ["an empty string", { ...valid, numUsers: "" }, [whole("numUsers", '""')]],
    ["a decimal string", { ...valid, numUsers: "2.5" }, [whole("numUsers", '"2.5"')]],
    [
      "startTimestamp one second before 1733115600",
      { ...valid, startTimestamp: EARLIEST_START - 1 },
      [invalid("startTimestamp must be 1733115600 (2 December 2024) or later", "startTimestamp")],
    ],
    [
      "a negative startTimestamp",
      { ...valid, startTimestamp: -1 },
      [invalid("startTimestamp must be a Unix timestamp in seconds (0 or more)", "startTimestamp")],
    ],
    ["numUsers 0", { ...valid, numUsers: 0 }, [invalid("numUsers must be between 1 and 100", "numUsers")]],
    ["numUsers 101", { ...valid, numUsers: 101 }, [invalid("numUsers must be between 1 and 100", "numUsers")]],
    ["numUsers -1", { ...valid, numUsers: -1 }, [invalid("numUsers must be between 1 and 100", "numUsers")]],
    [
      "a startTimestamp in milliseconds",
      { ...valid, startTimestamp: 1790812800000, endTimestamp: 1793491199000 },
      [
        invalid("startTimestamp looks like milliseconds. Send Unix seconds (divide by 1000)", "startTimestamp"),
        invalid("endTimestamp looks like milliseconds. Send Unix seconds (divide by 1000)", "endTimestamp"),
      ],
    ],
    [
      "an endTimestamp just above 10^11",
      { ...valid, endTimestamp: 100_000_000_001 },
      [invalid("endTimestamp looks like milliseconds. Send Unix seconds (divide by 1000)", "endTimestamp")],
    ],
    [
      "milliseconds as a numeric string",
      { ...valid, startTimestamp: "1790812800000" },
      [invalid("startTimestamp looks like milliseconds. Send Unix seconds (divide by 1000)", "startTimestamp")],
    ],
    [
      "endTimestamp one second before startTimestamp",
      { startTimestamp: OCT_16, endTimestamp: OCT_16 - 1, numUsers: 3 },
      [invalid(END_BEFORE_START_MESSAGE, "endTimestamp")],
    ],
    [
      "three problems at once",
      { startTimestamp: 1, endTimestamp: 0, numUsers: 0 },
      [
        invalid("startTimestamp must be 1733115600 (2 December 2024) or later", "startTimestamp"),
        invalid(END_BEFORE_START_MESSAGE, "endTimestamp"),
        invalid("numUsers must be between 1 and 100", "numUsers"),
      ],
    ],
    [
      "a wrong type next to a missing field",
      { startTimestamp: false, numUsers: 101 },
      [
        whole("startTimestamp", "false"),
        required("endTimestamp"),
        invalid("numUsers must be between 1 and 100", "numUsers"),
      ],
    ],
  ];

  it.each(cases)("rejects %s", async (_name, body, items) => {
    const reply = await top(keys.rank, body);
    expect(reply.status).toBe(400);
    expect(reply.json).toEqual(refusal(...items));
    expect(reply.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(reply.headers["ratelimit-policy"]).toBe('"default";q=100000;w=60');
  });

  it("accepts numeric strings as proto JSON does", async () => {
    const reply = await top(keys.rank, {
      startTimestamp: String(OCT_1),
      endTimestamp: String(NOV_1 - 1),
      numUsers: "3",
    });
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual(TOP_3);
  });

  it("accepts the bounds themselves: start 1733115600, numUsers 1 and 100", async () => {
    expect(
      (await top(keys.rank, { startTimestamp: EARLIEST_START, endTimestamp: NOV_1 - 1, numUsers: 3 })).json,
    ).toEqual({
      // Since 2 December 2024 the whale also has its 10000 of 30 September.
      data: [{ ...OCTOBER_RANKING[1], totalWagered: 10500 }, OCTOBER_RANKING[0], OCTOBER_RANKING[2]],
      errors: null,
    });
    expect(await entries(keys.rank, { ...OCTOBER, numUsers: 1 })).toEqual(OCTOBER_RANKING.slice(0, 1));
    expect(await entries(keys.rank, { ...OCTOBER, numUsers: 100 })).toEqual(OCTOBER_RANKING);
  });

  it("ignores unknown extra fields", async () => {
    const reply = await top(keys.rank, { ...valid, affiliateId: "aff-a", numusers: 0, extra: { nested: [1, 2] } });
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual(TOP_3);
  });

  const bodies: [string, string, string][] = [
    [
      "malformed JSON",
      '{"startTimestamp": 1790812800,',
      `request body is not valid JSON (${jsonParseMessage('{"startTimestamp": 1790812800,')})`,
    ],
    [
      "JSON with a trailing comma",
      '{"numUsers": 3,}',
      `request body is not valid JSON (${jsonParseMessage('{"numUsers": 3,}')})`,
    ],
    ["an empty body", "", EMPTY_BODY_MESSAGE],
    ["a body of whitespace", " \r\n\t ", EMPTY_BODY_MESSAGE],
    ["a top-level array", "[1790812800, 1793491199, 3]", NOT_AN_OBJECT_MESSAGE],
    ["a top-level number", "42", NOT_AN_OBJECT_MESSAGE],
    ["a top-level string", '"startTimestamp"', NOT_AN_OBJECT_MESSAGE],
    ["top-level null", "null", NOT_AN_OBJECT_MESSAGE],
    ["top-level true", "true", NOT_AN_OBJECT_MESSAGE],
  ];

  it.each(bodies)("answers %s with 400 in the envelope, naming no field", async (_name, body, message) => {
    const reply = await top(keys.rank, body);
    expect(reply.status).toBe(400);
    expect(reply.json).toEqual(refusal(invalid(message)));
  });
});

// ---- error statuses ----------------------------------------------------------

describe("401: missing, unknown, malformed or revoked key", () => {
  const body = { ...OCTOBER, numUsers: 3 };

  it("refuses a call without Authorization", async () => {
    expectUnauthenticated(await top(null, body));
  });

  it.each([
    ["an unknown key of the right shape", `Bearer tw_${"A".repeat(32)}`],
    ["a malformed key", "Bearer not-a-key"],
    ["a key cut short", "Bearer tw_abc"],
    ["the scheme alone", "Bearer"],
    ["the scheme and spaces", "Bearer    "],
    ["another scheme", "Basic dXNlcjpwYXNz"],
    ["two credentials", `Bearer tw_${"A".repeat(32)} tw_${"B".repeat(32)}`],
  ])("refuses %s", async (_name, authorization) => {
    expectUnauthenticated(await top(null, body, { authorization }));
  });

  it("refuses a valid key sent without a scheme", async () => {
    expectUnauthenticated(await top(null, body, { authorization: keys.rank }));
  });

  it("refuses a revoked key", async () => {
    const db = server.database.db;
    const never = await createKey(db, "aff-rank");
    await revokeApiKey(db.write, never.id);
    expectUnauthenticated(await top(never.secret, body));

    // A key in use is refused once revoked (contract §2: within 5 seconds).
    const used = await createKey(db, "aff-rank");
    expect((await top(used.secret, body)).status).toBe(200);
    await revokeApiKey(db.write, used.id);
    const deadline = Date.now() + 5_000;
    let reply = await top(used.secret, body);
    while (reply.status === 200 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      reply = await top(used.secret, body);
    }
    expectUnauthenticated(reply);
  });

  it("reads the key only from Authorization: not from the query string, the body or other headers", async () => {
    for (const query of [`key=${keys.rank}`, `api_key=${keys.rank}`, `access_token=${keys.rank}`]) {
      expectUnauthenticated(await call(`${OP}?${query}`, { body }));
    }
    expectUnauthenticated(await top(null, { ...body, apiKey: keys.rank, key: keys.rank, authorization: keys.rank }));
    expectUnauthenticated(await top(null, body, { "x-api-key": keys.rank }));
  });

  it("checks the key before the body: 401 wins over a malformed, mistyped or oversized body", async () => {
    expectUnauthenticated(await top(null, "{not json"));
    expectUnauthenticated(await top(null, { numUsers: 0 }));
    expectUnauthenticated(await call(OP, { body: "x", headers: { "content-type": "text/plain" } }));
    expectUnauthenticated(await call(OP, { body: "x".repeat(MAX_BODY + 1) }));
    const bad = await call(OP, { body: "{not json", headers: { authorization: `Bearer tw_${"Z".repeat(32)}` } });
    expectUnauthenticated(bad);
  });
});

describe("404 and 405: path and method, checked first", () => {
  it.each([
    ["/"],
    ["/top-affiliate-wagers"],
    ["/top-affiliate-wagers-by-period/extra"],
    ["/api/top-affiliate-wagers-by-period"],
    ["/TOP-AFFILIATE-WAGERS-BY-PERIOD"],
  ])("answers POST %s with 404 pointing to the operation's path", async (path) => {
    for (const key of [keys.rank, null]) {
      const reply = await call(path, { key, body: { ...OCTOBER, numUsers: 3 } });
      expect(reply.status).toBe(404);
      expect(reply.json).toEqual(refusal({ code: "not_found", message: NOT_FOUND_MESSAGE }));
      expect(reply.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(reply.headers["www-authenticate"]).toBeUndefined();
      expect(reply.headers.allow).toBeUndefined();
    }
  });

  it("answers GET on an unknown path with 404", async () => {
    const reply = await call("/nothing-here", { method: "GET" });
    expect(reply.status).toBe(404);
    expect(reply.json).toEqual(refusal({ code: "not_found", message: NOT_FOUND_MESSAGE }));
  });

  it.each([["GET"], ["PUT"], ["DELETE"], ["PATCH"]])(
    "answers %s on the operation's path with 405 and Allow: POST, before the key is checked",
    async (method) => {
      for (const key of [keys.rank, null]) {
        const reply = await call(OP, {
          method,
          key,
          ...(method === "GET" ? {} : { body: { ...OCTOBER, numUsers: 3 } }),
        });
        expect(reply.status).toBe(405);
        expect(reply.json).toEqual(refusal({ code: "method_not_allowed", message: `use POST for ${OP}` }));
        expect(reply.headers.allow).toBe("POST");
        expect(reply.headers["content-type"]).toBe("application/json; charset=utf-8");
        expect(reply.headers["www-authenticate"]).toBeUndefined();
      }
    },
  );

  it("answers HEAD on the operation's path with 405 and Allow: POST", async () => {
    const reply = await call(OP, { method: "HEAD" });
    expect(reply.status).toBe(405);
    expect(reply.headers.allow).toBe("POST");
    expect(reply.text).toBe("");
  });

  it("tolerates a trailing slash and repeated slashes on 405 too", async () => {
    const reply = await nodeRequest({ method: "GET", path: `//${OP.slice(1)}//` });
    expect(reply.status).toBe(405);
    expect(reply.headers.allow).toBe("POST");
  });
});

describe("413: body over 64 KiB", () => {
  /** A valid request padded with spaces to exactly `size` bytes. */
  function paddedBody(size: number): string {
    const json = JSON.stringify({ ...OCTOBER, numUsers: 3 });
    return `${json.slice(0, -1)}${" ".repeat(size - json.length)}}`;
  }
  const TOO_LARGE = refusal({ code: "payload_too_large", message: TOO_LARGE_MESSAGE });
  const jsonHeaders = () => ({ authorization: `Bearer ${keys.rank}`, "content-type": "application/json" });

  it("accepts a body of exactly 64 KiB and refuses one byte more (Content-Length)", async () => {
    expect(paddedBody(MAX_BODY)).toHaveLength(MAX_BODY);
    const ok = await nodeRequest({ path: OP, headers: jsonHeaders(), body: paddedBody(MAX_BODY) });
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body.toString("utf8"))).toEqual({ data: OCTOBER_RANKING.slice(0, 3), errors: null });

    const refused = await nodeRequest({ path: OP, headers: jsonHeaders(), body: paddedBody(MAX_BODY + 1) });
    expect(refused.status).toBe(413);
    expect(JSON.parse(refused.body.toString("utf8"))).toEqual(TOO_LARGE);
    expect(refused.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(refused.headers["ratelimit-policy"]).toBe('"default";q=100000;w=60');
  });

  it("refuses a chunked body that grows over 64 KiB, and accepts one of exactly 64 KiB", async () => {
    const chunked = (size: number) => {
      const bytes = Buffer.from(paddedBody(size), "utf8");
      const chunks: Buffer[] = [];
      for (let i = 0; i < bytes.length; i += 10_000) chunks.push(bytes.subarray(i, i + 10_000));
      return chunks;
    };
    const ok = await nodeRequest({ path: OP, headers: jsonHeaders(), chunks: chunked(MAX_BODY) });
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body.toString("utf8"))).toEqual({ data: OCTOBER_RANKING.slice(0, 3), errors: null });

    const refused = await nodeRequest({ path: OP, headers: jsonHeaders(), chunks: chunked(MAX_BODY + 1) });
    expect(refused.status).toBe(413);
    expect(JSON.parse(refused.body.toString("utf8"))).toEqual(TOO_LARGE);
    expect(refused.headers.connection).toBe("close");
  });

  it("refuses a chunked upload as soon as it passes 64 KiB, without waiting for its end", async () => {
    const piece = Buffer.from(`{"numUsers": 3${" ".repeat(16_384)}`, "utf8");
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const refused = await nodeRequest({
        path: OP,
        headers: jsonHeaders(),
        chunks: [piece, piece, piece, piece, piece],
        unfinished: true,
      });
      expect(refused.status).toBe(413);
      expect(JSON.parse(refused.body.toString("utf8"))).toEqual(TOO_LARGE);
    }
  });

  it("refuses on a declared Content-Length over 64 KiB without waiting for the body", async () => {
    const reply = await rawExchange(
      `POST ${OP} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${keys.rank}\r\n` +
        "Content-Type: application/json\r\nContent-Length: 1000000000\r\nConnection: close\r\n\r\n{}",
    );
    expect(reply.status).toBe(413);
    expect(JSON.parse(reply.body)).toEqual(TOO_LARGE);
  });
});

describe("415: Content-Type not JSON", () => {
  const body = JSON.stringify({ ...OCTOBER, numUsers: 3 });

  it.each([
    ["text/plain", "Content-Type text/plain is not supported. Send application/json"],
    [
      "application/x-www-form-urlencoded",
      "Content-Type application/x-www-form-urlencoded is not supported. Send application/json",
    ],
    ["text/json", "Content-Type text/json is not supported. Send application/json"],
  ])("refuses %s", async (contentType, message) => {
    const reply = await call(OP, { key: keys.rank, body, headers: { "content-type": contentType } });
    expect(reply.status).toBe(415);
    expect(reply.json).toEqual(refusal({ code: "unsupported_media_type", message }));
    expect(reply.headers["content-type"]).toBe("application/json; charset=utf-8");
  });

  it("refuses a body without Content-Type", async () => {
    const reply = await nodeRequest({ path: OP, headers: { authorization: `Bearer ${keys.rank}` }, body });
    expect(reply.status).toBe(415);
    expect(JSON.parse(reply.body.toString("utf8"))).toEqual(
      refusal({ code: "unsupported_media_type", message: "Content-Type is required. Send application/json" }),
    );
  });

  it.each([["application/json; charset=utf-8"], ["application/json;charset=UTF-8;v=1"], ["Application/JSON"]])(
    "accepts %s",
    async (contentType) => {
      const reply = await call(OP, { key: keys.rank, body, headers: { "content-type": contentType } });
      expect(reply.status).toBe(200);
      expect(reply.json).toEqual({ data: OCTOBER_RANKING.slice(0, 3), errors: null });
    },
  );
});

describe("429: the key's rate limit", () => {
  const body = { ...OCTOBER, numUsers: 1 };

  it("counts every authenticated call, valid or not, and then refuses with Retry-After and RateLimit headers", async () => {
    const limited = await createKey(server.database.db, "aff-rank", { points: 4, windowSeconds: 60 });
    const policy = '"key";q=4;w=60';

    const first = await top(limited.secret, body);
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ data: OCTOBER_RANKING.slice(0, 1), errors: null });
    expect(first.headers["ratelimit-policy"]).toBe(policy);
    expect(first.headers.ratelimit).toBe('"key";r=3;t=60');
    expect(first.headers["retry-after"]).toBeUndefined();

    const invalidCall = await top(limited.secret, { ...body, numUsers: 0 });
    expect(invalidCall.status).toBe(400);
    expect(invalidCall.headers["ratelimit-policy"]).toBe(policy);
    expect(invalidCall.headers.ratelimit).toBe('"key";r=2;t=60');

    const wrongType = await call(OP, { key: limited.secret, body: "{}", headers: { "content-type": "text/plain" } });
    expect(wrongType.status).toBe(415);
    expect(wrongType.headers.ratelimit).toBe('"key";r=1;t=60');

    const tooLarge = await call(OP, { key: limited.secret, body: "x".repeat(MAX_BODY + 1) });
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.headers["ratelimit-policy"]).toBe(policy);
    expect(tooLarge.headers.ratelimit).toBe('"key";r=0;t=60');

    const refused = await top(limited.secret, body);
    expect(refused.status).toBe(429);
    expect(refused.json).toEqual(
      refusal({
        code: "resource_exhausted",
        message: "rate limit exceeded for this API key (4 requests per 60 s). Retry in 60 s",
      }),
    );
    expect(refused.headers["retry-after"]).toBe("60");
    expect(refused.headers["ratelimit-policy"]).toBe(policy);
    expect(refused.headers.ratelimit).toBe('"key";r=0;t=60');
    expect(refused.headers["content-type"]).toBe("application/json; charset=utf-8");

    // 429 comes before the body and media-type checks.
    for (const reply of [
      await top(limited.secret, "{not json"),
      await top(limited.secret, { numUsers: 0 }),
      await call(OP, { key: limited.secret, body: "x", headers: { "content-type": "text/plain" } }),
      await call(OP, { key: limited.secret, body: "x".repeat(MAX_BODY + 1) }),
    ]) {
      expect(reply.status).toBe(429);
      expect(reply.headers["retry-after"]).toBe("60");
      expect((reply.json as { errors: ErrorItem[] }).errors[0]?.code).toBe("resource_exhausted");
    }
    // ...but after the path, the method and the key.
    expect((await call(OP, { method: "GET", key: limited.secret })).status).toBe(405);
    expect((await call("/elsewhere", { key: limited.secret, body })).status).toBe(404);
    expectUnauthenticated(await top(null, body));

    // The count is per key: another key with the same limit is untouched.
    const other = await createKey(server.database.db, "aff-rank", { points: 4, windowSeconds: 60 });
    const fresh = await top(other.secret, body);
    expect(fresh.status).toBe(200);
    expect(fresh.headers.ratelimit).toBe('"key";r=3;t=60');
  });

  it("reports the default policy on keys without their own limit", async () => {
    const plain = await createKey(server.database.db, "aff-rank");
    const first = await top(plain.secret, body);
    expect(first.headers["ratelimit-policy"]).toBe('"default";q=100000;w=60');
    expect(first.headers.ratelimit).toBe('"default";r=99999;t=60');
    const second = await top(plain.secret, { numUsers: 0 });
    expect(second.status).toBe(400);
    expect(second.headers.ratelimit).toBe('"default";r=99998;t=60');
  });
});

describe("check order", () => {
  const body = { ...OCTOBER, numUsers: 3 };

  it("path and method before the key", async () => {
    expect((await call(OP, { method: "GET" })).status).toBe(405);
    expect((await call("/nope", { body })).status).toBe(404);
  });

  it("key before body size, media type and body", async () => {
    expectUnauthenticated(await call(OP, { body: "[", headers: { "content-type": "text/plain" } }));
    const oversized = await rawExchange(
      `POST ${OP} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n` +
        "Content-Length: 1000000000\r\nConnection: close\r\n\r\n",
    );
    expect(oversized.status).toBe(401);
    expect(oversized.headers["www-authenticate"]).toBe(WWW_AUTHENTICATE);
    expect(JSON.parse(oversized.body)).toEqual(refusal({ code: "unauthenticated", message: UNAUTHENTICATED_MESSAGE }));
  });

  it("body size and media type before the body", async () => {
    const wrongType = await call(OP, { key: keys.rank, body: "{not json", headers: { "content-type": "text/plain" } });
    expect(wrongType.status).toBe(415);
    const oversized = await call(OP, { key: keys.rank, body: `{not json${" ".repeat(MAX_BODY)}` });
    expect(oversized.status).toBe(413);
    expect(oversized.json).toEqual(refusal({ code: "payload_too_large", message: TOO_LARGE_MESSAGE }));
  });
});

// ---- routing and headers -----------------------------------------------------

describe("routing and header tolerance", () => {
  const body = { ...OCTOBER, numUsers: 3 };
  const TOP_3 = { data: OCTOBER_RANKING.slice(0, 3), errors: null };

  it.each([[`${OP}/`], [`//${OP.slice(1)}`], [`//${OP.slice(1)}//`], [`${OP}?numUsers=1`]])(
    "serves %s as the operation",
    async (path) => {
      const reply = await nodeRequest({
        path,
        headers: { authorization: `Bearer ${keys.rank}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(reply.status).toBe(200);
      expect(JSON.parse(reply.body.toString("utf8"))).toEqual(TOP_3);
    },
  );

  it.each([
    ["lowercase bearer", (k: string) => `bearer ${k}`],
    ["uppercase BEARER", (k: string) => `BEARER ${k}`],
    ["spaces around the key", (k: string) => `Bearer    ${k}   `],
    ["a tab between scheme and key", (k: string) => `Bearer\t${k}`],
  ])("accepts %s", async (_name, authorization) => {
    const reply = await top(null, body, { authorization: authorization(keys.rank) });
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual(TOP_3);
  });

  it("accepts any header-name casing", async () => {
    const json = JSON.stringify(body);
    const reply = await rawExchange(
      `POST ${OP} HTTP/1.1\r\nhOsT: test\r\nAUTHORIZATION: Bearer ${keys.rank}\r\n` +
        `content-TYPE: application/json\r\nCONTENT-LENGTH: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`,
    );
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.body)).toEqual(TOP_3);
    const viaNode = await nodeRequest({
      path: OP,
      headers: { AuThOrIzAtIoN: `bearer   ${keys.rank}`, "Content-Type": "application/json" },
      body: json,
    });
    expect(viaNode.status).toBe(200);
    expect(JSON.parse(viaNode.body.toString("utf8"))).toEqual(TOP_3);
  });
});

describe("BASE_PATH prefixes the REST path", () => {
  let prefixed: TestServer;
  let key: string;
  const body = { ...OCTOBER, numUsers: 10 };
  const PREFIXED_OP = `/api${OP}`;
  const expected = { data: [{ username: "solo", avatar: img("solo"), totalWagered: 42.42 }], errors: null };

  beforeAll(async () => {
    prefixed = await startTestServer("rest_contract_base", { BASE_PATH: "/api", CACHE_TTL_MS: "0" });
    key = (await createKey(prefixed.database.db, "aff-solo")).secret;
    await addUsers(prefixed.database.db, [
      { id: "solo", affiliateId: "aff-solo", username: "solo", avatar: img("solo") },
    ]);
    await addWagers(prefixed.database.db, [wager("solo", "42.42", OCT_16)]);
  });

  afterAll(async () => {
    await prefixed?.close();
  });

  it("serves the operation under the prefix, tolerating slashes", async () => {
    for (const path of [PREFIXED_OP, `${PREFIXED_OP}/`, `//api//${OP.slice(1)}`]) {
      const reply = await call(path, { key, body, baseUrl: prefixed.baseUrl });
      expect(reply.status).toBe(200);
      expect(reply.json).toEqual(expected);
    }
  });

  it("answers the unprefixed path with 404 pointing to the prefixed one", async () => {
    const reply = await call(OP, { key, body, baseUrl: prefixed.baseUrl });
    expect(reply.status).toBe(404);
    expect(reply.json).toEqual(
      refusal({ code: "not_found", message: `no such path. The operation is POST ${PREFIXED_OP}` }),
    );
  });

  it("answers other methods under the prefix with 405", async () => {
    const reply = await call(PREFIXED_OP, { method: "GET", baseUrl: prefixed.baseUrl });
    expect(reply.status).toBe(405);
    expect(reply.headers.allow).toBe("POST");
    expect(reply.json).toEqual(refusal({ code: "method_not_allowed", message: `use POST for ${PREFIXED_OP}` }));
  });
});

describe("503: database unreachable", () => {
  /** A TCP relay to the database that can be cut and reconnected, so the server sees it vanish. */
  class DatabaseRelay {
    private listener: net.Server | undefined;
    private readonly sockets = new Set<net.Socket>();
    port = 0;

    constructor(private readonly target: { host: string; port: number }) {}

    async open(): Promise<void> {
      const listener = net.createServer((client) => {
        const upstream = net.connect(this.target.port, this.target.host);
        this.sockets.add(client);
        this.sockets.add(upstream);
        client.pipe(upstream);
        upstream.pipe(client);
        const drop = () => {
          client.destroy();
          upstream.destroy();
          this.sockets.delete(client);
          this.sockets.delete(upstream);
        };
        for (const socket of [client, upstream]) {
          socket.on("error", drop);
          socket.on("close", drop);
        }
      });
      await new Promise<void>((resolve) => listener.listen(this.port, "127.0.0.1", resolve));
      this.port = (listener.address() as net.AddressInfo).port;
      this.listener = listener;
    }

    /** Refuses new connections and breaks the open ones. */
    async cut(): Promise<void> {
      const listener = this.listener;
      this.listener = undefined;
      for (const socket of this.sockets) socket.destroy();
      this.sockets.clear();
      if (listener !== undefined) await new Promise<void>((resolve) => listener.close(() => resolve()));
    }
  }

  const target = new URL(TEST_SERVER_URL);
  const relay = new DatabaseRelay({ host: target.hostname, port: target.port === "" ? 3306 : Number(target.port) });
  let direct: TestDatabase;
  let relayed: Database;
  let publicServer: OnePortServer;
  let baseUrl: string;
  let key: string;
  const body = { ...OCTOBER, numUsers: 10 };
  const UNAVAILABLE = refusal({
    code: "unavailable",
    message: "the leaderboard database is unavailable right now. Retry shortly",
  });
  const served = { data: [{ username: "steady", avatar: img("steady"), totalWagered: 7 }], errors: null };

  beforeAll(async () => {
    direct = await createTestDatabase("rest_contract_503");
    key = (await createKey(direct.db, "aff-steady")).secret;
    await addUsers(direct.db, [{ id: "st", affiliateId: "aff-steady", username: "steady", avatar: img("steady") }]);
    await addWagers(direct.db, [wager("st", "7", OCT_16)]);
    await relay.open();
    const url = new URL(direct.url);
    url.hostname = "127.0.0.1";
    url.port = String(relay.port);
    relayed = await openDatabase({ url: url.toString(), poolSize: 2, queryTimeoutMs: 5_000 });
    const config = loadConfig({ RATE_LIMIT_POINTS: "100000", CACHE_TTL_MS: "0", DATABASE_URL: url.toString() });
    publicServer = createOnePortServer(createPublicApp(config, relayed).handler);
    await new Promise<void>((resolve) => publicServer.server.listen(0, "127.0.0.1", resolve));
    baseUrl = `http://127.0.0.1:${(publicServer.server.address() as net.AddressInfo).port}`;
  });

  afterAll(async () => {
    await publicServer?.close(5_000);
    await relay.cut();
    await relayed?.close().catch(() => undefined);
    await direct?.drop();
  });

  it("answers 503 unavailable with Retry-After, never 500, and 200 again once the database is back", async () => {
    const before = await call(OP, { key, body, baseUrl });
    expect(before.status).toBe(200);
    expect(before.json).toEqual(served);
    expect((await call("/readyz", { method: "GET", baseUrl })).status).toBe(200);

    await relay.cut();
    // The key is still trusted from the call before: the leaderboard query is what fails.
    const known = await call(OP, { key, body, baseUrl });
    expect(known.status).toBe(503);
    expect(known.json).toEqual(UNAVAILABLE);
    expect(known.headers["retry-after"]).toBe("1");
    expect(known.headers["content-type"]).toBe("application/json; charset=utf-8");
    // A key never seen before cannot be looked up: 503 as well, not 401.
    const unseen = await call(OP, { key: `tw_${"Q".repeat(32)}`, body, baseUrl });
    expect(unseen.status).toBe(503);
    expect(unseen.json).toEqual(UNAVAILABLE);
    expect(unseen.headers["retry-after"]).toBe("1");
    const ready = await call("/readyz", { method: "GET", baseUrl });
    expect(ready.status).toBe(503);
    expect(ready.json).toEqual({ status: "database_unavailable" });
    expect((await call("/healthz", { method: "GET", baseUrl })).json).toEqual({ status: "ok" });

    await relay.open();
    const after = await call(OP, { key, body, baseUrl });
    expect(after.status).toBe(200);
    expect(after.json).toEqual(served);
  });
});

// ---- transport -----------------------------------------------------------------

describe("gzip", () => {
  const json = JSON.stringify({ ...OCTOBER, numUsers: 100 });
  const headers = (acceptEncoding?: string) => ({
    authorization: `Bearer ${keys.rank}`,
    "content-type": "application/json",
    ...(acceptEncoding === undefined ? {} : { "accept-encoding": acceptEncoding }),
  });

  it("gzips the body when the client accepts gzip, and the bytes decode to the same JSON", async () => {
    const plain = await nodeRequest({ path: OP, headers: headers(), body: json });
    expect(plain.status).toBe(200);
    expect(plain.headers["content-encoding"]).toBeUndefined();
    const text = plain.body.toString("utf8");
    expect(JSON.parse(text)).toEqual({ data: OCTOBER_RANKING, errors: null });
    expect(plain.headers["content-length"]).toBe(String(plain.body.length));

    for (const acceptEncoding of ["gzip", "gzip, deflate, br", "br;q=1.0, gzip;q=0.8", "*"]) {
      const zipped = await nodeRequest({ path: OP, headers: headers(acceptEncoding), body: json });
      expect(zipped.status).toBe(200);
      expect(zipped.headers["content-encoding"]).toBe("gzip");
      expect(zipped.headers.vary).toBe("Accept-Encoding");
      expect(zipped.headers["content-length"]).toBe(String(zipped.body.length));
      expect(zipped.body.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
      expect(gunzipSync(zipped.body).toString("utf8")).toBe(text);
    }
  });

  it("does not gzip when gzip is not accepted", async () => {
    for (const acceptEncoding of ["identity", "gzip;q=0", "deflate"]) {
      const reply = await nodeRequest({ path: OP, headers: headers(acceptEncoding), body: json });
      expect(reply.status).toBe(200);
      expect(reply.headers["content-encoding"]).toBeUndefined();
      expect(JSON.parse(reply.body.toString("utf8"))).toEqual({ data: OCTOBER_RANKING, errors: null });
    }
  });
});

describe("HTTP/2 cleartext with prior knowledge", () => {
  const json = JSON.stringify({ ...OCTOBER, numUsers: 100 });

  it("serves the REST operation with the same body as HTTP/1.1", async () => {
    const h1 = await nodeRequest({
      path: OP,
      headers: { authorization: `Bearer ${keys.rank}`, "content-type": "application/json" },
      body: json,
    });
    const h2 = await h2Request({ authorization: `Bearer ${keys.rank}`, "content-type": "application/json" }, json);
    expect(h2.status).toBe(200);
    expect(h2.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(h2.body).toBe(h1.body.toString("utf8"));
    expect(JSON.parse(h2.body)).toEqual({ data: OCTOBER_RANKING, errors: null });
  });

  it("answers errors in the same envelope", async () => {
    const unauthenticated = await h2Request({ "content-type": "application/json" }, json);
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers["www-authenticate"]).toBe(WWW_AUTHENTICATE);
    expect(JSON.parse(unauthenticated.body)).toEqual(
      refusal({ code: "unauthenticated", message: UNAUTHENTICATED_MESSAGE }),
    );

    const auth = { authorization: `Bearer ${keys.rank}`, "content-type": "application/json" };
    const bad = await h2Request(auth, "{}");
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body)).toEqual(
      refusal(
        invalid("startTimestamp is required", "startTimestamp"),
        invalid("endTimestamp is required", "endTimestamp"),
        invalid("numUsers is required", "numUsers"),
      ),
    );

    const tooLarge = await h2Request(auth, " ".repeat(MAX_BODY + 1));
    expect(tooLarge.status).toBe(413);
    expect(JSON.parse(tooLarge.body)).toEqual(refusal({ code: "payload_too_large", message: TOO_LARGE_MESSAGE }));
  });
});

describe("health", () => {
  it("answers GET /healthz with 200", async () => {
    const reply = await call("/healthz", { method: "GET" });
    expect(reply.status).toBe(200);
    expect(reply.text).toBe('{"status":"ok"}');
    expect(reply.headers["content-type"]).toBe("application/json; charset=utf-8");
  });

  it("answers GET /readyz with 200 once the database is reachable and migrated", async () => {
    const reply = await call("/readyz", { method: "GET" });
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ status: "ready", schemaVersion: LATEST_SCHEMA_VERSION });
    expect(reply.text).toBe(`{"status":"ready","schemaVersion":${LATEST_SCHEMA_VERSION}}`);
  });
});
