/**
 * The REST contract (docs/contract.md, "The one public operation") on a real socket over a real database: the API key (401), the
 * key's rate limit (429) and the order of the checks.
 * One of the test/integration/rest-contract-*.test.ts files; the calls, constants and data are in
 * test/support/rest-contract.ts.
 */
import { describe, expect, it } from "vitest";
import { revokeApiKey } from "../../src/keys/sql/api-keys.js";
import { createKey, keysFollowed } from "../support/fixtures.js";
import { type ErrorItem, errorBody } from "../support/rest.js";
import * as contract from "../support/rest-contract.js";

const server = contract.useRestContractServer();

describe("401: missing, unknown, malformed or revoked key", () => {
  const body = { ...contract.OCTOBER, numUsers: 3 };

  it("refuses a contract.call without Authorization", async () => {
    contract.expectUnauthenticated(await contract.top(null, body));
  });

  it.each([
    ["an unknown key of the right shape", `Bearer tw_${"A".repeat(32)}`],
    ["a malformed key", "Bearer not-a-key"],
    ["a key cut short", "Bearer tw_abc"],
    ["the scheme alone", "Bearer"],
    ["the scheme and spaces", "Bearer    "],
    ["another scheme", "Basic dXNlcjpwYXNz"],
    ["two credentials", `Bearer tw_${"A".repeat(32)} tw_${"B".repeat(32)}`],
  ])("refuses %s", async (_name, authorization) => {
    contract.expectUnauthenticated(await contract.top(null, body, { authorization }));
  });

  it("refuses a valid key sent without a scheme", async () => {
    contract.expectUnauthenticated(await contract.top(null, body, { authorization: contract.keys.rank }));
  });

  it("refuses a revoked key", async () => {
    const db = server().database.db;
    const never = await createKey(db, "aff-rank");
    await revokeApiKey(db.write, never.id);
    await keysFollowed();
    contract.expectUnauthenticated(await contract.top(never.secret, body));

    // A key in use is refused once revoked (contract: within 1 second; here once the change feed delivered it).
    const used = await createKey(db, "aff-rank");
    expect((await contract.top(used.secret, body)).status).toBe(200);
    await revokeApiKey(db.write, used.id);
    await keysFollowed();
    contract.expectUnauthenticated(await contract.top(used.secret, body));
  });

  it("reads the key only from Authorization: not from the query string, the body or other headers", async () => {
    for (const query of [
      `key=${contract.keys.rank}`,
      `api_key=${contract.keys.rank}`,
      `access_token=${contract.keys.rank}`,
    ]) {
      contract.expectUnauthenticated(await contract.call(`${contract.OP}?${query}`, { body }));
    }
    contract.expectUnauthenticated(
      await contract.top(null, {
        ...body,
        apiKey: contract.keys.rank,
        key: contract.keys.rank,
        authorization: contract.keys.rank,
      }),
    );
    contract.expectUnauthenticated(await contract.top(null, body, { "x-api-key": contract.keys.rank }));
  });

  it("checks the key before the body: 401 wins over a malformed, mistyped or oversized body", async () => {
    contract.expectUnauthenticated(await contract.top(null, "{not json"));
    contract.expectUnauthenticated(await contract.top(null, { numUsers: 0 }));
    contract.expectUnauthenticated(
      await contract.call(contract.OP, { body: "x", headers: { "content-type": "text/plain" } }),
    );
    contract.expectUnauthenticated(await contract.call(contract.OP, { body: "x".repeat(contract.MAX_BODY + 1) }));
    const bad = await contract.call(contract.OP, {
      body: "{not json",
      headers: { authorization: `Bearer tw_${"Z".repeat(32)}` },
    });
    contract.expectUnauthenticated(bad);
  });
});

