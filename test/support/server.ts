/**
 * The real service on a real socket (127.0.0.1, port 0) over a throwaway
 * database. `close()` waits until every connection is gone, so a leaked stream
 * or socket fails the test's teardown instead of passing silently.
 */

import { createPublicApp, type PublicApp, type PublicAppOptions } from "../../src/apps/public.js";
import { type Config, loadConfig } from "../../src/platform/config.js";
import { createOnePortServer } from "../../src/platform/transport/one-port-server.js";
import { createTestDatabase, type TestDatabase } from "./database.js";
import { followKeys } from "./fixtures.js";
import { useStarted } from "./lifecycle.js";
import { listenOnFreePort } from "./listen.js";

export interface TestServer {
  readonly baseUrl: string;
  readonly port: number;
  readonly database: TestDatabase;
  readonly config: Config;
  readonly app: PublicApp;
  close(): Promise<void>;
}

export async function startTestServer(
  label: string,
  env: Record<string, string> = {},
  options: PublicAppOptions = {},
): Promise<TestServer> {
  const database = await createTestDatabase(label);
  const config = loadConfig({ RATE_LIMIT_POINTS: "100000", CACHE_TTL_MS: "0", ...env, DATABASE_URL: database.url });
  const app = createPublicApp(config, database.db, options);
  const unfollow = followKeys(app);
  await app.keysLoaded;
  const publicServer = createOnePortServer(app);
  const port = await listenOnFreePort(publicServer.server);
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    port,
    database,
    config,
    app,
    async close() {
      unfollow();
      app.stopServing();
      await publicServer.close(5_000);
      await database.drop();
    },
  };
}

/** startTestServer for the enclosing describe (or file): started in beforeAll, closed in afterAll. */
export function useTestServer(...args: Parameters<typeof startTestServer>): TestServer {
  return useStarted(
    () => startTestServer(...args),
    (server) => server.close(),
  );
}
