/**
 * The REST contract (docs/contract.md, "The one public operation") on a real socket over a real database: routing and header
 * tolerance, BASE_PATH, gzip, HTTP/2 with prior knowledge and the health endpoints.
 * One of the test/integration/rest-contract-*.test.ts files; the calls, constants and data are in
 * test/support/rest-contract.ts.
 */
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LATEST_SCHEMA_VERSION } from "../../src/schema/schema-migrations.js";
import { RELEASE } from "../support/release.js";
import { errorBody, invalid } from "../support/rest.js";
import * as contract from "../support/rest-contract.js";
import { startTestServer, type TestServer } from "../support/server.js";

contract.useRestContractServer();

// ---- routing and headers -----------------------------------------------------

describe("routing and header tolerance", () => {
  const body = { ...contract.OCTOBER, numUsers: 3 };
  const TOP_3 = { data: contract.OCTOBER_RANKING.slice(0, 3), errors: null };

  it.each([
    [`${contract.OP}/`],
    [`//${contract.OP.slice(1)}`],
    [`//${contract.OP.slice(1)}//`],
    [`${contract.OP}?numUsers=1`],
  ])("serves %s as the operation", async (path) => {
    const reply = await contract.nodeRequest({
      path,
      headers: { authorization: `Bearer ${contract.keys.rank}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.body.toString("utf8"))).toEqual(TOP_3);
  });

  it.each([
    ["lowercase bearer", (k: string) => `bearer ${k}`],
    ["uppercase BEARER", (k: string) => `BEARER ${k}`],
    ["spaces around the key", (k: string) => `Bearer    ${k}   `],
    ["a tab between scheme and key", (k: string) => `Bearer\t${k}`],
  ])("accepts %s", async (_name, authorization) => {
    const reply = await contract.top(null, body, { authorization: authorization(contract.keys.rank) });
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual(TOP_3);
  });

  it("accepts any header-name casing", async () => {
    const json = JSON.stringify(body);
    const reply = await contract.rawExchange(
      `POST ${contract.OP} HTTP/1.1\r\nhOsT: test\r\nAUTHORIZATION: Bearer ${contract.keys.rank}\r\n` +
        `content-TYPE: application/json\r\nCONTENT-LENGTH: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`,
    );
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.body)).toEqual(TOP_3);
    const viaNode = await contract.nodeRequest({
      path: contract.OP,
      headers: { AuThOrIzAtIoN: `bearer   ${contract.keys.rank}`, "Content-Type": "application/json" },
      body: json,
    });
    expect(viaNode.status).toBe(200);
    expect(JSON.parse(viaNode.body.toString("utf8"))).toEqual(TOP_3);
  });
});

describe("BASE_PATH prefixes the REST path", () => {
  let prefixed: TestServer;
  let key: string;
  const body = { ...contract.OCTOBER, numUsers: 10 };
  const PREFIXED_OP = `/api${contract.OP}`;
  const expected = { data: [{ username: "solo", avatar: contract.img("solo"), totalWagered: 42.42 }], errors: null };

  beforeAll(async () => {
    prefixed = await startTestServer("rest_contract_base", { BASE_PATH: "/api", CACHE_TTL_MS: "0" });
    key = await contract.oneWagerBoard(prefixed.database.db, "aff-solo", "solo", "solo", "42.42");
  });

  afterAll(async () => {
    await prefixed?.close();
  });

  it("serves the operation under the prefix, tolerating slashes", async () => {
    for (const path of [PREFIXED_OP, `${PREFIXED_OP}/`, `//api//${contract.OP.slice(1)}`]) {
      const reply = await contract.call(path, { key, body, baseUrl: prefixed.baseUrl });
      expect(reply.status).toBe(200);
      expect(reply.json).toEqual(expected);
    }
  });

  it("answers the unprefixed path with 404 pointing to the prefixed one", async () => {
    const reply = await contract.call(contract.OP, { key, body, baseUrl: prefixed.baseUrl });
    expect(reply.status).toBe(404);
    expect(reply.json).toEqual(
      errorBody({ code: "not_found", message: `no such path. The operation is POST ${PREFIXED_OP}` }),
    );
  });

  it("answers other methods under the prefix with 405", async () => {
    const reply = await contract.call(PREFIXED_OP, { method: "GET", baseUrl: prefixed.baseUrl });
    expect(reply.status).toBe(405);
    expect(reply.headers.allow).toBe("POST");
    expect(reply.json).toEqual(errorBody({ code: "method_not_allowed", message: `use POST for ${PREFIXED_OP}` }));
  });
});

// ---- transport -----------------------------------------------------------------

describe("gzip", () => {
  const json = JSON.stringify({ ...contract.OCTOBER, numUsers: 100 });
  const headers = (acceptEncoding?: string) => ({
    authorization: `Bearer ${contract.keys.rank}`,
    "content-type": "application/json",
    ...(acceptEncoding === undefined ? {} : { "accept-encoding": acceptEncoding }),
  });

  it("gzips the body when the client accepts gzip, and the bytes decode to the same JSON", async () => {
    const plain = await contract.nodeRequest({ path: contract.OP, headers: headers(), body: json });
    expect(plain.status).toBe(200);
    expect(plain.headers["content-encoding"]).toBeUndefined();
    const text = plain.body.toString("utf8");
    expect(JSON.parse(text)).toEqual({ data: contract.OCTOBER_RANKING, errors: null });
    expect(plain.headers["content-length"]).toBe(String(plain.body.length));

    for (const acceptEncoding of ["gzip", "gzip, deflate, br", "br;q=1.0, gzip;q=0.8", "*"]) {
      const zipped = await contract.nodeRequest({ path: contract.OP, headers: headers(acceptEncoding), body: json });
      expect(zipped.status).toBe(200);
      expect(zipped.headers["content-encoding"]).toBe("gzip");
      expect(zipped.headers.vary).toBe("Accept-Encoding");
      expect(zipped.headers["content-length"]).toBe(String(zipped.body.length));
      expect(zipped.body.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
      expect(gunzipSync(zipped.body).toString("utf8")).toBe(text);
    }
  });

  it("does not gzip when gzip is not accepted", async () => {
    for (const acceptEncoding of ["identity", "gzip;q=0", "deflate"]) {
      const reply = await contract.nodeRequest({ path: contract.OP, headers: headers(acceptEncoding), body: json });
      expect(reply.status).toBe(200);
      expect(reply.headers["content-encoding"]).toBeUndefined();
      expect(JSON.parse(reply.body.toString("utf8"))).toEqual({ data: contract.OCTOBER_RANKING, errors: null });
    }
  });
});

describe("HTTP/2 cleartext with prior knowledge", () => {
  const json = JSON.stringify({ ...contract.OCTOBER, numUsers: 100 });

  it("serves the REST operation with the same body as HTTP/1.1", async () => {
    const h1 = await contract.nodeRequest({
      path: contract.OP,
      headers: { authorization: `Bearer ${contract.keys.rank}`, "content-type": "application/json" },
      body: json,
    });
    const h2 = await contract.h2Request(
      { authorization: `Bearer ${contract.keys.rank}`, "content-type": "application/json" },
      json,
    );
    expect(h2.status).toBe(200);
    expect(h2.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(h2.body).toBe(h1.body.toString("utf8"));
    expect(JSON.parse(h2.body)).toEqual({ data: contract.OCTOBER_RANKING, errors: null });
  });

  it("answers errors in the same envelope", async () => {
    const unauthenticated = await contract.h2Request({ "content-type": "application/json" }, json);
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers["www-authenticate"]).toBe(contract.WWW_AUTHENTICATE);
    expect(JSON.parse(unauthenticated.body)).toEqual(
      errorBody({ code: "unauthenticated", message: contract.UNAUTHENTICATED_MESSAGE }),
    );

    const auth = { authorization: `Bearer ${contract.keys.rank}`, "content-type": "application/json" };
    const bad = await contract.h2Request(auth, "{}");
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body)).toEqual(
      errorBody(
        invalid("startTimestamp is required", "startTimestamp"),
        invalid("endTimestamp is required", "endTimestamp"),
        invalid("numUsers is required", "numUsers"),
      ),
    );

    const tooLarge = await contract.h2Request(auth, " ".repeat(contract.MAX_BODY + 1));
    expect(tooLarge.status).toBe(413);
    expect(JSON.parse(tooLarge.body)).toEqual(
      errorBody({ code: "payload_too_large", message: contract.TOO_LARGE_MESSAGE }),
    );
  });
});

describe("health", () => {
  it("answers GET /healthz with 200", async () => {
    const reply = await contract.call("/healthz", { method: "GET" });
    expect(reply.status).toBe(200);
    expect(reply.text).toBe('{"status":"ok"}');
    expect(reply.headers["content-type"]).toBe("application/json; charset=utf-8");
  });

  it("answers GET /readyz with 200 once the database is reachable and migrated", async () => {
    const reply = await contract.call("/readyz", { method: "GET" });
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ status: "ready", schemaVersion: LATEST_SCHEMA_VERSION, ...RELEASE });
    expect(reply.text).toBe(
      `{"status":"ready","schemaVersion":${LATEST_SCHEMA_VERSION},"version":"${RELEASE.version}","commit":"${RELEASE.commit}"}`,
    );
  });
});
