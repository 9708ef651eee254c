/**
 * A key works the moment it is issued, on every instance (keys/core/key-catch-up.ts), and made-up keys
 * cannot make the database work for it. One running app whose change feed polls only every 60 s,
 * so nothing but the catch-up can explain a key being known; keys are written straight into the
 * database through the store, as another instance or the CLI writes them. Every statement the app
 * sends is recorded.
 *
 * - A key inserted elsewhere is accepted on its very first call, over REST and over Connect and
 *   gRPC (connect-es), with its scopes (a restricted one is refused 403, not 401).
 * - Made-up strings (wrong shape, wrong checksum, the earlier format) cost no statement at all.
 * - A burst of well-formed unknown keys costs a bounded number of change-feed reads (rounds at
 *   least 25 ms apart, whatever the number of keys) and no read of api_keys; the same keys again
 *   cost nothing.
 */
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import type { Pool } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TopWagersService } from "../../gen/topwagers/v1/top_wagers_pb.js";
import { createPublicApp, type PublicApp } from "../../src/apps/public.js";
import { generateApiKey } from "../../src/keys/core/api-key-secret.js";
import { insertApiKey } from "../../src/keys/sql/api-keys.js";
import { loadConfig } from "../../src/platform/config.js";
import { createOnePortServer, type OnePortServer } from "../../src/platform/transport/one-port-server.js";
import type { Scope } from "../../src/values/scopes.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { addBoard } from "../support/fixtures.js";
import { listenOnFreePort } from "../support/listen.js";
import { restTop } from "../support/rest.js";

const JAN = { startTimestamp: 1735689600, endTimestamp: 1738367999, numUsers: 10 };

let database: TestDatabase;
let app: PublicApp;
let server: OnePortServer;
let baseUrl: string;
const sessions: Http2SessionManager[] = [];
/** Every statement the app sent, in order. */
const statements: string[] = [];

