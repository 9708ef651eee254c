/**
 * Public apps of one fleet in the test process: on one throwaway database, each on its own port, their change feeds
 * woken through real Redis (the change feed's wake-ups), and one instance's internal listener (the ApiKeyService,
 * where an operator changes keys) announcing its commits to the others, as a fleet's instances do.
 */
import { createInternalApp } from "../../src/apps/internal.js";
import { createPublicApp, type PublicApp } from "../../src/apps/public.js";
import { loadConfig } from "../../src/platform/config.js";
import { silentLogger } from "../../src/platform/logger.js";
import { type ChangeWakeups, createChangeWakeups } from "../../src/platform/redis/change-wakeups.js";
import { createOnePortServer, type OnePortServer } from "../../src/platform/transport/one-port-server.js";
import { createTestDatabase, type TestDatabase } from "./database.js";
import { listenOnFreePort } from "./listen.js";

export const FLEET_ADMIN_TOKEN = "test-admin-token-abcdef0123456789";
const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

export interface WakingFleet {
  readonly database: TestDatabase;
  readonly apps: readonly PublicApp[];
  /** Each app's base URL, in order. */
  readonly urls: readonly string[];
  /** The internal listener of the app `adminOn`, answering FLEET_ADMIN_TOKEN. */
  readonly internalUrl: string;
  close(): Promise<void>;
}

/**
 * `count` apps with `env` added to their settings (no rate limit to speak of, no result cache); resolves once every
 * app holds the keys and every Redis subscriber is in place.
 */
export async function startWakingFleet(
  name: string,
  count: number,
  adminOn: number,
  env: Record<string, string> = {},
): Promise<WakingFleet> {
  const database = await createTestDatabase(name);
  const config = loadConfig({
    DATABASE_URL: database.url,
    RATE_LIMIT_POINTS: "100000",
    CACHE_TTL_MS: "0",
    ADMIN_TOKEN: FLEET_ADMIN_TOKEN,
    REDIS_URL,
    ...env,
  });
  const apps = Array.from({ length: count }, () => createPublicApp(config, database.db));
  const wakeups: ChangeWakeups[] = apps.map((app) =>
    createChangeWakeups(REDIS_URL, silentLogger, app.changesCommitted),
  );
  const admin = apps[adminOn] as PublicApp;
  const internal = createInternalApp(config, database.db, {
    readiness: admin.readiness,
    keys: admin.keys,
    onCommitted() {
      admin.changesCommitted();
      wakeups[adminOn]?.announce();
    },
  });
  const servers: OnePortServer[] = [];
  const listen = async (handler: Parameters<typeof createOnePortServer>[0]) => {
    const server = createOnePortServer(handler);
    servers.push(server);
    return `http://127.0.0.1:${await listenOnFreePort(server.server)}`;
  };
  const internalUrl = await listen(internal.handler);
  const urls: string[] = [];
  for (const app of apps) urls.push(await listen(app.handler));
  await Promise.all(apps.map((app) => app.keysLoaded));
  // Every subscriber is in place before the first change.
  await new Promise((resolve) => setTimeout(resolve, 300));
  return {
    database,
    apps,
    urls,
    internalUrl,
    async close() {
      for (const app of apps) app.stopServing();
      for (const server of servers) await server.close(5_000);
      await Promise.all(wakeups.map((w) => w.close()));
      await database.drop();
    },
  };
}
