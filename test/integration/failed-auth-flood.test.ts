/**
 * A flood of bad keys (issue 20 item 1): keys are held in memory, so bad keys
 * cost no database statement at all; the brake slows only an address's bad
 * keys (429 with Retry-After, one warn line when it starts), and a valid key
 * is never refused by it, even one this instance has never seen used, from
 * the braked address itself. Behind a proxy (TRUSTED_PROXIES) the brake
 * counts the forwarded client address, and never a header from an untrusted
 * peer.
 *
 * In-process server on a real socket; calls come from distinct loopback
 * addresses (127.0.0.1, 127.0.0.2, 127.0.0.3) so the per-address brake can be seen.
 */
import type http from "node:http";
import { Writable } from "node:stream";
import type { Pool } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPublicApp } from "../../src/apps/public.js";
import { generateApiKey } from "../../src/keys/core/api-key-secret.js";
import { loadConfig } from "../../src/platform/config.js";
import type { Database } from "../../src/platform/database/database.js";
import { createLogger } from "../../src/platform/logger.js";
import { createOnePortServer, type OnePortServer } from "../../src/platform/transport/one-port-server.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { JANUARY } from "../support/dates.js";
import { createKey, followKeys } from "../support/fixtures.js";
import { listenOnFreePort } from "../support/listen.js";
import { httpRequest, OPERATION } from "../support/rest.js";

/** The brake's default: an address is braked once more than 30 authentications failed in 60 s. */
const BRAKE_POINTS = 30;
const UNAUTHENTICATED = {
  data: null,
  errors: [
    { code: "unauthenticated", message: "missing or invalid API key (send Authorization Bearer with your key)" },
  ],
};

let database: TestDatabase;
const servers: OnePortServer[] = [];
let port = 0;
let proxiedPort = 0;
/** Every SQL statement the apps sent that names api_keys. */
const keyStatements: string[] = [];
const logLines: { msg: string; clientAddress?: string; level: number }[] = [];

