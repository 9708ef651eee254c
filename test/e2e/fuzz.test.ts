/**
 * Property-based fuzzing (fast-check) of the public port of a spawned server:
 * arbitrary methods, paths, headers and bodies on the REST path (HTTP/1.1 and
 * h2c, with a valid key and without), arbitrary request messages over Connect
 * (JSON and binary) and arbitrary bytes as Connect and gRPC bodies. Whatever
 * arrives, the answer is the REST envelope (exactly `data` and `errors`, items
 * with code and message) or a proper RPC status, never a 5xx, and the process
 * is still alive and has logged no error afterwards.
 *
 * Calls without a valid key come from another loopback address (127.0.0.3),
 * so the per-address failed-auth limiter they trip does not hide the body
 * checks of the calls with the key.
 */
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { gunzipSync as zlibGunzip } from "node:zlib";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, type Http2SessionManager } from "@connectrpc/connect-node";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GetTopAffiliateWagersByPeriodRequestSchema, TopWagersService } from "../../gen/topwagers/v1/top_wagers_pb.js";
import { grpcStreamHeaders, PROCEDURE } from "../support/calls.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { JAN_1_2025 } from "../support/dates.js";
import { badRequest, connectDetails, errorInfo } from "../support/details.js";
import { addUsers, addWagers, createKey, wager } from "../support/fixtures.js";
import { type ServerProcess, startServerProcess } from "../support/processes.js";
import { envelopeProblems, OPERATION } from "../support/rest.js";

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
const KEYED_ADDRESS = "127.0.0.1";
const KEYLESS_ADDRESS = "127.0.0.3";
const CONNECT_CODES = new Set([
  "canceled",
  "unknown",
  "invalid_argument",
  "deadline_exceeded",
  "not_found",
  "already_exists",
  "permission_denied",
  "resource_exhausted",
  "failed_precondition",
  "aborted",
  "out_of_range",
  "unimplemented",
  "internal",
  "unavailable",
  "data_loss",
  "unauthenticated",
]);

let database: TestDatabase;
let server: ServerProcess;
let key = "";
const agents = new Map<string, http.Agent>();
const sessions: http2.ClientHttp2Session[] = [];
const managers: Http2SessionManager[] = [];
const seen = new Map<string, number>();

function count(label: string) {
  seen.set(label, (seen.get(label) ?? 0) + 1);
}

// ------------------------------------------------------------------ arbitraries

const tchar = "[A-Za-z0-9!#$%&'*+.^_`|~-]";
const methodArb = fc.oneof(
  fc.constantFrom("POST", "POST", "POST", "GET", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS"),
  fc.constantFrom("post", "Post", "PROPFIND", "MKCOL", "PURGE", "SEARCH", "LINK", "REPORT"),
  fc.stringMatching(new RegExp(`^${tchar}{1,12}$`)),
);

/** Paths that reach the REST skin or the 404 fallback (not Connect procedures, not health). */
const pathArb = fc
  .oneof(
    { arbitrary: fc.constant(OPERATION), weight: 6 },
    fc.constantFrom(
      OPERATION,
      `${OPERATION}/`,
      `//${OPERATION.slice(1)}//`,
      `${OPERATION}?x=1&y=%zz`,
      "/",
      "/api",
      "/v1/top",
    ),
    fc.constantFrom(`${OPERATION}%00`, `${OPERATION}/..`, "/%2e%2e/etc/passwd", `/${"a".repeat(3000)}`, "/?"),
    fc.stringMatching(/^\/[\x21-\x7e]{0,80}$/),
    fc.array(fc.stringMatching(/^[A-Za-z0-9._~%-]{0,12}$/), { maxLength: 6 }).map((parts) => `/${parts.join("/")}`),
  )
  .filter((p) => {
    const lower = p.replace(/\/{2,}/g, "/").toLowerCase();
    return !/^\/(topwagers\.|grpc\.)/.test(lower) && !/^\/(healthz|readyz)\/?(\?|$)/.test(lower);
  });

const contentTypeArb = fc.option(
  fc.oneof(
    fc.constantFrom(
      "application/json",
      "application/json; charset=utf-8",
      "APPLICATION/JSON",
      "application/json;charset=latin1;;",
      " application/json ",
      "application/jsonx",
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/proto",
      "application/grpc",
      "",
    ),
    fc.stringMatching(/^[\x20-\x7e]{0,60}$/),
  ),
  { nil: undefined },
);

/** An authorization header and whether it carries the valid key. */
const authArb = fc.oneof(
  fc.constant({ keyed: true, value: () => `Bearer ${key}` }),
  fc.constant({ keyed: true, value: () => `bearer   ${key}  ` }),
  fc.constant({ keyed: true, value: () => `BEARER ${key}` }),
  fc.constant({ keyed: false, value: () => undefined }),
  fc.constantFrom("Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Bearer tw_", "Token abc", "Bearer a b").map((v) => ({
    keyed: false,
    value: () => v,
  })),
  fc.stringMatching(/^tw_[A-Za-z0-9_-]{32}$/).map((v) => ({ keyed: false, value: () => `Bearer ${v}` })),
  fc.stringMatching(/^[\x20-\x7e]{0,200}$/).map((v) => ({ keyed: false, value: () => v })),
);

const fieldValueArb = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
  fc.constantFrom(1733115600, 1735689600, 1738367999, 1743480000, 0, -1, 100, 101, 1e11 + 1, 1733115600.5),
  fc.string(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 2 }),
);

