/**
 * Graceful shutdown (issue 5, build item 4): a spawned server under a steady
 * stream of concurrent calls over HTTP/1.1 keep-alive (REST), HTTP/2 with prior
 * knowledge (REST over h2c) and gRPC (connect-es), plus three requests that are
 * deliberately in the middle of their body when SIGTERM arrives (HTTP/1.1,
 * HTTP/2 and a gRPC stream). Every call started before the signal succeeds,
 * the three half-sent requests finish after it, calls started later either
 * succeed or are refused at the connection (counted apart), and the process
 * exits 0 within 10 s.
 */
import http from "node:http";
import http2 from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, type Transport } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  GetTopAffiliateWagersByPeriodRequestSchema,
  GetTopAffiliateWagersByPeriodResponseSchema,
} from "../../gen/topwagers/v1/top_wagers_pb.js";
import { grpcStreamHeaders, rpcTop, type Timed } from "../support/calls.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { JAN_1_2025, JANUARY } from "../support/dates.js";
import { addUsers, addWagers, createKey, wager } from "../support/fixtures.js";
import { exited, type ServerProcess, sleep, startServerProcess } from "../support/processes.js";
import { OPERATION } from "../support/rest.js";

const LOOPS_PER_KIND = 4;
const BODY = JSON.stringify(JANUARY);
const EXPECTED_REST = JSON.stringify({
  data: [{ username: "zed", avatar: "https://img.example/zed.png", totalWagered: 7.5 }],
  errors: null,
});

type Kind = "http1" | "h2c-rest" | "grpc" | "readyz";

interface Sample extends Timed {
  readonly kind: Kind;
  /** "ok", an HTTP status or RPC code that is not success, or "connection: <message>". */
  readonly outcome: string;
}

let database: TestDatabase;
let server: ServerProcess;
let key = "";
const samples: Sample[] = [];
let running = true;

/** A REST call's headers: the key, JSON, and the body's length. */
function restHeaders(): http.OutgoingHttpHeaders {
  return { authorization: `Bearer ${key}`, "content-type": "application/json", "content-length": String(BODY.length) };
}

/** Reads the whole response, then hands over its status and text. */
function whenAnswered(response: http.IncomingMessage, answered: (status: number | undefined, text: string) => void) {
  const chunks: Buffer[] = [];
  response.on("data", (chunk: Buffer) => chunks.push(chunk));
  response.on("end", () => answered(response.statusCode, Buffer.concat(chunks).toString("utf8")));
}

/** Reads a REST answer on an HTTP/2 stream, then hands over its outcome (restOutcome). */
function whenStreamAnswered(stream: http2.ClientHttp2Stream, answered: (outcome: string) => void) {
  let status = 0;
  const chunks: Buffer[] = [];
  stream.on("response", (headers) => {
    status = Number(headers[":status"]);
  });
  stream.on("data", (chunk: Buffer) => chunks.push(chunk));
  stream.on("end", () => answered(restOutcome(status, Buffer.concat(chunks).toString("utf8"))));
}

/** "ok" for the expected REST answer, else its status and text. */
function restOutcome(status: number | undefined, text: string): string {
  return status === 200 && text === EXPECTED_REST ? "ok" : `${status} ${text}`;
}

function http1Call(agent: http.Agent, path = OPERATION, method = "POST"): Promise<string> {
  return new Promise((resolve) => {
    const request = http.request(
      {
        host: "127.0.0.1",
        port: server.port,
        path,
        method,
        agent,
        headers: method === "POST" ? restHeaders() : {},
      },
      (response) => {
        whenAnswered(response, (status, text) =>
          resolve(path === "/readyz" ? String(status) : restOutcome(status, text)),
        );
        response.on("error", (error) => resolve(`connection: ${error.message}`));
      },
    );
    request.on("error", (error) => resolve(`connection: ${(error as NodeJS.ErrnoException).code ?? error.message}`));
    request.end(method === "POST" ? BODY : undefined);
  });
}

