/**
 * The public port and the internal listener of one service instance, each on
 * a real socket (127.0.0.1, port 0) over one throwaway database, wired as
 * `serve()` wires them; plus ingest clients for every protocol.
 */
import { type Client, createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import { ApiKeyService } from "../../gen/topwagers/v1/api_keys_pb.js";
import { TopWagersService } from "../../gen/topwagers/v1/top_wagers_pb.js";
import { type IngestWager, WagerIngestService } from "../../gen/topwagers/v1/wager_ingest_pb.js";
import { createInternalApp, type InternalApp, type InternalAppOptions } from "../../src/apps/internal.js";
import { createPublicApp, type PublicApp } from "../../src/apps/public.js";
import { type Config, loadConfig } from "../../src/platform/config.js";
import type { Database } from "../../src/platform/database/database.js";
import { createOnePortServer, type OnePortServer } from "../../src/platform/transport/one-port-server.js";
import { createTestDatabase, type TestDatabase } from "./database.js";
import { followKeys } from "./fixtures.js";
import { useStarted } from "./lifecycle.js";
import { listenOnFreePort } from "./listen.js";

export const TEST_INGEST_TOKEN = "test-ingest-token-0123456789abcdef";

export type IngestProtocol = "connect" | "grpc" | "grpc-web";
export const INGEST_PROTOCOLS: readonly IngestProtocol[] = ["connect", "grpc", "grpc-web"];

export interface IngestServers {
  readonly database: TestDatabase;
  /** The public app (its caches, readiness and key lookups). */
  readonly app: PublicApp;
  readonly config: Config;
  readonly internal: InternalApp;
  /** http://127.0.0.1:<internal port> */
  readonly internalUrl: string;
  /** http://127.0.0.1:<public port> */
  readonly publicUrl: string;
  /**
   * A client of the ingest service; sends `Bearer <token>` unless told otherwise (null: no header).
   * It talks to the internal listener unless given another base URL.
   */
  client(protocol?: IngestProtocol, token?: string | null, baseUrl?: string): Client<typeof WagerIngestService>;
  /** A client of the key service on the internal listener; sends `Bearer <token>` (default: ADMIN_TOKEN; null: none). */
  adminClient(token?: string | null, protocol?: IngestProtocol): Client<typeof ApiKeyService>;
  /** A gRPC client of the public read service on the public port, sending this API key. */
  publicClient(apiKey: string): Client<typeof TopWagersService>;
  close(): Promise<void>;
}

async function listen(server: OnePortServer): Promise<string> {
  const port = await listenOnFreePort(server.server);
  return `http://127.0.0.1:${port}`;
}

/** `label`: of a new throwaway database, or a database already made (it is dropped on close all the same). */
export async function startIngestServers(
  label: string | TestDatabase,
  env: Record<string, string> = { INGEST_TOKEN: TEST_INGEST_TOKEN },
  options: InternalAppOptions = {},
  /** The database as the public app sees it (a test may count its statements). */
  publicDatabase: (db: Database) => Database = (db) => db,
): Promise<IngestServers> {
  const database = typeof label === "string" ? await createTestDatabase(label) : label;
  const config = loadConfig({ RATE_LIMIT_POINTS: "100000", CACHE_TTL_MS: "0", ...env, DATABASE_URL: database.url });
  const app = createPublicApp(config, publicDatabase(database.db));
  const unfollow = followKeys(app);
  await app.keysLoaded;
  const internal = createInternalApp(config, database.db, {
    metrics: app.metrics,
    readiness: app.readiness,
    keys: app.keys,
    onCommitted: app.changesCommitted,
    races: app.races,
    ...options,
  });
  const publicServer = createOnePortServer(app.handler);
  const internalServer = createOnePortServer(internal.handler);
  const publicUrl = await listen(publicServer);
  const internalUrl = await listen(internalServer);
  // HTTP/2 client sessions stay open for reuse; close them so the servers can close at once.
  const sessions: Http2SessionManager[] = [];
  /** Sends `Bearer <token>` (null: no header) over the protocol to baseUrl. */
  const transport = (protocol: IngestProtocol, token: string | null, baseUrl: string): Transport => {
    const authorize: Interceptor = (next) => async (request) => {
      if (token !== null) request.header.set("authorization", `Bearer ${token}`);
      return next(request);
    };
    const interceptors = [authorize];
    if (protocol === "grpc") {
      const sessionManager = new Http2SessionManager(baseUrl);
      sessions.push(sessionManager);
      return createGrpcTransport({ baseUrl, interceptors, sessionManager });
    }
    if (protocol === "grpc-web") return createGrpcWebTransport({ baseUrl, httpVersion: "1.1", interceptors });
    return createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors });
  };
  return {
    database,
    app,
    config,
    internal,
    internalUrl,
    publicUrl,
    client(protocol = "grpc", token: string | null = config.ingestToken ?? TEST_INGEST_TOKEN, baseUrl = internalUrl) {
      return createClient(WagerIngestService, transport(protocol, token, baseUrl));
    },
    adminClient(token: string | null = config.adminToken ?? null, protocol: IngestProtocol = "connect") {
      return createClient(ApiKeyService, transport(protocol, token, internalUrl));
    },
    publicClient(apiKey: string) {
      return createClient(TopWagersService, transport("grpc", apiKey, publicUrl));
    },
    async close() {
      unfollow();
      app.stopServing();
      for (const session of sessions) session.abort();
      await Promise.all([publicServer.close(5_000), internalServer.close(5_000)]);
      await database.drop();
    },
  };
}

/** An IngestWager message; `weightBps` left out when not given (the wager counts fully). */
export function wagerMessage(
  id: string,
  userId: string,
  amount: string,
  placedAt: number,
  weightBps?: number,
): IngestWager {
  return {
    $typeName: "topwagers.v1.IngestWager",
    id,
    userId,
    amount,
    placedAt: BigInt(placedAt),
    ...(weightBps === undefined ? {} : { weightBps }),
  };
}

/** startIngestServers for the enclosing describe (or file): started in beforeAll, closed in afterAll. */
export function useIngestServers(...args: Parameters<typeof startIngestServers>): IngestServers {
  return useStarted(
    () => startIngestServers(...args),
    (servers) => servers.close(),
  );
}