const bodyArb: fc.Arbitrary<Buffer> = fc.oneof(
  fc
    .record(
      { startTimestamp: fieldValueArb, endTimestamp: fieldValueArb, numUsers: fieldValueArb, extra: fc.jsonValue() },
      { requiredKeys: [] },
    )
    .map((o) => Buffer.from(JSON.stringify(o))),
  fc.jsonValue().map((v) => Buffer.from(JSON.stringify(v) ?? "")),
  fc.uint8Array({ maxLength: 2048 }).map((bytes) => Buffer.from(bytes)),
  fc.string({ unit: "binary", maxLength: 300 }).map((s) => Buffer.from(s, "utf8")),
  fc.constantFrom("", " ", "{", "null", "[]", '{"startTimestamp":', "\u0000", "\ufeff{}").map((s) => Buffer.from(s)),
  fc.integer({ min: 60_000, max: 70_000 }).map((n) => Buffer.from(`{"pad":"${"x".repeat(n)}"}`)),
);

/** Extra headers: random names and values, and sometimes a large one well under the 16 KiB header limit. */
const extraHeadersArb = fc.record({
  random: fc.dictionary(
    fc.stringMatching(/^x-[a-z0-9-]{1,20}$/),
    fc.stringMatching(/^[\x21-\x7e][\x20-\x7e]{0,100}$/),
    { maxKeys: 5 },
  ),
  padBytes: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 12_000 })),
  acceptEncoding: fc.option(fc.constantFrom("gzip", "gzip;q=0", "*", "br", "identity", "gzip, deflate"), {
    nil: undefined,
  }),
  chunked: fc.boolean(),
});

interface RestCase {
  method: string;
  path: string;
  contentType: string | undefined;
  auth: { keyed: boolean; value: () => string | undefined };
  body: Buffer;
  extra: { random: Record<string, string>; padBytes: number; acceptEncoding: string | undefined; chunked: boolean };
}

/** Period fields that pass or nearly pass validation, so the property also reaches the query. */
const nearlyValidBodyArb: fc.Arbitrary<Buffer> = fc
  .record({
    startTimestamp: fc.oneof(fc.integer({ min: 1733115600, max: 1800000000 }), fieldValueArb),
    endTimestamp: fc.integer({ min: 1733115600, max: 1800000000 }),
    numUsers: fc.oneof(fc.integer({ min: 1, max: 100 }), fc.integer({ min: -5, max: 200 })),
  })
  .map((o) => Buffer.from(JSON.stringify(o)));

const restCaseArb: fc.Arbitrary<RestCase> = fc.oneof(
  // Anything at all.
  fc.record({
    method: methodArb,
    path: pathArb,
    contentType: contentTypeArb,
    auth: authArb,
    body: fc.oneof(bodyArb, nearlyValidBodyArb),
    extra: extraHeadersArb,
  }),
  // A well-formed call with the key, perturbed in its body and headers only.
  fc.record({
    method: fc.constant("POST"),
    path: fc.constantFrom(OPERATION, `${OPERATION}/`, `/${OPERATION}`),
    contentType: fc.constantFrom("application/json", "application/json; charset=utf-8", "Application/JSON"),
    auth: fc.constantFrom(
      { keyed: true, value: () => `Bearer ${key}` },
      { keyed: true, value: () => `bearer   ${key}  ` },
    ),
    body: fc.oneof(nearlyValidBodyArb, bodyArb),
    extra: extraHeadersArb,
  }),
);

