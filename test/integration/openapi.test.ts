import { beforeAll, describe, expect, it } from "vitest";
import { createPublicApp, MAX_BODY_BYTES } from "../../src/apps/public.js";
import { EARLIEST_START, MAX_TIMESTAMP } from "../../src/boards/core/period-request.js";
import { loadConfig } from "../../src/platform/config.js";
import { type Database, openDatabase } from "../../src/platform/database/database.js";
import { createOnePortServer, type OnePortServer } from "../../src/platform/transport/one-port-server.js";
import { DEC_1, NOV_16 } from "../support/dates.js";
import { createKey } from "../support/fixtures.js";
import { addHalfMonthExample } from "../support/half-month-example.js";
import { listenOnFreePort } from "../support/listen.js";
import { type Json, type ObservedResponse, OpenApiChecker } from "../support/openapi.js";
import { freePort } from "../support/processes.js";
import { startTestServer, useTestServer } from "../support/server.js";

const OP = "/top-affiliate-wagers-by-period";
/** The second half of November 2026, the document's first example. */
const HALF_MONTH = { startTimestamp: NOV_16, endTimestamp: DEC_1 - 1, numUsers: 10 };
/** The server's clock: noon on 1 December 2026, so the half-month ended 12 hours ago. */
const NOW = DEC_1 + 12 * 3600;
const DEFAULT_AVATAR = "https://cdn.example.test/avatars/default.png";

let checker: OpenApiChecker;

beforeAll(async () => {
  checker = await OpenApiChecker.load();
});