describe("429: the key's rate limit", () => {
  const body = { ...contract.OCTOBER, numUsers: 1 };

  it("counts every authenticated contract.call, valid or not, and then refuses with Retry-After and RateLimit headers", async () => {
    const limited = await createKey(server().database.db, "aff-rank", { points: 4, windowSeconds: 60 });
    const policy = '"key";q=4;w=60';

    const first = await contract.top(limited.secret, body);
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ data: contract.OCTOBER_RANKING.slice(0, 1), errors: null });
    expect(first.headers["ratelimit-policy"]).toBe(policy);
    expect(first.headers.ratelimit).toBe('"key";r=3;t=60');
    expect(first.headers["retry-after"]).toBeUndefined();

    const invalidCall = await contract.top(limited.secret, { ...body, numUsers: 0 });
    expect(invalidCall.status).toBe(400);
    expect(invalidCall.headers["ratelimit-policy"]).toBe(policy);
    expect(invalidCall.headers.ratelimit).toBe('"key";r=2;t=60');

    const wrongType = await contract.call(contract.OP, {
      key: limited.secret,
      body: "{}",
      headers: { "content-type": "text/plain" },
    });
    expect(wrongType.status).toBe(415);
    expect(wrongType.headers.ratelimit).toBe('"key";r=1;t=60');

    const tooLarge = await contract.call(contract.OP, { key: limited.secret, body: "x".repeat(contract.MAX_BODY + 1) });
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.headers["ratelimit-policy"]).toBe(policy);
    expect(tooLarge.headers.ratelimit).toBe('"key";r=0;t=60');

    const refused = await contract.top(limited.secret, body);
    expect(refused.status).toBe(429);
    expect(refused.json).toEqual(
      errorBody({
        code: "resource_exhausted",
        message: "rate limit exceeded for this API key (4 requests per 60 s). Retry in 60 s",
      }),
    );
    expect(refused.headers["retry-after"]).toBe("60");
    expect(refused.headers["ratelimit-policy"]).toBe(policy);
    expect(refused.headers.ratelimit).toBe('"key";r=0;t=60');
    expect(refused.headers["content-type"]).toBe("application/json; charset=utf-8");

    // 429 comes before the body and media-type checks.
    for (const reply of [
      await contract.top(limited.secret, "{not json"),
      await contract.top(limited.secret, { numUsers: 0 }),
      await contract.call(contract.OP, { key: limited.secret, body: "x", headers: { "content-type": "text/plain" } }),
      await contract.call(contract.OP, { key: limited.secret, body: "x".repeat(contract.MAX_BODY + 1) }),
    ]) {
      expect(reply.status).toBe(429);
      expect(reply.headers["retry-after"]).toBe("60");
      expect((reply.json as { errors: ErrorItem[] }).errors[0]?.code).toBe("resource_exhausted");
    }
    // ...but after the path, the method and the key.
    expect((await contract.call(contract.OP, { method: "GET", key: limited.secret })).status).toBe(405);
    expect((await contract.call("/elsewhere", { key: limited.secret, body })).status).toBe(404);
    contract.expectUnauthenticated(await contract.top(null, body));

    // The count is per key: another key with the same limit is untouched.
    const other = await createKey(server().database.db, "aff-rank", { points: 4, windowSeconds: 60 });
    const fresh = await contract.top(other.secret, body);
    expect(fresh.status).toBe(200);
    expect(fresh.headers.ratelimit).toBe('"key";r=3;t=60');
  });

  it("reports the default policy on contract.keys without their own limit", async () => {
    const plain = await createKey(server().database.db, "aff-rank");
    const first = await contract.top(plain.secret, body);
    expect(first.headers["ratelimit-policy"]).toBe('"default";q=100000;w=60');
    expect(first.headers.ratelimit).toBe('"default";r=99999;t=60');
    const second = await contract.top(plain.secret, { numUsers: 0 });
    expect(second.status).toBe(400);
    expect(second.headers.ratelimit).toBe('"default";r=99998;t=60');
  });
});

describe("check order", () => {
  const body = { ...contract.OCTOBER, numUsers: 3 };

  it("path and method before the key", async () => {
    expect((await contract.call(contract.OP, { method: "GET" })).status).toBe(405);
    expect((await contract.call("/nope", { body })).status).toBe(404);
  });

  it("key before body size, media type and body", async () => {
    contract.expectUnauthenticated(
      await contract.call(contract.OP, { body: "[", headers: { "content-type": "text/plain" } }),
    );
    const oversized = await contract.rawExchange(
      `POST ${contract.OP} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n` +
        "Content-Length: 1000000000\r\nConnection: close\r\n\r\n",
    );
    expect(oversized.status).toBe(401);
    expect(oversized.headers["www-authenticate"]).toBe(contract.WWW_AUTHENTICATE);
    expect(JSON.parse(oversized.body)).toEqual(
      errorBody({ code: "unauthenticated", message: contract.UNAUTHENTICATED_MESSAGE }),
    );
  });

  it("body size and media type before the body", async () => {
    const wrongType = await contract.call(contract.OP, {
      key: contract.keys.rank,
      body: "{not json",
      headers: { "content-type": "text/plain" },
    });
    expect(wrongType.status).toBe(415);
    const oversized = await contract.call(contract.OP, {
      key: contract.keys.rank,
      body: `{not json${" ".repeat(contract.MAX_BODY)}`,
    });
    expect(oversized.status).toBe(413);
    expect(oversized.json).toEqual(errorBody({ code: "payload_too_large", message: contract.TOO_LARGE_MESSAGE }));
  });
});