/** Every kind of REST answer the properties must have reached at least once. */
function expectExplored() {
  for (const status of [200, 400, 401, 404, 405, 413, 415]) {
    expect(seen.get(`REST ${status}`) ?? 0, `REST ${status} answers`).toBeGreaterThan(0);
  }
}

function headersOf(c: RestCase): Record<string, string> {
  const headers: Record<string, string> = { ...c.extra.random };
  if (c.contentType !== undefined) headers["content-type"] = c.contentType;
  const authorization = c.auth.value();
  if (authorization !== undefined) headers.authorization = authorization;
  if (c.extra.padBytes > 0) headers["x-pad"] = "p".repeat(c.extra.padBytes);
  if (c.extra.acceptEncoding !== undefined) headers["accept-encoding"] = c.extra.acceptEncoding;
  return headers;
}

// ------------------------------------------------------------------ checks

interface Answer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
}

function describeCase(c: RestCase): string {
  return `${c.method} ${c.path.slice(0, 100)} ct=${JSON.stringify(c.contentType)} keyed=${c.auth.keyed} body=${c.body.length}B pad=${c.extra.padBytes}`;
}

/** The REST answer is the envelope, with the headers its status promises, and never a 5xx. */
function checkRestAnswer(c: RestCase, answer: Answer) {
  const label = describeCase(c);
  count(`REST ${answer.status}`);
  expect(answer.status, label).toBeLessThan(500);
  expect(answer.headers["content-type"], label).toBe("application/json; charset=utf-8");
  if (c.method.toUpperCase() === "HEAD" && answer.body.length === 0) return;
  let body = answer.body;
  if (answer.headers["content-encoding"] === "gzip") body = zlibGunzip(body);
  let json: unknown;
  try {
    json = JSON.parse(body.toString("utf8"));
  } catch {
    throw new Error(`${label}: answer ${answer.status} is not JSON: ${body.toString("utf8").slice(0, 200)}`);
  }
  expect(envelopeProblems(answer.status, json), `${label}: ${JSON.stringify(json).slice(0, 300)}`).toEqual([]);
  const code = (json as { errors: { code: string }[] | null }).errors?.[0]?.code;
  if (answer.status === 401) expect(answer.headers["www-authenticate"], label).toBe('Bearer realm="topwagers"');
  if (answer.status === 405) expect(answer.headers.allow, label).toBe("POST");
  if (answer.status === 429) expect(Number(answer.headers["retry-after"]), label).toBeGreaterThanOrEqual(1);
  if (code !== undefined) count(`REST code ${code}`);
}

function http1Rest(c: RestCase): Promise<Answer> {
  const address = c.auth.keyed ? KEYED_ADDRESS : KEYLESS_ADDRESS;
  let agent = agents.get(address);
  if (agent === undefined) {
    agent = new http.Agent({ keepAlive: true, maxSockets: 4, localAddress: address });
    agents.set(address, agent);
  }
  return new Promise((resolve, reject) => {
    // Framing is always explicit: Node's client sends a GET or HEAD body without Content-Length otherwise.
    const chunked = c.extra.chunked && c.body.length > 1;
    const headers = {
      ...headersOf(c),
      ...(chunked ? { "transfer-encoding": "chunked" } : { "content-length": String(c.body.length) }),
    };
    const request = http.request(
      { host: "127.0.0.1", port: server.port, method: c.method, path: c.path, headers, agent },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }),
        );
        response.on("error", reject);
      },
    );
    request.on("error", (error) => reject(new Error(`${describeCase(c)}: ${error.message}`)));
    if (chunked) {
      request.write(c.body.subarray(0, c.body.length >> 1));
      request.end(c.body.subarray(c.body.length >> 1));
    } else {
      request.end(c.body);
    }
  });
}

let h2Keyed: http2.ClientHttp2Session | undefined;
let h2Keyless: http2.ClientHttp2Session | undefined;

function h2Session(keyed: boolean): http2.ClientHttp2Session {
  const current = keyed ? h2Keyed : h2Keyless;
  if (current !== undefined && !current.closed && !current.destroyed) return current;
  const session = http2.connect(server.baseUrl, {
    createConnection: () =>
      net.connect({ host: "127.0.0.1", port: server.port, localAddress: keyed ? KEYED_ADDRESS : KEYLESS_ADDRESS }),
  });
  session.on("error", () => {});
  sessions.push(session);
  if (keyed) h2Keyed = session;
  else h2Keyless = session;
  return session;
}