function recording(pool: Pool): Pool {
  return new Proxy(pool, {
    get(target, property) {
      if (property === "execute" || property === "query") {
        return (sql: unknown, ...rest: unknown[]) => {
          statements.push(typeof sql === "string" ? sql : String((sql as { sql?: unknown }).sql));
          return (target[property] as (...args: unknown[]) => unknown).call(target, sql, ...rest);
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** A key written into the database as another instance or the CLI writes it (its change row included). */
async function issueElsewhere(
  kind: "secret" | "publishable" = "secret",
  scopes?: readonly Scope[],
): Promise<{ id: string; secret: string }> {
  const key = generateApiKey(kind);
  await insertApiKey(database.db.write, {
    id: key.id,
    hash: key.hash,
    affiliateExternalId: "aff-c",
    label: "elsewhere",
    rateLimit: null,
    ...(kind === "publishable" ? { publishable: true, allowedOrigins: ["https://board.example.com"] } : {}),
    ...(scopes === undefined ? {} : { scopes }),
  });
  return { id: key.id, secret: key.secret };
}

async function rest(key: string): Promise<number> {
  return (await restTop(baseUrl, key, JAN)).status;
}

/** Statements sent since `from` (an index into `statements`), by what they read. */
function since(from: number): { changeReads: number; apiKeys: number; all: number } {
  const sent = statements.slice(from);
  return {
    changeReads: sent.filter((s) => s.includes("FROM data_changes WHERE id >")).length,
    apiKeys: sent.filter((s) => s.includes("api_keys")).length,
    all: sent.length,
  };
}

beforeAll(async () => {
  database = await createTestDatabase("key_catch_up");
  await addBoard(database.db, "aff-c", [["c-1", "caught up", "", ["3.5", JAN.startTimestamp + 1]]]);
  const config = loadConfig({
    DATABASE_URL: database.url,
    RATE_LIMIT_POINTS: "100000",
    CACHE_TTL_MS: "0",
    // Only the catch-up can make a new key known within these tests.
    CHANGE_FEED_POLL_MS: "60000",
    CHANGE_FEED_MAX_LAG_MS: "120000",
  });
  const db = {
    ...database.db,
    read: recording(database.db.read),
    write: recording(database.db.write),
    leaderboard: recording(database.db.leaderboard),
  };
  // Bad keys are not braked here: every refusal is a 401, so the statements are the only difference.
  app = createPublicApp(config, db, { failedAuthPolicy: { points: 1_000_000, windowSeconds: 60 } });
  await app.caughtUp();
  server = createOnePortServer(app.handler);
  baseUrl = `http://127.0.0.1:${await listenOnFreePort(server.server)}`;
});

afterAll(async () => {
  for (const session of sessions) session.abort();
  app?.stopServing();
  await server?.close(5_000);
  await database?.drop();
});

describe("a key issued elsewhere", () => {
  it("is accepted on its very first call over REST", async () => {
    const key = await issueElsewhere();
    expect(app.keys.lookup(key.secret).found).toBe(false);
    expect(await rest(key.secret)).toBe(200);
    expect(app.keys.lookup(key.secret).found).toBe(true);
    const publishable = await issueElsewhere("publishable");
    const board = await fetch(
      `${baseUrl}/board?startTimestamp=${JAN.startTimestamp}&endTimestamp=${JAN.endTimestamp}&numUsers=10&key=${publishable.secret}`,
    );
    expect(board.status).toBe(200);
    await board.arrayBuffer();
  });

  it("is accepted on its very first call over Connect and gRPC (connect-es), and keeps its scopes", async () => {
    const h2 = new Http2SessionManager(baseUrl);
    sessions.push(h2);
    for (const transport of [
      createConnectTransport({ baseUrl, httpVersion: "1.1" }),
      createGrpcTransport({ baseUrl, sessionManager: h2 }),
    ]) {
      const client = createClient(TopWagersService, transport);
      const ask = (key: string) =>
        client.getTopAffiliateWagersByPeriod(
          { startTimestamp: BigInt(JAN.startTimestamp), endTimestamp: BigInt(JAN.endTimestamp), numUsers: 10 },
          { headers: { authorization: `Bearer ${key}` } },
        );
      const key = await issueElsewhere();
      expect((await ask(key.secret)).data.map((e) => [e.userId, e.totalWageredDecimal])).toEqual([["c-1", "3.5"]]);
      const restricted = await issueElsewhere("secret", ["races:read"]);
      const refused = await ask(restricted.secret).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect([refused?.code, refused?.rawMessage]).toEqual([
        Code.PermissionDenied,
        "this API key lacks the scope boards:read",
      ]);
    }
  });
});

describe("what unknown keys cost", () => {
  it("costs no statement at all for made-up strings (wrong shape, wrong checksum, the earlier format)", async () => {
    const good = generateApiKey().secret;
    const wrongChecksum = `${good.slice(0, -1)}${good.endsWith("A") ? "B" : "A"}`;
    const madeUp = [
      "not-a-key",
      `tw_sk_${"0".repeat(38)}`,
      wrongChecksum,
      `tw_pub_${"Z".repeat(38)}`,
      `tw_${"q".repeat(32)}`, // the earlier format: never issued any more, every one is held from the start
      `tw_sk_${"a".repeat(37)}`,
    ];
    const from = statements.length;
    const statuses = await Promise.all(Array.from({ length: 300 }, (_, i) => rest(madeUp[i % madeUp.length] ?? "")));
    expect(new Set(statuses)).toEqual(new Set([401]));
    expect(statements.slice(from)).toEqual([]);
  });

  it("costs a bounded number of change-feed reads for a burst of well-formed unknown keys, and no api_keys read", async () => {
    const keys = Array.from({ length: 500 }, (_, i) => generateApiKey(i % 2 === 0 ? "secret" : "publishable").secret);
    const from = statements.length;
    const started = performance.now();
    const statuses = await Promise.all(keys.map((key) => rest(key)));
    const elapsedMs = performance.now() - started;
    expect(new Set(statuses)).toEqual(new Set([401]));
    const cost = since(from);
    // One read of the change rows per round; rounds start at least 25 ms apart, one at a time.
    expect(cost.apiKeys).toBe(0);
    expect(cost.changeReads).toBeGreaterThanOrEqual(1);
    expect(cost.changeReads).toBeLessThanOrEqual(1 + Math.ceil(elapsedMs / 25));
    expect(cost.all).toBe(cost.changeReads);
    console.info(
      `burst of ${keys.length} well-formed unknown keys: ${cost.changeReads} change-feed reads, ` +
        `${cost.apiKeys} api_keys statements, ${Math.round(elapsedMs)} ms`,
    );
    // The same keys again: remembered as unknown, refused at once without any statement.
    const again = statements.length;
    expect(new Set(await Promise.all(keys.slice(0, 200).map((key) => rest(key))))).toEqual(new Set([401]));
    expect(statements.slice(again)).toEqual([]);
    // What an operator sees: the reads and the keys by outcome.
    const text = await app.metrics.registry.metrics();
    const sample = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, "m").exec(text)?.[1]);
    expect(sample('topwagers_api_key_unknown_total\\{outcome="remembered"\\}')).toBe(200);
    expect(sample('topwagers_api_key_unknown_total\\{outcome="overflow"\\}')).toBe(0);
    expect(sample('topwagers_api_key_unknown_total\\{outcome="waited"\\}')).toBeGreaterThanOrEqual(500);
    expect(sample("topwagers_api_key_catch_ups_total")).toBeGreaterThanOrEqual(cost.changeReads);
  });
});
