/**
 * Opt-in OpenTelemetry tracing (issue 13): a request's W3C traceparent is
 * continued on every protocol (REST, Connect, gRPC with @grpc/grpc-js,
 * gRPC-Web), with a SERVER span for the call and CLIENT spans for its database
 * queries, as an in-memory exporter receives them. Off by default: the setting in
 * test/unit/tracing-settings.test.ts, the modules not loaded in
 * test/e2e/tracing-off-loads-nothing.test.ts.
 */

import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { create } from "@bufbuild/protobuf";
import { createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GetTopAffiliateWagersByPeriodRequestSchema, TopWagersService } from "../../gen/topwagers/v1/top_wagers_pb.js";
import { createPublicApp } from "../../src/apps/public.js";
import { loadConfig } from "../../src/platform/config.js";
import { createTracing, type Tracing } from "../../src/platform/observability/tracing.js";
import { createOnePortServer, type OnePortServer } from "../../src/platform/transport/one-port-server.js";
import { grpcJsMethod } from "../support/calls.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { addUsers, addWagers, createKey, followKeys, wager } from "../support/fixtures.js";
import { listenOnFreePort } from "../support/listen.js";

const JAN = 1735689600;
const REQUEST = { startTimestamp: JAN, endTimestamp: JAN + 86_399, numUsers: 10 };
const PROCEDURE = "topwagers.v1.TopWagersService/GetTopAffiliateWagersByPeriod";
const exporter = new InMemorySpanExporter();
let tracing: Tracing;
let database: TestDatabase;
let server: OnePortServer;
let base: string;
let port: number;
let key: string;

/** A fresh caller context: 32 hex trace id, 16 hex parent span id, sampled. */
function callerContext() {
  const traceId = randomBytes(16).toString("hex");
  const parentId = randomBytes(8).toString("hex");
  return { traceId, parentId, traceparent: `00-${traceId}-${parentId}-01` };
}

function spansOf(traceId: string): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
}