function h2Rest(c: RestCase): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const stream = h2Session(c.auth.keyed).request(
      { ":method": c.method, ":path": c.path, ...headersOf(c) },
      { endStream: false },
    );
    let status = 0;
    let headers: http.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on("response", (h) => {
      status = Number(h[":status"]);
      headers = h as http.IncomingHttpHeaders;
    });
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("end", () => resolve({ status, headers, body: Buffer.concat(chunks) }));
    stream.on("error", (error) => reject(new Error(`${describeCase(c)}: h2 ${error.message} rst=${stream.rstCode}`)));
    stream.end(c.body);
  });
}

// ------------------------------------------------------------------ setup

beforeAll(async () => {
  database = await createTestDatabase("fuzz");
  await addUsers(database.db, [
    { id: "u-f1", affiliateId: "aff-fz", username: "fuzzy", avatar: "" },
    { id: "u-f2", affiliateId: "aff-fz", username: "wuzzy", avatar: "https://img.example/w.png" },
  ]);
  await addWagers(database.db, [wager("u-f1", "1.5", JAN_1_2025 + 10), wager("u-f2", "99", JAN_1_2025 + 3600)]);
  key = (await createKey(database.db, "aff-fz")).secret;
  server = await startServerProcess({ DATABASE_URL: database.url, RATE_LIMIT_POINTS: "1000000000" });
  // The key is known to the server before any bad key arrives from the same address (as in real use).
  await expectStillServing();
}, 60_000);

afterAll(async () => {
  for (const agent of agents.values()) agent.destroy();
  for (const session of sessions) session.destroy();
  for (const manager of managers) manager.abort();
  await server?.stop("SIGTERM");
  await database?.drop();
  console.log(`fuzz answers seen: ${[...seen].map(([label, n]) => `${label} ×${n}`).join(", ")}`);
});

