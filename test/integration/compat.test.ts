/**
 * Every reliance on a library's internals (src/compat/, one module per library), checked against the
 * installed libraries: when an upgrade breaks one, this fails here, by name,
 * instead of the service quietly answering 500s or wrong metrics.
 */
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import mysql from "mysql2/promise";
import { Histogram, Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GetTopAffiliateWagersByPeriodResponseSchema, TopWagersService } from "../../gen/topwagers/v1/top_wagers_pb.js";
import { CONNECT_PARSE_BINARY_PREFIX, reportUnparsableMessagesAsInvalid } from "../../src/compat/connect.js";
import { connectionIdentity, poolUsage } from "../../src/compat/mysql2.js";
import { responseStarted, trackConnections } from "../../src/compat/node-http.js";
import { Metrics } from "../../src/observability/metrics.js";
import { connectionOptions } from "../../src/storage/database.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { listenOnFreePort } from "../support/listen.js";

/** Serves `handler` on a loopback port for the duration of `use`. */
async function withServer(handler: http.RequestListener, use: (url: string) => Promise<void>): Promise<void> {
  const server = http.createServer(handler);
  const port = await listenOnFreePort(server);
  try {
    await use(`http://127.0.0.1:${port}`);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

describe("connect-es", () => {
  const routes = (router: ConnectRouter) =>
    router.service(TopWagersService, {
      getTopAffiliateWagersByPeriod: () => create(GetTopAffiliateWagersByPeriodResponseSchema),
    });
  const post = (url: string, body: Uint8Array) =>
    fetch(`${url}/topwagers.v1.TopWagersService/GetTopAffiliateWagersByPeriod`, {
      method: "POST",
      headers: { "content-type": "application/proto" },
      body,
    });
  // Field 1 (int64) with a varint that never ends: not valid protobuf binary.
  const garbage = Uint8Array.from([0x08, 0xff, 0xff, 0xff]);

  it(`reports a message that is not protobuf binary as internal, "${CONNECT_PARSE_BINARY_PREFIX} …"`, async () => {
    await withServer(connectNodeAdapter({ routes }) as http.RequestListener, async (url) => {
      const response = await post(url, garbage);
      const body = (await response.json()) as { code: string; message: string };
      expect([response.status, body.code]).toEqual([500, "internal"]);
      expect(body.message.startsWith(CONNECT_PARSE_BINARY_PREFIX)).toBe(true);
    });
  });

  it("lets the request gate turn that into invalid_argument through the call's abort signal", async () => {
    const handler = connectNodeAdapter({ routes, requestGate: reportUnparsableMessagesAsInvalid });
    await withServer(handler as http.RequestListener, async (url) => {
      const response = await post(url, garbage);
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({
        code: "invalid_argument",
        message: "the request message is not valid protobuf binary",
      });
      // A valid message is untouched.
      const ok = await post(
        url,
        toBinary(GetTopAffiliateWagersByPeriodResponseSchema, create(GetTopAffiliateWagersByPeriodResponseSchema)),
      );
      expect(ok.status).toBe(200);
    });
  });
});

describe("node:http", () => {
  it("keeps the response in progress on socket._httpMessage", async () => {
    const seen: boolean[] = [];
    await withServer(
      (req, res) => {
        seen.push(responseStarted(req.socket));
        res.writeHead(200, { "content-type": "text/plain" });
        res.flushHeaders();
        seen.push(responseStarted(req.socket));
        res.end("ok");
      },
      async (url) => {
        expect(await (await fetch(url)).text()).toBe("ok");
      },
    );
    expect(seen).toEqual([false, true]);
  });

  it("tracks the connections of a server that is handed them, once it is sent `listening`", async () => {
    /** Whether closeIdleConnections() closes an idle keep-alive connection of a server that never listened. */
    const closesIdle = async (track: boolean): Promise<boolean> => {
      const inner = http.createServer((_req, res) => res.end("ok"));
      if (track) trackConnections(inner);
      const outer = net.createServer((socket) => inner.emit("connection", socket));
      await new Promise<void>((resolve) => outer.listen(0, "127.0.0.1", resolve));
      const client = net.connect((outer.address() as AddressInfo).port, "127.0.0.1");
      try {
        const answered = new Promise<string>((resolve) => client.once("data", (chunk) => resolve(String(chunk))));
        client.write("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
        expect(await answered).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*Connection: keep-alive\r\n[\s\S]*ok$/);
        const closed = new Promise<boolean>((resolve) => {
          client.once("close", () => resolve(true));
          setTimeout(() => resolve(false), 500);
        });
        inner.closeIdleConnections();
        return await closed;
      } finally {
        client.destroy();
        await new Promise((resolve) => outer.close(resolve));
        inner.close();
      }
    };
    expect([await closesIdle(false), await closesIdle(true)]).toEqual([false, true]);
  });
});

describe("prom-client", () => {
  it("reads a registered object in its metric shape: the call durations read as its own Histogram's", async () => {
    const procedure = "topwagers.v1.TopWagersService/GetTopAffiliateWagersByPeriod";
    const observations: [string, number][] = [
      ["rest", 0.0004],
      ["rest", 0.003],
      ["grpc", 0.0005],
      ["rest", 0.75],
      ["rest", 3],
    ];
    const metrics = new Metrics();
    for (const [protocol, seconds] of observations) metrics.observeCall(procedure, protocol as "rest", "ok", seconds);
    // The same observations in prom-client's own Histogram, with the buckets docs/operations.md names.
    const registry = new Registry();
    const own = new Histogram({
      name: "topwagers_rpc_call_duration_seconds",
      help: "Time from the request's headers to the answer, by procedure and protocol.",
      labelNames: ["procedure", "protocol"],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    });
    for (const [protocol, seconds] of observations) own.observe({ procedure, protocol }, seconds);
    const family = (text: string) =>
      text
        .split("\n")
        .filter((line) => line.includes("topwagers_rpc_call_duration_seconds"))
        .sort();
    const expected = family(await registry.metrics());
    expect(expected).toHaveLength(2 + 2 * 15);
    expect(family(await metrics.registry.metrics())).toEqual(expected);
  });
});

describe("mysql2", () => {
  let database: TestDatabase;
  let pool: mysql.Pool;
  beforeAll(async () => {
    database = await createTestDatabase("compat");
    pool = mysql.createPool({ ...connectionOptions(database.url), connectionLimit: 1 });
  });
  afterAll(async () => {
    await pool?.end();
    await database?.drop();
  });

  it("counts a pool's connections from its private lists", async () => {
    expect(poolUsage(pool)).toEqual({ open: 0, idle: 0, waiting: 0 });
    const held = await pool.getConnection();
    expect(poolUsage(pool)).toEqual({ open: 1, idle: 0, waiting: 0 });
    const queued = pool.getConnection();
    await new Promise((resolve) => setImmediate(resolve));
    expect(poolUsage(pool)).toEqual({ open: 1, idle: 0, waiting: 1 });
    held.release();
    (await queued).release();
    expect(poolUsage(pool)).toEqual({ open: 1, idle: 1, waiting: 0 });
  });

  it("hands out the same core connection behind each new promise wrapper", async () => {
    const first = await pool.getConnection();
    const identity = connectionIdentity(first);
    first.release();
    const second = await pool.getConnection();
    expect(second).not.toBe(first);
    expect(typeof identity).toBe("object");
    expect(connectionIdentity(second)).toBe(identity);
    second.release();
  });
});