function h2Call(session: http2.ClientHttp2Session): Promise<string> {
  return new Promise((resolve) => {
    let stream: http2.ClientHttp2Stream;
    try {
      stream = session.request({
        ":method": "POST",
        ":path": OPERATION,
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
      });
    } catch (error) {
      resolve(`connection: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
      return;
    }
    whenStreamAnswered(stream, resolve);
    stream.on("error", (error) => {
      const code = (error as NodeJS.ErrnoException).code ?? error.message;
      // A stream reset by the server counts as refused only when it says REFUSED_STREAM (never processed).
      if (code === "ERR_HTTP2_STREAM_ERROR" && stream.rstCode !== http2.constants.NGHTTP2_REFUSED_STREAM) {
        resolve(`stream reset with code ${stream.rstCode}`);
      } else {
        resolve(
          `connection: ${code}${stream.rstCode === http2.constants.NGHTTP2_REFUSED_STREAM ? " REFUSED_STREAM" : ""}`,
        );
      }
    });
    stream.end(BODY);
  });
}

async function grpcCall(transport: Transport): Promise<string> {
  const reply = await rpcTop(transport, key);
  if (reply.code === 0) return reply.entries === 1 ? "ok" : `ok with ${reply.entries} entries`;
  // connect-es reports a refused connection or stream with the transport's words, as unavailable or (for
  // REFUSED_STREAM, a stream the server never processed) internal.
  if (
    (reply.code === Code.Unavailable || reply.code === Code.Internal) &&
    /ECONNREFUSED|ECONNRESET|NGHTTP2_REFUSED_STREAM|GOAWAY|session closed|socket hang up/i.test(reply.message)
  ) {
    return `connection: ${reply.message}`;
  }
  return `${Code[reply.code]} ${reply.message}`;
}

/** "a ×3, b ×1" */
function summarise(outcomes: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const outcome of outcomes) counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
  return [...counts].map(([outcome, n]) => `${outcome} ×${n}`).join(", ") || "none";
}

async function loop(kind: Kind, call: () => Promise<string>) {
  while (running) {
    const startedAt = performance.now();
    const outcome = await call();
    samples.push({ kind, startedAt, endedAt: performance.now(), outcome });
    if (outcome.startsWith("connection:")) await sleep(5);
  }
}

/** A REST call over HTTP/1.1 whose body is sent in two halves: `finish()` sends the rest. */
function halfSentHttp1(): { finish: () => void; result: Promise<string> } {
  const agent = new http.Agent({ keepAlive: false });
  let request: http.ClientRequest | undefined;
  const result = new Promise<string>((resolve) => {
    request = http.request(
      {
        host: "127.0.0.1",
        port: server.port,
        path: OPERATION,
        method: "POST",
        agent,
        headers: restHeaders(),
      },
      (response) => whenAnswered(response, (status, text) => resolve(restOutcome(status, text))),
    );
    request.on("error", (error) => resolve(`connection: ${error.message}`));
    request.flushHeaders();
    request.write(BODY.slice(0, 10));
  });
  return { finish: () => request?.end(BODY.slice(10)), result };
}

/** A REST call over HTTP/2 whose body is sent in two halves. */
function halfSentH2(session: http2.ClientHttp2Session): { finish: () => void; result: Promise<string> } {
  const stream = session.request({
    ":method": "POST",
    ":path": OPERATION,
    authorization: `Bearer ${key}`,
    "content-type": "application/json",
  });
  const result = new Promise<string>((resolve) => {
    whenStreamAnswered(stream, resolve);
    stream.on("error", (error) => resolve(`connection: ${error.message}`));
  });
  stream.write(BODY.slice(0, 10));
  return { finish: () => stream.end(BODY.slice(10)), result };
}

/** A gRPC call on a raw HTTP/2 stream whose length-prefixed message is sent in two halves. */
function halfSentGrpc(session: http2.ClientHttp2Session): { finish: () => void; result: Promise<string> } {
  const message = toBinary(
    GetTopAffiliateWagersByPeriodRequestSchema,
    create(GetTopAffiliateWagersByPeriodRequestSchema, {
      startTimestamp: BigInt(JANUARY.startTimestamp),
      endTimestamp: BigInt(JANUARY.endTimestamp),
      numUsers: JANUARY.numUsers,
    }),
  );
  const framed = Buffer.alloc(5 + message.length);
  framed.writeUInt32BE(message.length, 1);
  framed.set(message, 5);
  const stream = session.request(grpcStreamHeaders(key));
  const result = new Promise<string>((resolve) => {
    const chunks: Buffer[] = [];
    let grpcStatus: string | undefined;
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("trailers", (trailers) => {
      grpcStatus = String(trailers["grpc-status"]);
    });
    stream.on("end", () => {
      const body = Buffer.concat(chunks);
      if (grpcStatus !== "0" || body.length < 5) {
        resolve(`grpc-status ${grpcStatus}`);
        return;
      }
      const response = fromBinary(
        GetTopAffiliateWagersByPeriodResponseSchema,
        body.subarray(5, 5 + body.readUInt32BE(1)),
      );
      resolve(response.data.length === 1 && response.data[0]?.username === "zed" ? "ok" : "wrong answer");
    });
    stream.on("error", (error) => resolve(`connection: ${error.message}`));
  });
  stream.write(framed.subarray(0, 8));
  return { finish: () => stream.end(framed.subarray(8)), result };
}

beforeAll(async () => {
  database = await createTestDatabase("graceful_shutdown");
  await addUsers(database.db, [
    { id: "u-zed", affiliateId: "aff-gs", username: "zed", avatar: "https://img.example/zed.png" },
  ]);
  await addWagers(database.db, [wager("u-zed", "7.5", JAN_1_2025 + 1)]);
  key = (await createKey(database.db, "aff-gs")).secret;
  server = await startServerProcess({ DATABASE_URL: database.url, RATE_LIMIT_POINTS: "1000000", CACHE_TTL_MS: "0" });
}, 60_000);

afterAll(async () => {
  running = false;
  await server?.stop("SIGKILL");
  await database?.drop();
});

describe("SIGTERM during a stream of requests", () => {
  it("finishes every accepted request on HTTP/1.1, HTTP/2 and gRPC and exits 0 within 10 s", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: LOOPS_PER_KIND });
    const readyzAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const h2Session = http2.connect(server.baseUrl);
    h2Session.on("error", () => {});
    const probeSession = http2.connect(server.baseUrl);
    probeSession.on("error", () => {});
    const grpcSessions = new Http2SessionManager(server.baseUrl);
    const grpc = createGrpcTransport({ baseUrl: server.baseUrl, sessionManager: grpcSessions });
    try {
      const loops: Promise<void>[] = [];
      for (let i = 0; i < LOOPS_PER_KIND; i++) {
        loops.push(loop("http1", () => http1Call(agent)));
        loops.push(loop("h2c-rest", () => h2Call(h2Session)));
        loops.push(loop("grpc", () => grpcCall(grpc)));
      }
      loops.push(
        loop("readyz", async () => {
          const status = await http1Call(readyzAgent, "/readyz", "GET");
          await sleep(20);
          return status;
        }),
      );
      await sleep(1_500);

      // Three requests caught in the middle of their body by the signal.
      const halfSent = [halfSentHttp1(), halfSentH2(probeSession), halfSentGrpc(probeSession)];
      await sleep(200);

      const signalledAt = performance.now();
      server.child.kill("SIGTERM");
      await sleep(500);
      for (const request of halfSent) request.finish();
      const code = await exited(server.child, 10_000);
      const exitedAfterMs = performance.now() - signalledAt;
      running = false;
      await Promise.all(loops);
      const halfSentResults = await Promise.all(halfSent.map((request) => request.result));

      const work = samples.filter((s) => s.kind !== "readyz");
      const before = work.filter((s) => s.startedAt < signalledAt);
      const after = work.filter((s) => s.startedAt >= signalledAt);
      const failedBefore = before.filter((s) => s.outcome !== "ok");
      const servedAfter = after.filter((s) => s.outcome === "ok");
      const refusedAfter = after.filter((s) => s.outcome.startsWith("connection:"));
      const inFlightAtSignal = before.filter((s) => s.endedAt > signalledAt);
      const readyzAfter = samples.filter((s) => s.kind === "readyz" && s.startedAt >= signalledAt);
      console.log(
        [
          `shutdown: exit code ${code} ${Math.round(exitedAfterMs)} ms after SIGTERM (three half-sent requests held it open 500 ms)`,
          `calls started before the signal: ${before.length} (${inFlightAtSignal.length} still in flight at the signal), failed: ${failedBefore.length}`,
          `calls started after the signal: ${after.length}, served: ${servedAfter.length}, refused at the connection: ${refusedAfter.length} (${summarise(refusedAfter.map((s) => `${s.kind} ${s.outcome}`))})`,
          `by kind before the signal: ${(["http1", "h2c-rest", "grpc"] as const).map((k) => `${k} ${before.filter((s) => s.kind === k).length}`).join(", ")}`,
          `/readyz after the signal: ${summarise(readyzAfter.map((s) => s.outcome))}`,
          `half-sent requests: ${halfSentResults.join(", ")}`,
        ].join("\n"),
      );

      expect(code).toBe(0);
      expect(exitedAfterMs).toBeLessThan(10_000);
      expect(before.length).toBeGreaterThan(100);
      for (const kind of ["http1", "h2c-rest", "grpc"] as const) {
        expect(before.filter((s) => s.kind === kind).length).toBeGreaterThan(20);
      }
      expect(failedBefore.map((s) => `${s.kind} at ${Math.round(s.startedAt - signalledAt)} ms: ${s.outcome}`)).toEqual(
        [],
      );
      expect(halfSentResults).toEqual(["ok", "ok", "ok"]);
      // After the signal: served, or refused at the connection; never an error answer.
      expect(after.filter((s) => s.outcome !== "ok" && !s.outcome.startsWith("connection:"))).toEqual([]);
      // /readyz: 200 before the signal; after it, 503 (draining) or a refused connection, never an error of ours.
      for (const s of readyzAfter)
        expect(["200", "503"].includes(s.outcome) || s.outcome.startsWith("connection:")).toBe(true);
      expect(server.otherOutput).toEqual([]);
      expect(server.logs.filter((line) => typeof line.level === "number" && line.level >= 50)).toEqual([]);
      expect(server.logs.some((line) => line.msg === "stopped")).toBe(true);
    } finally {
      running = false;
      agent.destroy();
      readyzAgent.destroy();
      h2Session.destroy();
      probeSession.destroy();
      grpcSessions.abort();
    }
  }, 40_000);
});
