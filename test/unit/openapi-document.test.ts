/**
 * docs/openapi.yaml as a document, without a server: valid OpenAPI 3.1, schemas that are strict
 * JSON Schema 2020-12, examples that match their own schemas, the limits the code enforces, and a
 * checker that can fail (moved from test/integration/openapi.test.ts, which checks real responses).
 */
import SwaggerParser from "@apidevtools/swagger-parser";
import { beforeAll, describe, expect, it } from "vitest";
import {
  GetTopAffiliateWagersByPeriodRequestSchema,
  TopWagerEntrySchema,
} from "../../gen/topwagers/v1/top_wagers_pb.js";
import { MAX_BODY_BYTES } from "../../src/apps/public.js";
import { EARLIEST_START, MAX_NUM_USERS, MAX_TIMESTAMP } from "../../src/boards/core/period-request.js";
import { OPERATION_PATH, STREAM_PATH } from "../../src/boards/wire/parts/rest-paths.js";
import { type Json, type ObservedResponse, OpenApiChecker, readOpenApiDocument } from "../support/openapi.js";

const OP = "/top-affiliate-wagers-by-period";

let checker: OpenApiChecker;

beforeAll(async () => {
  checker = await OpenApiChecker.load();
});

describe("the document", () => {
  it("is valid OpenAPI 3.1 for @apidevtools/swagger-parser", async () => {
    const raw = readOpenApiDocument();
    expect(raw.openapi).toMatch(/^3\.1\.\d+$/);
    const validated = await SwaggerParser.validate(structuredClone(raw));
    expect(Object.keys(validated.paths ?? {})).toEqual([
      OP,
      `${OP}/stream`,
      "/board",
      "/races",
      "/races/{slugOrId}",
      "/races/{slugOrId}/history",
      "/races/{slugOrId}/stream",
    ]);
  });

  it("has schemas and header schemas that compile as strict JSON Schema 2020-12", () => {
    const { schemas, headers } = checker.document.components;
    for (const [name, schema] of Object.entries<Json>(schemas)) {
      expect(() => checker.checkValue(schema, null), name).not.toThrow();
    }
    for (const [name, header] of Object.entries<Json>(headers)) {
      expect(() => checker.checkValue(header.schema, "1", true), name).not.toThrow();
    }
  });

  it("has examples that match their own schemas", () => {
    const operation = checker.operation(OP, "post");
    const request = operation.requestBody.content["application/json"];
    const checked: string[] = [];
    for (const [name, example] of Object.entries<Json>(request.examples)) {
      expect(checker.checkValue(request.schema, example.value), `request example ${name}`).toEqual([]);
      checked.push(name);
    }
    for (const [status, response] of Object.entries<Json>(operation.responses)) {
      const content = response.content["application/json"];
      for (const [name, example] of Object.entries<Json>(content.examples)) {
        expect(checker.checkValue(content.schema, example.value), `${status} example ${name}`).toEqual([]);
        checked.push(`${status}:${name}`);
      }
      for (const [name, header] of Object.entries<Json>(response.headers ?? {})) {
        for (const value of header.schema.examples ?? []) {
          expect(checker.checkValue(header.schema, String(value), true), `${status} header ${name}`).toEqual([]);
        }
      }
    }
    expect(checked).toContain("secondHalfOfNovember2026");
    expect(checked.length).toBeGreaterThan(20);
  });

  it("documents the stream with the POST's fields as query parameters, and examples that match their schemas", () => {
    const stream = checker.operation(`${OP}/stream`, "get");
    const post = checker.operation(OP, "post").requestBody.content["application/json"].schema;
    const query = stream.parameters.filter((p: Json) => p.in === "query" && p.required === true);
    const rankBy = stream.parameters.find((p: Json) => p.name === "rankBy");
    expect([rankBy.in, rankBy.required, rankBy.schema.enum]).toEqual(["query", false, post.properties.rankBy.enum]);
    expect(query.map((p: Json) => [p.name, p.required, p.schema.minimum, p.schema.maximum])).toEqual(
      post.required.map((name: string) => [name, true, post.properties[name].minimum, post.properties[name].maximum]),
    );
    expect(STREAM_PATH).toBe(`${OP}/stream`);
    const checked: string[] = [];
    for (const [status, response] of Object.entries<Json>(stream.responses)) {
      for (const [mediaType, content] of Object.entries<Json>(response.content)) {
        const examples =
          content.example === undefined
            ? Object.values<Json>(content.examples ?? {}).map((e) => e.value)
            : [content.example];
        for (const example of examples) {
          expect(checker.checkValue(content.schema, example), `${status} ${mediaType}`).toEqual([]);
          checked.push(`${status} ${mediaType}`);
        }
      }
    }
    expect(checked).toEqual([
      "200 text/event-stream",
      "400 application/json",
      "429 application/json",
      "503 application/json",
    ]);
  });

  it("states the path, the limits and the field names the code and the proto use", () => {
    expect(OPERATION_PATH).toBe(OP);
    const request = checker.operation(OP, "post").requestBody.content["application/json"].schema;
    const requestFields = GetTopAffiliateWagersByPeriodRequestSchema.fields.map((f) => f.jsonName);
    // `signed` asks for a signed answer (docs/verify.md), on REST as on RPC; optional, as rankBy is.
    expect(requestFields).toEqual(["startTimestamp", "endTimestamp", "numUsers", "rankBy", "signed"]);
    expect(Object.keys(request.properties)).toEqual(requestFields);
    expect(request.properties.signed.type).toBe("boolean");
    expect(request.required).toEqual(["startTimestamp", "endTimestamp", "numUsers"]);
    expect(request.properties.rankBy.enum).toEqual(["wagered", "weighted"]);
    const { startTimestamp, endTimestamp, numUsers } = request.properties;
    expect([startTimestamp.type, startTimestamp.minimum, startTimestamp.maximum]).toEqual([
      "integer",
      EARLIEST_START,
      MAX_TIMESTAMP,
    ]);
    expect([endTimestamp.type, endTimestamp.minimum, endTimestamp.maximum]).toEqual([
      "integer",
      EARLIEST_START,
      MAX_TIMESTAMP,
    ]);
    expect([numUsers.type, numUsers.minimum, numUsers.maximum]).toEqual(["integer", 1, MAX_NUM_USERS]);
    const success = checker.operation(OP, "post").responses["200"].content["application/json"].schema;
    expect(success.properties.data.maxItems).toBe(MAX_NUM_USERS);
    const entryFields = Object.keys(success.properties.data.items.properties);
    expect(entryFields).toEqual(["username", "avatar", "totalWagered", "weightedWagered"]);
    expect(success.properties.data.items.required).toEqual(["username", "avatar", "totalWagered"]);
    const protoNames = TopWagerEntrySchema.fields.map((f) => f.jsonName);
    for (const field of entryFields) expect(protoNames).toContain(field);
    expect(checker.operation(OP, "post").requestBody.description).toContain(`at most ${MAX_BODY_BYTES} bytes`);
  });

  it("refuses what the contract forbids (the checker can fail)", () => {
    const ok: ObservedResponse = {
      status: 200,
      headers: {
        "content-type": "application/json; charset=utf-8",
        "ratelimit-policy": '"default";q=60;w=60',
        ratelimit: '"default";r=59;t=60',
        "cache-control": "private, max-age=10",
        vary: "Accept-Encoding",
      },
      text: '{"data":[{"username":"a","avatar":"https://x.test/a.png","totalWagered":1.5}],"errors":null}',
    };
    expect(checker.check(OP, "post", ok)).toEqual([]);
    const broken = (change: Partial<ObservedResponse>) => checker.check(OP, "post", { ...ok, ...change });
    expect(broken({ text: '{"data":[],"errors":[]}' })).not.toEqual([]);
    expect(
      broken({
        text: '{"data":[{"username":"a","avatar":"https://x.test/a.png","totalWagered":"1.5"}],"errors":null}',
      }),
    ).not.toEqual([]);
    expect(broken({ text: '{"data":[{"username":"a","avatar":"","totalWagered":1.5}],"errors":null}' })).not.toEqual(
      [],
    );
    expect(
      broken({
        text: '{"data":[{"username":"a","avatar":"https://x.test/a.png","totalWagered":1.5,"rank":1}],"errors":null}',
      }),
    ).not.toEqual([]);
    expect(broken({ headers: { ...ok.headers, ratelimit: undefined } })).toEqual([
      "header RateLimit is required but absent",
    ]);
    expect(broken({ headers: { ...ok.headers, "ratelimit-policy": "60;w=60" } })).not.toEqual([]);
    expect(broken({ headers: { ...ok.headers, "cache-control": "public, max-age=10" } })).not.toEqual([]);
    expect(broken({ status: 418 })).toEqual(["status 418 is not documented"]);
    const refusal = (code: string, field?: string) =>
      JSON.stringify({ data: null, errors: [{ code, message: "m", ...(field === undefined ? {} : { field }) }] });
    const error = (status: number, text: string, headers: Record<string, string> = {}) =>
      checker.check(OP, "post", {
        status,
        headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", ...headers },
        text,
      });
    expect(error(401, refusal("unauthenticated"), { "www-authenticate": 'Bearer realm="topwagers"' })).toEqual([]);
    expect(error(401, refusal("unauthenticated"))).toEqual(["header WWW-Authenticate is required but absent"]);
    expect(error(401, refusal("invalid_argument"), { "www-authenticate": 'Bearer realm="topwagers"' })).not.toEqual([]);
    expect(error(404, refusal("not_found", "numUsers"))).not.toEqual([]);
    expect(error(404, '{"data":null,"errors":[]}')).not.toEqual([]);
    expect(error(503, refusal("unavailable"), { "retry-after": "soon" })).not.toEqual([]);
    expect(error(503, refusal("unavailable"), { "retry-after": "1" })).toEqual([]);
  });
});