/** A pool that records each statement naming api_keys (reads or writes, query or execute). */
function recording(pool: Pool): Pool {
  return new Proxy(pool, {
    get(target, property) {
      if (property === "execute" || property === "query") {
        return (sql: unknown, ...rest: unknown[]) => {
          const text = typeof sql === "string" ? sql : String((sql as { sql?: unknown }).sql);
          if (text.includes("api_keys")) keyStatements.push(text);
          return (target[property] as (...args: unknown[]) => unknown).call(target, sql, ...rest);
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

interface Reply {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly json: unknown;
}

async function call(from: string, key: string | null, options: { port?: number; xff?: string } = {}): Promise<Reply> {
  const reply = await httpRequest(options.port ?? port, {
    path: OPERATION,
    localAddress: from,
    headers: {
      "content-type": "application/json",
      ...(key === null ? {} : { authorization: `Bearer ${key}` }),
      ...(options.xff === undefined ? {} : { "x-forwarded-for": options.xff }),
    },
    body: JSON.stringify(JANUARY),
  });
  return { status: reply.status, headers: reply.headers, json: JSON.parse(reply.body.toString("utf8")) };
}

function expectAddressBrake(reply: Reply) {
  expect(reply.status).toBe(429);
  const retryAfter = Number(reply.headers["retry-after"]);
  expect(retryAfter).toBeGreaterThanOrEqual(59);
  expect(retryAfter).toBeLessThanOrEqual(60);
  expect(reply.json).toEqual({
    data: null,
    errors: [
      {
        code: "resource_exhausted",
        message: `too many requests with invalid API keys from this address. Retry in ${retryAfter} s`,
      },
    ],
  });
}

async function listen(env: Record<string, string>, db: Database): Promise<number> {
  const config = loadConfig({ DATABASE_URL: database.url, RATE_LIMIT_POINTS: "100000", CACHE_TTL_MS: "0", ...env });
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n")) if (line !== "") logLines.push(JSON.parse(line));
      done();
    },
  });
  const app = createPublicApp(config, db, { logger: createLogger("info", sink) });
  followKeys(app);
  await app.caughtUp();
  const server = createOnePortServer(app.handler);
  servers.push(server);
  const port = await listenOnFreePort(server.server);
  return port;
}

beforeAll(async () => {
  database = await createTestDatabase("failed_auth_flood");
  const db = { ...database.db, read: recording(database.db.read), write: recording(database.db.write) };
  port = await listen({}, db);
  proxiedPort = await listen({ TRUSTED_PROXIES: "127.0.0.1" }, db);
});

afterAll(async () => {
  for (const server of servers) await server.close(5_000);
  await database?.drop();
});

describe("a flood of bad keys", () => {
  it("never refuses a valid key, not even one never used before, from the braked address", async () => {
    // The report: 33 made-up keys from one address, then a valid key this instance had not looked up.
    const valid = await createKey(database.db, "aff-flood");
    for (let i = 0; i < 33; i++) await call("127.0.0.1", `tw_${String(i).padStart(32, "x")}`);
    const reply = await call("127.0.0.1", valid.secret);
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ data: [], errors: null });
  });

  it("costs no database statement on api_keys, however many bad keys arrive", async () => {
    const before = keyStatements.length;
    const flood: Promise<Reply>[] = [];
    for (let i = 0; i < 300; i++) {
      // Well-formed keys of every kind (checksums right), legacy ones, and garbage.
      const key =
        i % 3 === 0
          ? generateApiKey().secret
          : i % 3 === 1
            ? generateApiKey("publishable").secret
            : `tw_${i.toString(36).padStart(32, "q")}`;
      flood.push(call("127.0.0.2", key));
    }
    const statuses = new Set((await Promise.all(flood)).map((r) => r.status));
    expect(statuses).toEqual(new Set([401, 429]));
    expect(keyStatements.slice(before)).toEqual([]);
  });

  it("slows an address that sends only bad keys: 401 up to the limit, then 429 with Retry-After", async () => {
    const brakeLines = () => logLines.filter((l) => l.msg === "braking an address that keeps sending invalid API keys");
    const linesBefore = brakeLines().length;
    for (let i = 0; i < BRAKE_POINTS; i++) {
      const reply = await call("127.0.0.3", generateApiKey().secret);
      expect(reply.status).toBe(401);
      expect(reply.json).toEqual(UNAUTHENTICATED);
      expect(reply.headers["www-authenticate"]).toBe('Bearer realm="topwagers"');
    }
    expect(brakeLines().length).toBe(linesBefore);
    // The 31st failure arms the brake (one warn line); from then on the address's bad keys wait.
    expect((await call("127.0.0.3", generateApiKey().secret)).status).toBe(401);
    expectAddressBrake(await call("127.0.0.3", generateApiKey().secret));
    expectAddressBrake(await call("127.0.0.3", null));
    expectAddressBrake(await call("127.0.0.3", "not-a-key"));
    const lines = brakeLines().slice(linesBefore);
    expect(lines.map((l) => [l.level, l.clientAddress])).toEqual([[40, "127.0.0.3"]]);
    // A valid key from that address is admitted.
    const valid = await createKey(database.db, "aff-flood");
    expect((await call("127.0.0.3", valid.secret)).status).toBe(200);
  });
});

describe("behind a trusted proxy", () => {
  it("brakes the forwarded client address, not the proxy's", async () => {
    // 127.0.0.1 is the trusted proxy here; 198.51.100.7 the client behind it.
    for (let i = 0; i <= BRAKE_POINTS; i++) {
      await call("127.0.0.1", generateApiKey().secret, { port: proxiedPort, xff: "203.0.113.9, 198.51.100.7" });
    }
    expectAddressBrake(await call("127.0.0.1", null, { port: proxiedPort, xff: "198.51.100.7" }));
    // Another client behind the same proxy is not braked.
    const other = await call("127.0.0.1", generateApiKey().secret, { port: proxiedPort, xff: "198.51.100.8" });
    expect(other.status).toBe(401);
    const line = logLines.find((l) => l.clientAddress === "198.51.100.7");
    expect(line?.msg).toBe("braking an address that keeps sending invalid API keys");
  });

  it("ignores X-Forwarded-For from an untrusted peer", async () => {
    // 127.0.0.2 is not a trusted proxy: whatever address its header names, the brake counts 127.0.0.2.
    for (let i = 0; i <= BRAKE_POINTS; i++) {
      await call("127.0.0.2", generateApiKey().secret, { port: proxiedPort, xff: `192.0.2.${i}` });
    }
    expectAddressBrake(await call("127.0.0.2", null, { port: proxiedPort, xff: "192.0.2.200" }));
  });
});
