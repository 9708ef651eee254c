/**
 * The opt-in access log (issue 20, item 8): with ACCESS_LOG=true a real server writes one info line
 * per call, on every protocol and both listeners, with the procedure (and the path of REST and SSE
 * calls, without the query string), protocol, code, HTTP status where there is one, duration, the
 * key's id (never the secret) and the client's address. Without it: no call lines.
 */
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GetTopAffiliateWagersByPeriodRequestSchema, TopWagersService } from "../../gen/topwagers/v1/top_wagers_pb.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { addUsers, addWagers, createKey, wager } from "../support/fixtures.js";
import { type LogLine, type ServerProcess, startServerProcess } from "../support/processes.js";

const JAN = 1735689600;
const PROCEDURE = "topwagers.v1.TopWagersService/GetTopAffiliateWagersByPeriod";
const WATCH = "topwagers.v1.TopWagersService/WatchTopAffiliateWagersByPeriod";
const INGEST_TOKEN = "access-log-ingest-token-0123456789";
const PERIOD = { startTimestamp: JAN, endTimestamp: JAN + 86_399, numUsers: 5 };

let database: TestDatabase;
let key: { id: string; secret: string };
/** A publishable key: the one kind a URL may carry (?key= on the SSE stream). */
let pageKey: { id: string; secret: string };

beforeAll(async () => {
  database = await createTestDatabase("access_log");
  await addUsers(database.db, [{ id: "al-u1", affiliateId: "al-aff", username: "ann", avatar: "" }]);
  await addWagers(database.db, [wager("al-u1", "4.5", JAN + 60)]);
  key = await createKey(database.db, "al-aff");
  pageKey = await createKey(database.db, "al-aff", null, { publishable: true, allowedOrigins: [] });
});

afterAll(async () => {
  await database?.drop();
});

/** The same calls against a server: REST (ok, a bad key in the URL query too), Connect, gRPC, SSE, ingest. */
async function makeCalls(server: ServerProcess, internalPort: number): Promise<void> {
  const rest = (authorization: string, query = "") =>
    fetch(`${server.baseUrl}/top-affiliate-wagers-by-period${query}`, {
      method: "POST",
      headers: { authorization, "content-type": "application/json" },
      body: JSON.stringify(PERIOD),
    });
  expect((await rest(`Bearer ${key.secret}`)).status).toBe(200);
  const wrong = "tw_wrongwrongwrongwrongwrongwrong12";
  expect((await rest(`Bearer ${wrong}`, `?key=${key.secret}&token=${wrong}`)).status).toBe(401);
  const connect = await fetch(`${server.baseUrl}/${PROCEDURE}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json" },
    body: JSON.stringify(PERIOD),
  });
  expect(connect.status).toBe(200);
  await connect.text();
  const grpc = createClient(TopWagersService, createGrpcTransport({ baseUrl: server.baseUrl }));
  await grpc.getTopAffiliateWagersByPeriod(
    create(GetTopAffiliateWagersByPeriodRequestSchema, {
      startTimestamp: BigInt(JAN),
      endTimestamp: BigInt(JAN + 86_399),
      numUsers: 5,
    }),
    { headers: { authorization: `Bearer ${key.secret}` } },
  );
  const abort = new AbortController();
  const sse = await fetch(
    `${server.baseUrl}/top-affiliate-wagers-by-period/stream?startTimestamp=${JAN}&endTimestamp=${JAN + 86_399}&numUsers=5&key=${pageKey.secret}`,
    { signal: abort.signal },
  );
  expect(sse.status).toBe(200);
  abort.abort();
  const ingest = await fetch(`http://127.0.0.1:${internalPort}/topwagers.v1.WagerIngestService/UpsertUsers`, {
    method: "POST",
    headers: { authorization: `Bearer ${INGEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ users: [] }),
  });
  expect(ingest.status).toBe(200);
  await ingest.text();
}

async function started(env: Record<string, string>): Promise<{ server: ServerProcess; internalPort: number }> {
  const server = await startServerProcess({ DATABASE_URL: database.url, INGEST_TOKEN: INGEST_TOKEN, ...env });
  const internal = await server.waitForLog((l) => l.msg.startsWith("internal listener"));
  return { server, internalPort: Number(internal.port) };
}

describe("ACCESS_LOG=true", () => {
  let server: ServerProcess;
  let calls: LogLine[];

  beforeAll(async () => {
    const run = await started({ ACCESS_LOG: "true" });
    server = run.server;
    await makeCalls(server, run.internalPort);
    await server.waitForLog((l) => l.msg === "call" && l.procedure === "topwagers.v1.WagerIngestService/UpsertUsers");
    calls = server.logs.filter((l) => l.msg === "call");
  }, 30_000);

  afterAll(async () => {
    await server?.stop();
  });

  it("one line per call, in the usual shape, with what each protocol knows", () => {
    const shown = calls.map(({ time, durationMs, ...rest }) => {
      expect(time).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect(typeof durationMs).toBe("number");
      expect(durationMs as number).toBeGreaterThanOrEqual(0);
      expect(durationMs as number).toBeLessThan(10_000);
      return rest;
    });
    const line = { level: 30, service: "topwagers", client: "127.0.0.1", msg: "call" };
    expect(shown).toEqual([
      {
        ...line,
        procedure: PROCEDURE,
        path: "/top-affiliate-wagers-by-period",
        protocol: "rest",
        code: "ok",
        status: 200,
        keyId: key.id,
      },
      {
        ...line,
        procedure: PROCEDURE,
        path: "/top-affiliate-wagers-by-period",
        protocol: "rest",
        code: "unauthenticated",
        status: 401,
        keyId: null,
      },
      { ...line, procedure: PROCEDURE, protocol: "connect", code: "ok", keyId: key.id },
      { ...line, procedure: PROCEDURE, protocol: "grpc", code: "ok", keyId: key.id },
      {
        ...line,
        procedure: WATCH,
        path: "/top-affiliate-wagers-by-period/stream",
        protocol: "sse",
        code: "ok",
        status: 200,
        keyId: pageKey.id,
      },
      {
        ...line,
        procedure: "topwagers.v1.WagerIngestService/UpsertUsers",
        protocol: "connect",
        code: "ok",
        keyId: null,
      },
    ]);
  });

  it("never carries a key or token, not even one sent in a URL query", () => {
    const everything = server.logs.map((l) => JSON.stringify(l)).join("\n");
    expect(everything).not.toContain(key.secret);
    expect(everything).not.toContain(pageKey.secret);
    expect(everything).not.toContain("tw_wrong");
    expect(everything).not.toContain(INGEST_TOKEN);
    expect(everything).not.toContain("key=");
  });
});

describe("without ACCESS_LOG", () => {
  it("the same calls write no call lines", async () => {
    const { server, internalPort } = await started({});
    try {
      await makeCalls(server, internalPort);
    } finally {
      await server.stop();
    }
    expect(server.logs.filter((l) => l.msg === "call")).toEqual([]);
    expect(server.logs.map((l) => JSON.stringify(l)).join("\n")).not.toContain(key.secret);
    expect(server.logs.map((l) => JSON.stringify(l)).join("\n")).not.toContain(pageKey.secret);
  }, 30_000);
});
