/**
 * A flood of bad keys (issue 5, build item 2): an unknown key is remembered
 * briefly, so repeating it does not reach the database each time; an address
 * that keeps failing gets 429 with Retry-After instead of more lookups; other
 * addresses are untouched; and a key already found valid is never locked out
 * by the failures of its address (a proxy or NAT address shared with an
 * attacker), while revoking it still takes effect.
 *
 * In-process server on a real socket; calls come from distinct loopback
 * addresses (127.0.0.1, 127.0.0.2) so the per-address limiter can be seen.
 */
import http from "node:http";
import type { Pool } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPublicApp } from "../../src/apps/public.js";
import { generateApiKey } from "../../src/auth/api-key-secret.js";
import { loadConfig } from "../../src/config.js";
import { revokeApiKey } from "../../src/storage/api-keys.js";
import { createOnePortServer, type OnePortServer } from "../../src/transport/one-port-server.js";
import { JANUARY, OPERATION } from "../support/calls.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { createKey } from "../support/fixtures.js";
import { sleep } from "../support/processes.js";

const KEY_CACHE_TTL_MS = 300;
/** The brake's `points`: an address is braked once more than this many authentications failed. */
const BRAKE_POINTS = 5;
const UNAUTHENTICATED = {
  data: null,
  errors: [
    { code: "unauthenticated", message: "missing or invalid API key (send Authorization Bearer with your key)" },
  ],
};

let database: TestDatabase;
let server: OnePortServer;
let port = 0;
let keyLookups = 0;

/** The read pool, counting API key lookups (the SELECT by key hash). */
function countingPool(pool: Pool): Pool {
  return new Proxy(pool, {
    get(target, property) {
      if (property === "execute") {
        return (sql: unknown, ...rest: unknown[]) => {
          if (String(sql).includes("key_hash = ?")) keyLookups += 1;
          return (target.execute as (...args: unknown[]) => unknown)(sql, ...rest);
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

function call(from: string, key: string | null): Promise<Reply> {
  const body = JSON.stringify(JANUARY);
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: "127.0.0.1",
        port,
        localAddress: from,
        method: "POST",
        path: OPERATION,
        agent: false,
        headers: {
          "content-type": "application/json",
          "content-length": String(body.length),
          ...(key === null ? {} : { authorization: `Bearer ${key}` }),
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            json: JSON.parse(Buffer.concat(chunks).toString("utf8")),
          }),
        );
      },
    );
    request.on("error", reject);
    request.end(body);
  });
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

beforeAll(async () => {
  database = await createTestDatabase("failed_auth_flood");
  const config = loadConfig({ DATABASE_URL: database.url, RATE_LIMIT_POINTS: "100000", CACHE_TTL_MS: "0" });
  const app = createPublicApp(
    config,
    { ...database.db, read: countingPool(database.db.read) },
    { keyCacheTtlMs: KEY_CACHE_TTL_MS, failedAuthPolicy: { points: BRAKE_POINTS, windowSeconds: 60 } },
  );
  server = createOnePortServer(app.handler);
  await new Promise<void>((resolve) => server.server.listen(0, "127.0.0.1", resolve));
  const address = server.server.address();
  port = typeof address === "object" && address !== null ? address.port : 0;
});

afterAll(async () => {
  await server?.close(5_000);
  await database?.drop();
});

describe("a flood of bad keys", () => {
  it("looks an unknown key up once, brakes the failing address, and never a known-good key", async () => {
    const good = await createKey(database.db, "aff-flood");
    const revokedLater = await createKey(database.db, "aff-flood");
    const neverSeen = await createKey(database.db, "aff-flood");
    // Both keys are used (and so known valid) before the flood starts.
    expect((await call("127.0.0.1", good.secret)).status).toBe(200);
    expect((await call("127.0.0.1", revokedLater.secret)).status).toBe(200);
    expect(keyLookups).toBe(2);

    // The same unknown (well-formed) key six times (points + 1): six 401s, one database lookup.
    const unknown = generateApiKey().secret;
    for (let i = 0; i < BRAKE_POINTS + 1; i++) {
      const reply = await call("127.0.0.1", unknown);
      expect(reply.status).toBe(401);
      expect(reply.json).toEqual(UNAUTHENTICATED);
    }
    expect(keyLookups).toBe(3);

    // The address has used up its failures: the next bad key is braked without a lookup.
    expectAddressBrake(await call("127.0.0.1", generateApiKey().secret));
    expectAddressBrake(await call("127.0.0.1", null));
    expect(keyLookups).toBe(3);

    // Another address is untouched.
    const elsewhere = await call("127.0.0.2", generateApiKey().secret);
    expect(elsewhere.status).toBe(401);
    expect(keyLookups).toBe(4);

    // Past the key cache's lifetime, known-good keys from the braked address still get through...
    await sleep(KEY_CACHE_TTL_MS + 100);
    const stillGood = await call("127.0.0.1", good.secret);
    expect(stillGood.status).toBe(200);
    expect(stillGood.headers["ratelimit-policy"]).toBe('"default";q=100000;w=60');
    expect(keyLookups).toBe(5);
    // ...and are looked up again, so a revocation still holds for them.
    await revokeApiKey(database.db.write, revokedLater.id);
    const revoked = await call("127.0.0.1", revokedLater.secret);
    expect(revoked.status).toBe(401);
    expect(revoked.json).toEqual(UNAUTHENTICATED);
    expect(keyLookups).toBe(6);
    // Once found revoked, it is no longer known good: braked like any bad key.
    await sleep(KEY_CACHE_TTL_MS + 100);
    expectAddressBrake(await call("127.0.0.1", revokedLater.secret));
    // A valid key this server has never seen, from the braked address, waits like the bad ones
    // (the address brake cannot tell it from a guess without a lookup); from elsewhere it works.
    expectAddressBrake(await call("127.0.0.1", neverSeen.secret));
    expect((await call("127.0.0.2", neverSeen.secret)).status).toBe(200);
  });
});