/** Waits until the trace has its server span (it ends when the response closes, just after the client sees it). */
async function serverSpanOf(traceId: string): Promise<ReadableSpan> {
  for (let i = 0; i < 100; i += 1) {
    const found = spansOf(traceId).find((s) => s.kind === 1); // SpanKind.SERVER
    if (found !== undefined) return found;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no server span for trace ${traceId}; spans: ${exporter.getFinishedSpans().map((s) => s.name)}`);
}

async function expectTraced(traceId: string, parentId: string, name: string, attributes: Record<string, unknown>) {
  const serverSpan = await serverSpanOf(traceId);
  expect(serverSpan.name).toBe(name);
  expect(serverSpan.parentSpanContext?.spanId).toBe(parentId);
  expect(serverSpan.attributes).toMatchObject(attributes);
  // The leaderboard query (CACHE_TTL_MS=0; the key comes from memory, no statement): children of the call's span.
  const queries = spansOf(traceId).filter((s) => s.kind === 2); // SpanKind.CLIENT
  expect(queries.length).toBeGreaterThanOrEqual(1);
  for (const q of queries) {
    expect(q.parentSpanContext?.spanId).toBe(serverSpan.spanContext().spanId);
    expect(q.attributes["db.system.name"]).toBe("mariadb");
    expect(q.attributes["db.namespace"]).toBe(new URL(database.url).pathname.slice(1));
    expect(String(q.attributes["db.query.text"])).toMatch(/^\s*SELECT /i);
  }
  // The query texts are parameterised: the key never appears in them.
  expect(queries.some((q) => String(q.attributes["db.query.text"]).includes("wager"))).toBe(true);
  for (const q of queries) expect(String(q.attributes["db.query.text"])).not.toContain(key);
}

async function connectCall(transport: Transport, traceparent: string) {
  const client = createClient(TopWagersService, transport);
  const response = await client.getTopAffiliateWagersByPeriod(
    create(GetTopAffiliateWagersByPeriodRequestSchema, {
      startTimestamp: BigInt(REQUEST.startTimestamp),
      endTimestamp: BigInt(REQUEST.endTimestamp),
      numUsers: REQUEST.numUsers,
    }),
    { headers: { authorization: `Bearer ${key}`, traceparent } },
  );
  return response.data.map((e) => [e.username, e.totalWageredDecimal]);
}

beforeAll(async () => {
  tracing = await createTracing({ exporter, simple: true });
  database = await createTestDatabase("tracing");
  await addUsers(database.db, [{ id: "t-u1", affiliateId: "t-aff", username: "alice", avatar: "" }]);
  await addWagers(database.db, [wager("t-u1", "3.5", JAN + 10)]);
  tracing.traceDatabase(database.db);
  const config = loadConfig({ RATE_LIMIT_POINTS: "100000", CACHE_TTL_MS: "0", DATABASE_URL: database.url });
  const app = createPublicApp(config, database.db, { tracing });
  followKeys(app);
  server = createOnePortServer(app.handler);
  port = await listenOnFreePort(server.server);
  base = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await server?.close(5_000);
  await tracing?.shutdown();
  await database?.drop();
});

describe("a caller's traceparent is continued, with spans for the call and its queries", () => {
  beforeAll(async () => {
    key = (await createKey(database.db, "t-aff")).secret;
  });

  it("REST", async () => {
    const { traceId, parentId, traceparent } = callerContext();
    const response = await fetch(`${base}/top-affiliate-wagers-by-period`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", traceparent },
      body: JSON.stringify(REQUEST),
    });
    expect(response.status).toBe(200);
    await response.text();
    await expectTraced(traceId, parentId, "POST /top-affiliate-wagers-by-period", {
      "http.request.method": "POST",
      "http.route": "/top-affiliate-wagers-by-period",
      "http.response.status_code": 200,
    });
  });

  it("every span's resource names the service and its version (service.version, issue 20)", async () => {
    const response = await fetch(`${base}/healthz`);
    await response.text();
    const version = (JSON.parse(readFileSync("package.json", "utf8")) as { version: string }).version;
    const spans = exporter.getFinishedSpans();
    expect(spans.length).toBeGreaterThan(0);
    for (const span of spans) {
      expect(span.resource.attributes).toMatchObject({ "service.name": "topwagers", "service.version": version });
    }
  });

  it("Connect (JSON over HTTP/1.1)", async () => {
    const { traceId, parentId, traceparent } = callerContext();
    const transport = createConnectTransport({ baseUrl: base, httpVersion: "1.1" });
    expect(await connectCall(transport, traceparent)).toEqual([["alice", "3.5"]]);
    await expectTraced(traceId, parentId, PROCEDURE, {
      "rpc.system": "connect_rpc",
      "rpc.service": "topwagers.v1.TopWagersService",
      "rpc.method": "GetTopAffiliateWagersByPeriod",
      "http.response.status_code": 200,
    });
  });

  it("gRPC-Web", async () => {
    const { traceId, parentId, traceparent } = callerContext();
    const transport = createGrpcWebTransport({ baseUrl: base, httpVersion: "1.1" });
    expect(await connectCall(transport, traceparent)).toEqual([["alice", "3.5"]]);
    await expectTraced(traceId, parentId, PROCEDURE, { "rpc.system": "grpc", "rpc.grpc_web": true });
  });

  it("gRPC (@grpc/grpc-js, h2c)", async () => {
    const { traceId, parentId, traceparent } = callerContext();
    const method = grpcJsMethod("GetTopAffiliateWagersByPeriod", { longs: String, defaults: true });
    const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    try {
      const metadata = new grpc.Metadata();
      metadata.set("authorization", `Bearer ${key}`);
      metadata.set("traceparent", traceparent);
      const response = await new Promise<{ data: { username: string; totalWageredDecimal: string }[] }>(
        (resolve, reject) => {
          client.makeUnaryRequest(
            method.path,
            method.requestSerialize,
            method.responseDeserialize,
            {
              startTimestamp: String(REQUEST.startTimestamp),
              endTimestamp: String(REQUEST.endTimestamp),
              numUsers: 10,
            },
            metadata,
            (error, value) => (error === null ? resolve(value as never) : reject(error)),
          );
        },
      );
      expect(response.data.map((e) => [e.username, e.totalWageredDecimal])).toEqual([["alice", "3.5"]]);
    } finally {
      client.close();
    }
    await expectTraced(traceId, parentId, PROCEDURE, {
      "rpc.system": "grpc",
      "network.protocol.version": "2.0",
      "rpc.grpc.status_code": 0,
    });
  });

  it("records no key from a URL: the live stream's span has the path without its query", async () => {
    const publishable = (
      await createKey(database.db, "t-aff", null, { publishable: true, allowedOrigins: ["https://board.example.com"] })
    ).secret;
    const { traceId, traceparent } = callerContext();
    const query = `startTimestamp=${REQUEST.startTimestamp}&endTimestamp=${REQUEST.endTimestamp}&numUsers=10`;
    const aborter = new AbortController();
    const response = await fetch(`${base}/top-affiliate-wagers-by-period/stream?${query}&key=${publishable}`, {
      headers: { traceparent },
      signal: aborter.signal,
    });
    expect(response.status).toBe(200);
    const reader = response.body?.getReader();
    let text = "";
    while (!text.includes("event: board")) {
      const chunk = await reader?.read();
      if (chunk === undefined || chunk.done) break;
      text += Buffer.from(chunk.value).toString("utf8");
    }
    aborter.abort();
    const span = await serverSpanOf(traceId);
    expect(span.attributes["url.path"]).toBe("/top-affiliate-wagers-by-period/stream");
    const recorded = JSON.stringify(spansOf(traceId).map((s) => [s.name, s.attributes, s.events]));
    expect(recorded).not.toContain(publishable);
    expect(recorded).not.toContain(publishable.slice(7, 30));
  });

  it("a request without traceparent starts its own trace", async () => {
    const before = new Set(exporter.getFinishedSpans().map((s) => s.spanContext().traceId));
    const response = await fetch(`${base}/readyz`);
    expect(response.status).toBe(200);
    await response.text();
    let span: ReadableSpan | undefined;
    for (let i = 0; i < 100 && span === undefined; i += 1) {
      span = exporter.getFinishedSpans().find((s) => s.name === "GET /readyz" && !before.has(s.spanContext().traceId));
      if (span === undefined) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(span?.parentSpanContext).toBeUndefined();
    expect(span?.spanContext().traceId).toMatch(/^[0-9a-f]{32}$/);
  });
});
