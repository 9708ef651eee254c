/**
 * A body over the public port's limit (65536 bytes) is 413 wherever the protocol has an HTTP status of its own
 * to say so: REST (payload_too_large) and Connect unary, JSON or binary (resource_exhausted naming the limit),
 * never 429, which clients retry. gRPC and gRPC-Web answer HTTP 200 by design: there it is resource_exhausted
 * naming the limit. The rate limit's own 429 (with Retry-After) stays 429, and comes first.
 */
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { describe, expect, it } from "vitest";
import { RaceService } from "../../gen/topwagers/v1/races_pb.js";
import { refusal } from "../support/calls.js";
import { createKey } from "../support/fixtures.js";
import { OPERATION } from "../support/rest.js";
import { useTestServer } from "../support/server.js";

const server = useTestServer("oversize_bodies", { RATE_LIMIT_POINTS: "5" });
const MB = 1024 * 1024;

/** CreateRace's request with a title of `bytes` characters: a body of about that size. */
const bigCreate = (bytes: number) => JSON.stringify({ rules: { slug: "big", title: "x".repeat(bytes) } });

async function post(path: string, key: string, contentType: string, body: string | Buffer) {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": contentType },
    body,
  });
  const text = await response.text();
  return { status: response.status, retryAfter: response.headers.get("retry-after"), text };
}

describe("a body over the limit", () => {
  it("is 413 on Connect unary, JSON and binary, naming the limit; 413 on REST; not 429", async () => {
    const { secret } = await createKey(server.database.db, "aff-big");
    const json = await post("/topwagers.v1.RaceService/CreateRace", secret, "application/json", bigCreate(MB));
    expect([json.status, json.retryAfter, JSON.parse(json.text)]).toEqual([
      413,
      null,
      {
        code: "resource_exhausted",
        message: `message size ${bigCreate(MB).length} is larger than configured readMaxBytes 65536`,
      },
    ]);
    const binary = await post("/topwagers.v1.RaceService/CreateRace", secret, "application/proto", Buffer.alloc(MB, 1));
    expect([binary.status, JSON.parse(binary.text).code]).toEqual([413, "resource_exhausted"]);
    const rest = await post(OPERATION, secret, "application/json", `{"pad":"${"x".repeat(MB)}"}`);
    expect([rest.status, JSON.parse(rest.text)]).toEqual([
      413,
      { data: null, errors: [{ code: "payload_too_large", message: "request body is larger than 65536 bytes" }] },
    ]);
  });

  it("is resource_exhausted naming the limit over gRPC and gRPC-Web (HTTP 200 by those protocols' design)", async () => {
    const { secret } = await createKey(server.database.db, "aff-big-grpc");
    const transports = {
      grpc: createGrpcTransport({ baseUrl: server.baseUrl }),
      "grpc-web": createGrpcWebTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" }),
    };
    const answers: Record<string, [Code, string]> = {};
    for (const [name, transport] of Object.entries(transports)) {
      const client = createClient(RaceService, transport);
      const refused = await refusal(
        client.createRace(
          { rules: { slug: "big", title: "x".repeat(200_000) } },
          { headers: { authorization: `Bearer ${secret}` } },
        ),
      );
      answers[name] = [refused.code, refused.rawMessage.replace(/size \d+ /, "size N ")];
    }
    const named: [Code, string] = [
      Code.ResourceExhausted,
      "message size N is larger than configured readMaxBytes 65536",
    ];
    expect(answers).toEqual({ grpc: named, "grpc-web": named });
  });

  it("keeps the rate limit's 429 with Retry-After, before the body's size", async () => {
    const { secret } = await createKey(server.database.db, "aff-big-limited", { points: 1, windowSeconds: 60 });
    const first = await post("/topwagers.v1.RaceService/CreateRace", secret, "application/json", bigCreate(MB));
    const second = await post("/topwagers.v1.RaceService/CreateRace", secret, "application/json", bigCreate(MB));
    expect([first.status, second.status, second.retryAfter !== null, JSON.parse(second.text).code]).toEqual([
      413,
      429,
      true,
      "resource_exhausted",
    ]);
  });
});