async function expectStillServing() {
  const health = await fetch(`${server.baseUrl}/healthz`);
  expect(health.status).toBe(200);
  const ok = await fetch(`${server.baseUrl}${OPERATION}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ startTimestamp: JAN_1_2025, endTimestamp: JAN_1_2025 + 86_399, numUsers: 5 }),
  });
  expect(await ok.json()).toEqual({
    data: [
      { username: "wuzzy", avatar: "https://img.example/w.png", totalWagered: 99 },
      { username: "fuzzy", avatar: "https://www.gravatar.com/avatar/?d=mp&s=256", totalWagered: 1.5 },
    ],
    errors: null,
  });
  expect(server.child.exitCode).toBeNull();
  expect(server.otherOutput).toEqual([]);
  expect(server.logs.filter((line) => typeof line.level === "number" && line.level >= 50)).toEqual([]);
}

// ------------------------------------------------------------------ properties

/** Raw bytes on a fresh HTTP/1.1 connection; resolves with everything the server sent until it closed. */
function rawExchange(bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: "127.0.0.1", port: server.port, localAddress: KEYLESS_ADDRESS });
    let received = "";
    socket.setTimeout(5_000, () => reject(new Error(`no close after ${JSON.stringify(received)}`)));
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("latin1");
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(received));
    socket.write(bytes);
  });
}

function envelopeReply(status: string, code: string, message: string): string {
  const body = JSON.stringify({ data: null, errors: [{ code, message }] });
  return (
    `HTTP/1.1 ${status}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${body.length}\r\n` +
    `cache-control: no-store\r\nconnection: close\r\n\r\n${body}`
  );
}

describe("requests Node's HTTP/1.1 parser refuses", () => {
  it("answers an unknown method, a garbled request and headers over 16 KiB in the envelope, then closes", async () => {
    expect(await rawExchange(`FROB ${OPERATION} HTTP/1.1\r\nhost: x\r\n\r\n`)).toBe(
      envelopeReply("400 Bad Request", "invalid_argument", "malformed HTTP request"),
    );
    expect(await rawExchange("\u0000\u0001garbage\r\n\r\n")).toBe(
      envelopeReply("400 Bad Request", "invalid_argument", "malformed HTTP request"),
    );
    expect(
      await rawExchange(`POST ${OPERATION} HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\n{}`),
    ).toBe(envelopeReply("400 Bad Request", "invalid_argument", "malformed HTTP request"));
    expect(await rawExchange(`POST ${OPERATION} HTTP/1.1\r\nhost: x\r\nx-pad: ${"p".repeat(20_000)}\r\n\r\n`)).toBe(
      envelopeReply(
        "431 Request Header Fields Too Large",
        "request_header_fields_too_large",
        "request headers are larger than 16384 bytes",
      ),
    );
    await expectStillServing();
  });
});

describe("protobuf binary that does not parse", () => {
  const garbage = Uint8Array.from([0]);

  it("is invalid_argument (400) over Connect, not internal (500)", async () => {
    const response = await fetch(`${server.baseUrl}${PROCEDURE}`, {
      method: "POST",
      headers: { "content-type": "application/proto", authorization: `Bearer ${key}` },
      body: garbage,
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      code: "invalid_argument",
      message: "the request message is not valid protobuf binary",
      details: connectDetails(
        errorInfo("MALFORMED_REQUEST"),
        badRequest(["", "the request message is not valid protobuf binary"]),
      ),
    });
  });

  it("is INVALID_ARGUMENT over gRPC", async () => {
    const session = http2.connect(server.baseUrl);
    session.on("error", () => {});
    sessions.push(session);
    const framed = Buffer.from([0, 0, 0, 0, 1, 0]);
    const trailers = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
      const stream = session.request(grpcStreamHeaders(key, "application/grpc"));
      let seen: http2.IncomingHttpHeaders = {};
      stream.on("response", (headers) => {
        if (headers["grpc-status"] !== undefined) seen = headers;
      });
      stream.on("trailers", (t) => {
        seen = t;
      });
      stream.on("data", () => {});
      stream.on("end", () => resolve(seen));
      stream.on("error", reject);
      stream.end(framed);
    });
    expect([trailers["grpc-status"], trailers["grpc-message"]]).toEqual([
      String(Code.InvalidArgument),
      "the%20request%20message%20is%20not%20valid%20protobuf%20binary",
    ]);
  });
});

describe("the REST path under arbitrary input", () => {
  it("HTTP/1.1: always the envelope, never a 5xx", async () => {
    await fc.assert(
      fc.asyncProperty(restCaseArb, async (c) => checkRestAnswer(c, await http1Rest(c))),
      { numRuns: RUNS, interruptAfterTimeLimit: 40_000 },
    );
    expectExplored();
    await expectStillServing();
  }, 60_000);

  it("HTTP/2 (h2c): always the envelope, never a 5xx", async () => {
    await fc.assert(
      fc.asyncProperty(restCaseArb, async (c) => checkRestAnswer(c, await h2Rest(c))),
      { numRuns: RUNS, interruptAfterTimeLimit: 40_000 },
    );
    await expectStillServing();
  }, 60_000);
});

describe("the RPC path under arbitrary input", () => {
  const int64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
  const requestArb = fc.record({
    startTimestamp: fc.option(fc.oneof(int64, fc.bigInt({ min: 1733115600n, max: 1800000000n })), { nil: undefined }),
    endTimestamp: fc.option(fc.oneof(int64, fc.bigInt({ min: 1733115600n, max: 1800000000n })), { nil: undefined }),
    numUsers: fc.option(fc.oneof(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), fc.integer({ min: 0, max: 101 })), {
      nil: undefined,
    }),
  });

  it("connect-es, JSON and binary: ok or invalid_argument, never another code", async () => {
    const transports = [
      createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1", useBinaryFormat: false }),
      createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1", useBinaryFormat: true }),
    ];
    const clients = transports.map((t) => createClient(TopWagersService, t));
    await fc.assert(
      fc.asyncProperty(requestArb, fc.integer({ min: 0, max: 1 }), async (fields, which) => {
        const request = create(GetTopAffiliateWagersByPeriodRequestSchema, fields);
        try {
          const response = await (clients[which] as (typeof clients)[number]).getTopAffiliateWagersByPeriod(request, {
            headers: { authorization: `Bearer ${key}` },
            timeoutMs: 10_000,
          });
          count("RPC ok");
          expect(response.data.length).toBeLessThanOrEqual(fields.numUsers ?? 0);
        } catch (reason) {
          const error = ConnectError.from(reason);
          count(`RPC ${Code[error.code]}`);
          expect({
            fields: String(JSON.stringify(fields, (_k, v) => (typeof v === "bigint" ? String(v) : v))),
            code: Code[error.code],
          }).toEqual({
            fields: String(JSON.stringify(fields, (_k, v) => (typeof v === "bigint" ? String(v) : v))),
            code: "InvalidArgument",
          });
          expect(error.rawMessage).not.toMatch(/[:]/);
        }
      }),
      { numRuns: RUNS, interruptAfterTimeLimit: 30_000 },
    );
    await expectStillServing();
  }, 60_000);

  it("random bytes as a Connect body (proto and JSON, with and without the key): a Connect error or success, never 5xx", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 512 }),
        fc.constantFrom(
          "application/proto",
          "application/json",
          "application/proto; charset=utf-8",
          "application/connect+proto",
        ),
        fc.boolean(),
        async (bytes, contentType, keyed) => {
          const response = await fetch(`${server.baseUrl}${PROCEDURE}`, {
            method: "POST",
            headers: {
              "content-type": contentType,
              "connect-protocol-version": "1",
              ...(keyed ? { authorization: `Bearer ${key}` } : {}),
            },
            body: bytes,
          });
          const text = await response.text();
          count(`Connect bytes ${response.status}`);
          const label = `${contentType} keyed=${keyed} ${bytes.length}B -> ${response.status} ${text.slice(0, 200)}`;
          expect(response.status, label).toBeLessThan(500);
          if (response.status === 200) return;
          if (response.status === 415) {
            // The Connect protocol answers a media type it does not serve with 415 and no body.
            expect(["application/connect+proto", "application/proto; charset=utf-8"], label).toContain(contentType);
            expect(text, label).toBe("");
            return;
          }
          const error = JSON.parse(text) as { code?: string; message?: string };
          expect(CONNECT_CODES.has(error.code ?? ""), label).toBe(true);
          expect(error.code, label).toBe(
            keyed ? "invalid_argument" : response.status === 429 ? "resource_exhausted" : "unauthenticated",
          );
        },
      ),
      { numRuns: RUNS, interruptAfterTimeLimit: 30_000 },
    );
    await expectStillServing();
  }, 60_000);

  it("random gRPC frames over h2c: HTTP 200 and a gRPC status, ok or invalid_argument (INTERNAL only as the gRPC spec asks)", async () => {
    const session = http2.connect(server.baseUrl);
    session.on("error", () => {});
    sessions.push(session);
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 512 }),
        fc.oneof(fc.constant("valid"), fc.constant("lying-length"), fc.constant("compressed-flag"), fc.constant("raw")),
        async (payload, framing) => {
          let body: Buffer;
          if (framing === "raw") body = Buffer.from(payload);
          else {
            body = Buffer.alloc(5 + payload.length);
            body.writeUInt8(framing === "compressed-flag" ? 1 : 0, 0);
            body.writeUInt32BE(framing === "lying-length" ? payload.length + 7 : payload.length, 1);
            body.set(payload, 5);
          }
          const result = await new Promise<{ status: number; grpcStatus: string | undefined; message: string }>(
            (resolve, reject) => {
              const stream = session.request(grpcStreamHeaders(key));
              let status = 0;
              let grpcStatus: string | undefined;
              let message = "";
              stream.on("response", (headers) => {
                status = Number(headers[":status"]);
                // A trailers-only answer puts the status in the headers.
                if (headers["grpc-status"] !== undefined) {
                  grpcStatus = String(headers["grpc-status"]);
                  message = decodeURIComponent(String(headers["grpc-message"] ?? ""));
                }
              });
              stream.on("trailers", (trailers) => {
                grpcStatus = String(trailers["grpc-status"]);
                message = decodeURIComponent(String(trailers["grpc-message"] ?? ""));
              });
              stream.on("data", () => {});
              stream.on("end", () => resolve({ status, grpcStatus, message }));
              stream.on("error", (error) => reject(new Error(`${framing}: ${error.message} rst=${stream.rstCode}`)));
              stream.end(body);
            },
          );
          count(`gRPC ${framing} status ${result.grpcStatus}`);
          const label = `${framing} ${payload.length}B -> ${JSON.stringify(result)}`;
          expect(result.status, label).toBe(200);
          if (result.grpcStatus === String(Code.Internal)) {
            // The gRPC compression spec asks for INTERNAL when a message is flagged compressed without an encoding.
            expect(result.message, label).toBe("received compressed envelope, but do not know how to decompress");
          } else if (result.grpcStatus === String(Code.Unimplemented)) {
            // No message at all: connect-es says unimplemented ("missing input message for unary method").
            expect(payload.length === 0 || framing === "raw", label).toBe(true);
          } else {
            expect(["0", String(Code.InvalidArgument), String(Code.ResourceExhausted)], label).toContain(
              result.grpcStatus,
            );
          }
        },
      ),
      { numRuns: RUNS, interruptAfterTimeLimit: 30_000 },
    );
    await expectStillServing();
  }, 60_000);
});
