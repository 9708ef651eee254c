/**
 * A key change made through the ApiKeyService on one instance wakes the others
 * through Redis (the change feed's wake-ups): with the feed polled only every
 * 30 s, instance B still accepts a new key and refuses a revoked one within a
 * second of instance A answering. Two in-process instances on one database,
 * real Redis (127.0.0.1:6379), real sockets.
 */
import { createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiKeyService } from "../../gen/topwagers/v1/api_keys_pb.js";
import { createInternalApp } from "../../src/apps/internal.js";
import { createPublicApp, type PublicApp } from "../../src/apps/public.js";
import { loadConfig } from "../../src/config.js";
import { silentLogger } from "../../src/logger.js";
import { type ChangeWakeups, createChangeWakeups } from "../../src/redis/change-wakeups.js";
import { createOnePortServer, type OnePortServer } from "../../src/transport/one-port-server.js";
import { bearerConnect } from "../support/calls.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { JANUARY } from "../support/dates.js";
import { listenOnFreePort } from "../support/listen.js";
import { OPERATION } from "../support/rest.js";

const ADMIN_TOKEN = "test-admin-token-abcdef0123456789";
const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

let database: TestDatabase;
const servers: OnePortServer[] = [];
const apps: PublicApp[] = [];
const wakeups: ChangeWakeups[] = [];
let internalUrl = "";
let bUrl = "";

async function listen(handler: Parameters<typeof createOnePortServer>[0]): Promise<string> {
  const server = createOnePortServer(handler);
  servers.push(server);
  const port = await listenOnFreePort(server.server);
  return `http://127.0.0.1:${port}`;
}

async function post(base: string, secret: string): Promise<number> {
  const response = await fetch(`${base}${OPERATION}`, {
    method: "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: JSON.stringify(JANUARY),
  });
  await response.arrayBuffer();
  return response.status;
}

/** Milliseconds until `base` answers `status` for the key (polling every 20 ms), or Infinity after 5 s. */
async function msUntil(base: string, secret: string, status: number): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < 5_000) {
    if ((await post(base, secret)) === status) return performance.now() - started;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return Number.POSITIVE_INFINITY;
}

beforeAll(async () => {
  database = await createTestDatabase("key_wakeups");
  const config = loadConfig({
    DATABASE_URL: database.url,
    RATE_LIMIT_POINTS: "100000",
    CACHE_TTL_MS: "0",
    ADMIN_TOKEN,
    REDIS_URL,
    CHANGE_FEED_POLL_MS: "30000",
    CHANGE_FEED_MAX_LAG_MS: "60000",
  });
  // Instance A: public app, internal listener (ApiKeyService) announcing its commits.
  const a = createPublicApp(config, database.db);
  const b = createPublicApp(config, database.db);
  apps.push(a, b);
  const wakeA = createChangeWakeups(REDIS_URL, silentLogger, a.changesCommitted);
  const wakeB = createChangeWakeups(REDIS_URL, silentLogger, b.changesCommitted);
  wakeups.push(wakeA, wakeB);
  const internal = createInternalApp(config, database.db, {
    readiness: a.readiness,
    keys: a.keys,
    onCommitted() {
      a.changesCommitted();
      wakeA.announce();
    },
  });
  internalUrl = await listen(internal.handler);
  await listen(a.handler);
  bUrl = await listen(b.handler);
  await Promise.all([a.keysLoaded, b.keysLoaded]);
  // Both subscribers are in place before the first change.
  await new Promise((resolve) => setTimeout(resolve, 300));
});

afterAll(async () => {
  for (const app of apps) app.stopServing();
  for (const server of servers) await server.close(5_000);
  await Promise.all(wakeups.map((w) => w.close()));
  await database?.drop();
});

describe("key changes wake the other instances", () => {
  it("B accepts a key issued on A, and refuses it once revoked on A, each within 1 s although B polls every 30 s", async () => {
    const admin = createClient(ApiKeyService, bearerConnect(internalUrl, ADMIN_TOKEN));
    const created = await admin.createApiKey({ affiliateId: "aff-wake" });
    const accepted = await msUntil(bUrl, created.secret, 200);
    expect(accepted).toBeLessThan(1_000);
    await admin.revokeApiKey({ id: created.apiKey?.id ?? "" });
    const refused = await msUntil(bUrl, created.secret, 401);
    expect(refused).toBeLessThan(1_000);
  });
});