describe("real responses match the document", () => {
  const server = useTestServer(
    "openapi",
    { CACHE_TTL_MS: "10000", DEFAULT_AVATAR_URL: DEFAULT_AVATAR },
    { now: () => NOW, failedAuthPolicy: { points: 10_000, windowSeconds: 60 } },
  );
  let key: string;
  const seen = new Set<string>();

  /** One call with fetch; the reply is checked against the document and its status recorded. */
  async function call(
    options: {
      path?: string;
      method?: string;
      key?: string | null;
      body?: string | Uint8Array;
      contentType?: string;
    } = {},
    baseUrl = server.baseUrl,
  ): Promise<ObservedResponse & { json: Json }> {
    const headers: Record<string, string> = {};
    if (options.key != null) headers.authorization = `Bearer ${options.key}`;
    if (options.contentType !== undefined) headers["content-type"] = options.contentType;
    const response = await fetch(`${baseUrl}${options.path ?? OP}`, {
      method: options.method ?? "POST",
      headers,
      ...(options.body === undefined ? {} : { body: options.body }),
    });
    const text = await response.text();
    const observed = { status: response.status, headers: Object.fromEntries(response.headers), text };
    expect(checker.check(OP, "post", observed), `${observed.status} ${text}`).toEqual([]);
    seen.add(String(observed.status));
    return { ...observed, json: JSON.parse(text) };
  }

  const post = (body: unknown, withKey: string | null = key) =>
    call({ key: withKey, body: JSON.stringify(body), contentType: "application/json" });

  beforeAll(async () => {
    const db = server.database.db;
    key = (await createKey(db, "aff-docs")).secret;
    await addHalfMonthExample(db, "aff-docs");
  });

  it("200: the half-month example, with RateLimit and Cache-Control", async () => {
    const reply = await post(HALF_MONTH);
    expect(reply.status).toBe(200);
    expect(reply.text).toBe(
      '{"data":[' +
        '{"username":"nova_1023","avatar":"https://avatars.example.test/nova.png","totalWagered":15000.5},' +
        `{"username":"ace_1443","avatar":"${DEFAULT_AVATAR}","totalWagered":12000.75},` +
        '{"username":"blaze_1009","avatar":"https://avatars.example.test/blaze.png","totalWagered":0.00000001}' +
        '],"errors":null}',
    );
    expect(reply.headers["cache-control"]).toBe("private, max-age=1");
    expect(reply.headers["ratelimit-policy"]).toBe('"default";q=100000;w=60');
  });

  it("200: a period that has not started, data [] and no-store", async () => {
    const reply = await post({ startTimestamp: NOW + 1, endTimestamp: NOW + 3600, numUsers: 1 });
    expect(reply.text).toBe('{"data":[],"errors":null}');
    expect(reply.headers["cache-control"]).toBe("no-store");
  });

  it("400: every validation failure the document describes", async () => {
    const bodies: [unknown, number][] = [
      [{}, 3],
      [{ ...HALF_MONTH, numUsers: 0 }, 1],
      [{ ...HALF_MONTH, numUsers: 101 }, 1],
      [{ ...HALF_MONTH, startTimestamp: NOV_16 * 1000, endTimestamp: DEC_1 * 1000 - 1 }, 2],
      [{ ...HALF_MONTH, startTimestamp: EARLIEST_START - 1 }, 1],
      [{ ...HALF_MONTH, endTimestamp: NOV_16 - 1 }, 1],
      [{ ...HALF_MONTH, startTimestamp: 1733115600.5 }, 1],
      [{ ...HALF_MONTH, startTimestamp: -1 }, 1],
      [{ ...HALF_MONTH, numUsers: "ten" }, 1],
    ];
    for (const [body, problems] of bodies) {
      const reply = await post(body);
      expect(reply.status).toBe(400);
      expect(reply.json.errors).toHaveLength(problems);
    }
    for (const text of ['{"numUsers": 3,}', "", "[1, 2, 3]"]) {
      const reply = await call({ key, body: text, contentType: "application/json" });
      expect(reply.status).toBe(400);
      expect(reply.json.errors[0].field).toBeUndefined();
    }
  });

  it("400 and 200 agree with the request schema, except the two rules JSON Schema cannot say", async () => {
    const request = checker.operation(OP, "post").requestBody.content["application/json"].schema;
    const bodies: unknown[] = [
      HALF_MONTH,
      { ...HALF_MONTH, extra: true },
      { ...HALF_MONTH, numUsers: 1 },
      { ...HALF_MONTH, numUsers: 100 },
      { ...HALF_MONTH, startTimestamp: EARLIEST_START },
      { ...HALF_MONTH, endTimestamp: MAX_TIMESTAMP },
      { ...HALF_MONTH, endTimestamp: MAX_TIMESTAMP + 1 },
      { ...HALF_MONTH, startTimestamp: EARLIEST_START - 1 },
      { ...HALF_MONTH, numUsers: 0 },
      { ...HALF_MONTH, numUsers: 2.5 },
      { ...HALF_MONTH, numUsers: null },
      { startTimestamp: NOV_16, numUsers: 3 },
    ];
    for (const body of bodies) {
      const reply = await post(body);
      const schemaSays = checker.checkValue(request, body).length === 0 ? 200 : 400;
      expect(reply.status, JSON.stringify(body)).toBe(schemaSays);
    }
    // Documented in the descriptions: end before start is refused, a string of digits is tolerated.
    const endBeforeStart = { startTimestamp: NOV_16, endTimestamp: NOV_16 - 1, numUsers: 10 };
    expect(checker.checkValue(request, endBeforeStart)).toEqual([]);
    expect((await post(endBeforeStart)).status).toBe(400);
    const digits = { ...HALF_MONTH, numUsers: "10" };
    expect(checker.checkValue(request, digits)).not.toEqual([]);
    expect((await post(digits)).status).toBe(200);
  });

  it("401: no key, an unknown key, another scheme", async () => {
    for (const unknownKey of [null, `tw_${"A".repeat(32)}`]) {
      const reply = await post(HALF_MONTH, unknownKey);
      expect(reply.status).toBe(401);
    }
    const basic = await fetch(`${server.baseUrl}${OP}`, {
      method: "POST",
      headers: { authorization: "Basic dXNlcjpwYXNz", "content-type": "application/json" },
      body: JSON.stringify(HALF_MONTH),
    });
    const observed = { status: basic.status, headers: Object.fromEntries(basic.headers), text: await basic.text() };
    expect(observed.status).toBe(401);
    expect(checker.check(OP, "post", observed)).toEqual([]);
  });

  it("403: a key without boards:read, with RateLimit", async () => {
    const racesOnly = (await createKey(server.database.db, "aff-docs", null, {}, ["races:read"])).secret;
    const reply = await post(HALF_MONTH, racesOnly);
    expect([reply.status, reply.json]).toEqual([
      403,
      { data: null, errors: [{ code: "permission_denied", message: "this API key lacks the scope boards:read" }] },
    ]);
    expect(reply.headers.ratelimit).toMatch(/^"default";r=\d+;t=\d+$/);
  });

  it("404: an unknown path, any method", async () => {
    expect(
      (await call({ path: "/top-affiliate-wagers", key, body: "{}", contentType: "application/json" })).status,
    ).toBe(404);
    expect((await call({ path: "/nothing", method: "GET" })).status).toBe(404);
  });

  it("405: another method on the operation's path, with Allow", async () => {
    for (const method of ["GET", "PUT", "DELETE"]) {
      const reply = await call({ method, key });
      expect(reply.status).toBe(405);
      expect(reply.headers.allow).toBe("POST");
    }
  });

  it("413: a body over 64 KiB", async () => {
    const reply = await call({ key, body: " ".repeat(MAX_BODY_BYTES + 1), contentType: "application/json" });
    expect(reply.status).toBe(413);
  });

  it("415: text/plain, and no Content-Type at all", async () => {
    expect((await call({ key, body: JSON.stringify(HALF_MONTH), contentType: "text/plain" })).status).toBe(415);
    // A byte array body makes fetch send no Content-Type.
    const untyped = await call({ key, body: new TextEncoder().encode(JSON.stringify(HALF_MONTH)) });
    expect(untyped.status).toBe(415);
    expect(untyped.json.errors[0].message).toBe("Content-Type is required. Send application/json");
  });

  it("429: a key over its limit, with Retry-After and RateLimit", async () => {
    const limited = (await createKey(server.database.db, "aff-docs", { points: 1, windowSeconds: 60 })).secret;
    expect((await post(HALF_MONTH, limited)).status).toBe(200);
    const refused = await post(HALF_MONTH, limited);
    expect(refused.status).toBe(429);
    expect(refused.headers["retry-after"]).toBe("60");
    expect(refused.headers.ratelimit).toBe('"key";r=0;t=60');
  });

  it("429: an address sending too many invalid keys, with Retry-After only", async () => {
    const strict = await startTestServer("openapi_badkeys", {}, { failedAuthPolicy: { points: 1, windowSeconds: 60 } });
    try {
      const bad = `tw_${"B".repeat(32)}`;
      const statuses: number[] = [];
      for (let i = 0; i < 3; i += 1) {
        const reply = await call(
          { key: bad, body: JSON.stringify(HALF_MONTH), contentType: "application/json" },
          strict.baseUrl,
        );
        statuses.push(reply.status);
        if (reply.status === 429) {
          expect(reply.headers["retry-after"]).toMatch(/^[1-9]\d*$/);
          expect(reply.headers.ratelimit).toBeUndefined();
        }
      }
      // The brake's exact threshold is the limiter's business; the answers' shapes are ours.
      expect(statuses[0]).toBe(401);
      expect(statuses.at(-1)).toBe(429);
    } finally {
      await strict.close();
    }
  });

  it("503: the database is unreachable", async () => {
    // A port nobody listens on: taken from the OS, then released.
    const deadPort = await freePort();
    const url = `mysql://root@127.0.0.1:${deadPort}/tw_unreachable`;
    let database: Database | undefined;
    let unreachable: OnePortServer | undefined;
    try {
      database = await openDatabase({ url, poolSize: 1, queryTimeoutMs: 1_000 });
      unreachable = createOnePortServer(createPublicApp(loadConfig({ DATABASE_URL: url }), database).handler);
      const baseUrl = `http://127.0.0.1:${await listenOnFreePort(unreachable.server)}`;
      const reply = await call(
        { key: `tw_${"C".repeat(32)}`, body: JSON.stringify(HALF_MONTH), contentType: "application/json" },
        baseUrl,
      );
      expect(reply.status).toBe(503);
      expect(reply.headers["retry-after"]).toBe("1");
    } finally {
      await unreachable?.close(5_000);
      await database?.close();
    }
  });

  it("covered every documented status but 500", () => {
    const documented = Object.keys(checker.operation(OP, "post").responses).filter((s) => s !== "500");
    expect([...seen].sort()).toEqual(documented.sort());
  });
});
