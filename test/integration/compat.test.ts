/**
 * Every reliance on a library's internals (src/platform/compat/, one module per library), checked against the
 * installed libraries: when an upgrade breaks one, this fails here, by name,
 * instead of the service quietly answering 500s or wrong metrics.
 */
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import mysql from "mysql2/promise";
import { Histogram, Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  GetTopAffiliateWagersByPeriodRequestSchema,
  GetTopAffiliateWagersByPeriodResponseSchema,
  TopWagersService,
} from "../../gen/topwagers/v1/top_wagers_pb.js";
import {
  CALL_ENDED,
  CONNECT_END_STREAM_FLAG,
  CONNECT_PARSE_BINARY_PREFIX,
  connectEndStream,
  endCallsWithSharedReason,
  envelopeOf,
  GRPC_WEB_TRAILER_FLAG,
  grpcTrailerStatus,
  grpcWebTrailerPayload,
  reportUnparsableMessagesAsInvalid,
  timeoutMs,
} from "../../src/platform/compat/connect.js";
import { connectionIdentity, poolConnectionIds, poolUsage, wrapStatements } from "../../src/platform/compat/mysql2.js";
import { responseStarted, trackConnections } from "../../src/platform/compat/node-http.js";
import { connectionOptions } from "../../src/platform/database/database.js";
import { Metrics } from "../../src/platform/observability/metrics.js";
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

  it("ends a call that went well through its context's abort(), which the gate can give one shared reason", async () => {
    const failing = (router: ConnectRouter) =>
      router.service(TopWagersService, {
        getTopAffiliateWagersByPeriod: (request) => {
          if (request.numUsers === 13) throw new ConnectError("refused", Code.FailedPrecondition);
          return create(GetTopAffiliateWagersByPeriodResponseSchema);
        },
      });
    const signals: AbortSignal[] = [];
    const wrapped: boolean[] = [];
    const requestGate = (context: Parameters<typeof endCallsWithSharedReason>[0]) => {
      wrapped.push(endCallsWithSharedReason(context));
      signals.push(context.signal);
    };
    const handler = connectNodeAdapter({ routes: failing, requestGate });
    await withServer(handler as http.RequestListener, async (url) => {
      const ok = toBinary(
        GetTopAffiliateWagersByPeriodRequestSchema,
        create(GetTopAffiliateWagersByPeriodRequestSchema),
      );
      const refused = toBinary(
        GetTopAffiliateWagersByPeriodRequestSchema,
        create(GetTopAffiliateWagersByPeriodRequestSchema, { numUsers: 13 }),
      );
      expect((await post(url, ok)).status).toBe(200);
      expect((await post(url, ok)).status).toBe(200);
      expect((await post(url, refused)).status).toBe(400);
    });
    expect(wrapped).toEqual([true, true, true]);
    expect(signals.map((signal) => signal.aborted)).toEqual([true, true, true]);
    // Both calls that went well end with the one shared AbortError, not a new DOMException each.
    expect(signals[0]?.reason).toBe(CALL_ENDED);
    expect(signals[1]?.reason).toBe(CALL_ENDED);
    expect(CALL_ENDED.name).toBe("AbortError");
    // A call that failed keeps its own reason: the error.
    expect(signals[2]?.reason).toBeInstanceOf(ConnectError);
    expect(signals[2]?.reason).toMatchObject({ code: Code.FailedPrecondition });
  });
});

describe("connect-es's private protocol helpers (the watch procedure's own stream framing)", () => {
  it("frames an enveloped message as flags, a 4-byte big-endian length and the payload", () => {
    expect([...envelopeOf(Uint8Array.from([7, 8, 9]), 1)]).toEqual([1, 0, 0, 0, 3, 7, 8, 9]);
    expect(Buffer.isBuffer(envelopeOf(new Uint8Array(0)))).toBe(true);
    expect([CONNECT_END_STREAM_FLAG, GRPC_WEB_TRAILER_FLAG]).toEqual([0b10, 0b1000_0000]);
  });

  it("parses gRPC and Connect timeouts, without a maximum, and refuses a malformed one", () => {
    expect(timeoutMs("grpc", undefined)).toBeUndefined();
    expect(timeoutMs("grpc", "2S")).toBe(2000);
    expect(timeoutMs("grpc", "1H")).toBe(3_600_000);
    expect(timeoutMs("grpc", "1500u")).toBe(1.5);
    expect(timeoutMs("grpc", "99999999H")).toBe(99999999 * 3_600_000);
    expect(timeoutMs("connect", "250")).toBe(250);
    expect(timeoutMs("connect", "9999999999")).toBe(9999999999);
    for (const [protocol, value] of [
      ["grpc", "2s"],
      ["grpc", "123456789S"],
      ["connect", "1.5"],
      ["connect", "12345678901"],
    ] as const) {
      const error = (() => {
        try {
          timeoutMs(protocol, value);
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(ConnectError);
      expect((error as ConnectError).code).toBe(Code.InvalidArgument);
    }
  });

  it("ends a Connect stream with the end-stream JSON: {} on success, the error with its details otherwise", () => {
    expect(Buffer.from(connectEndStream(undefined)).toString("utf8")).toBe("{}");
    const error = new ConnectError("no, not now", Code.ResourceExhausted, { "x-why": "busy" });
    expect(JSON.parse(Buffer.from(connectEndStream(error)).toString("utf8"))).toEqual({
      error: { code: "resource_exhausted", message: "no, not now" },
      metadata: { "x-why": ["busy"] },
    });
  });

  it("writes gRPC's trailer status and gRPC-Web's trailer lines", () => {
    expect([...grpcTrailerStatus(undefined)]).toEqual([["grpc-status", "0"]]);
    const status = grpcTrailerStatus(new ConnectError("no, not now", Code.ResourceExhausted));
    expect(status.get("grpc-status")).toBe("8");
    expect(status.get("grpc-message")).toBe("no%2C%20not%20now");
    expect(Buffer.from(grpcWebTrailerPayload(new Headers({ "grpc-status": "0", a: "b" }))).toString("latin1")).toBe(
      "a: b\r\ngrpc-status: 0\r\n",
    );
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

  it("passes the statements of a pool and of each connection checked out of it through a wrapper, once", async () => {
    const wrapped = mysql.createPool({ ...connectionOptions(database.url), connectionLimit: 1 });
    try {
      const seen: string[] = [];
      wrapStatements(wrapped, (sql, run) => {
        seen.push(sql());
        return run();
      });
      await wrapped.query("SELECT 1");
      await wrapped.execute({ sql: "SELECT ? AS n" }, [2]);
      for (let i = 0; i < 2; i++) {
        const connection = await wrapped.getConnection();
        await connection.query("SELECT 3");
        connection.release();
      }
      expect(seen).toEqual(["SELECT 1", "SELECT ? AS n", "SELECT 3", "SELECT 3"]);
    } finally {
      await wrapped.end();
    }
  });

  it("lists the server's id of every connection a pool holds, checked out or idle", async () => {
    const two = mysql.createPool({ ...connectionOptions(database.url), connectionLimit: 2 });
    try {
      expect(poolConnectionIds(two)).toEqual([]);
      const a = await two.getConnection();
      const b = await two.getConnection();
      const ids = [a, b].map(async (c) =>
        Number((await c.query<mysql.RowDataPacket[]>("SELECT CONNECTION_ID() AS id"))[0][0]?.id),
      );
      const [idA, idB] = await Promise.all(ids);
      a.release();
      expect(poolConnectionIds(two).sort()).toEqual([idA, idB].sort());
      b.release();
    } finally {
      await two.end();
    }
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
