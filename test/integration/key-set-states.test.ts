/**
 * The in-memory key set's two in-between states, seen from outside: before its
 * first load the instance is not ready (`loading_keys`) and a keyed call is
 * 503, never a 401 for a good key; and a key whose change cannot be read again
 * (the database stalls) is 503 after half a second instead of being served in
 * its old state, so a revocation is never missed. The key reads are held back
 * by a gate in front of the real pool.
 */
import type { Pool } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPublicApp, type PublicApp } from "../../src/apps/public.js";
import { revokeApiKey } from "../../src/keys/sql/api-keys.js";
import { loadConfig } from "../../src/platform/config.js";
import { createOnePortServer, type OnePortServer } from "../../src/platform/transport/one-port-server.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { JANUARY } from "../support/dates.js";
import { createKey } from "../support/fixtures.js";
import { listenOnFreePort } from "../support/listen.js";
import { RELEASE } from "../support/release.js";
import { OPERATION } from "../support/rest.js";

let database: TestDatabase;
let app: PublicApp;
let server: OnePortServer;
let base = "";
let key: { id: string; secret: string };

/** Statements reading api_keys wait while the gate for their kind is closed. */
const gates = { load: gate(), byId: gate() };

function gate() {
  let open: () => void = () => undefined;
  let opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return {
    wait: () => opened,
    open: () => open(),
    close() {
      opened = new Promise<void>((resolve) => {
        open = resolve;
      });
    },
  };
}

function gated(pool: Pool): Pool {
  return new Proxy(pool, {
    get(target, property) {
      if (property === "query" || property === "execute") {
        return async (sql: unknown, ...rest: unknown[]) => {
          const text = typeof sql === "string" ? sql : "";
          if (text.includes("FROM api_keys") && text.includes("revoked_at IS NULL")) await gates.load.wait();
          if (text.includes("FROM api_keys") && text.includes("k.id IN")) await gates.byId.wait();
          return (target[property] as (...args: unknown[]) => unknown).call(target, sql, ...rest);
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

async function post(secret: string) {
  const response = await fetch(`${base}${OPERATION}`, {
    method: "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: JSON.stringify(JANUARY),
  });
  return { status: response.status, retryAfter: response.headers.get("retry-after"), json: await response.json() };
}

beforeAll(async () => {
  database = await createTestDatabase("key_set_states");
  key = await createKey(database.db, "aff-states");
  gates.byId.open();
  const config = loadConfig({ DATABASE_URL: database.url, RATE_LIMIT_POINTS: "100000", CACHE_TTL_MS: "0" });
  app = createPublicApp(config, { ...database.db, read: gated(database.db.read) });
  server = createOnePortServer(app.handler);
  const port = await listenOnFreePort(server.server);
  base = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  gates.load.open();
  gates.byId.open();
  app?.stopServing();
  await server?.close(5_000);
  await database?.drop();
});

describe("before the keys are loaded", () => {
  it("is not ready, and answers a good key 503 (not 401) until the load completes", async () => {
    const readyz = await fetch(`${base}/readyz`);
    expect([readyz.status, await readyz.json()]).toEqual([503, { status: "loading_keys", ...RELEASE }]);
    expect(await post(key.secret)).toEqual({
      status: 503,
      retryAfter: "1",
      json: {
        data: null,
        errors: [{ code: "unavailable", message: "the leaderboard database is unavailable right now. Retry shortly" }],
      },
    });
    gates.load.open();
    await app.keysLoaded;
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect((await post(key.secret)).status).toBe(200);
  });
});

describe("a key whose change cannot be read again", () => {
  it("is served as it was for at most half a second, then 503, then refused once the change is read", async () => {
    gates.byId.close();
    await revokeApiKey(database.db.write, key.id);
    app.changesCommitted(); // the feed sees the change now and asks for the key again (held at the gate)
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(await post(key.secret)).toEqual({
      status: 503,
      retryAfter: "1",
      json: {
        data: null,
        errors: [
          {
            code: "unavailable",
            message: "this API key changed and the change cannot be read right now. Retry shortly",
          },
        ],
      },
    });
    gates.byId.open();
    await app.caughtUp();
    expect((await post(key.secret)).status).toBe(401);
  });
});
