/**
 * Admission (src/keys/gate/admission.ts) and the rate limiters (src/platform/limits/) with in-memory counts and
 * the key set on the reference model: which keys are admitted, refused and braked, with the exact
 * RateLimit headers and Retry-After. No database, no Redis.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { generateApiKey } from "../../src/keys/core/api-key-secret.js";
import { KeyAdmin } from "../../src/keys/core/key-admin.js";
import { KeySet } from "../../src/keys/core/key-set.js";
import { Admission } from "../../src/keys/gate/admission.js";
import { ServiceError } from "../../src/platform/errors/catalogue.js";
import { FailedAuthLimiter } from "../../src/platform/limits/failed-auth-limiter.js";
import { KeyRateLimiter } from "../../src/platform/limits/rate-limiter.js";
import { ReferenceModel } from "../support/reference-model.js";

const NOW = 1769904000; // 2026-02-01T00:00:00Z

let admin: KeyAdmin;
let keys: KeySet;

beforeAll(async () => {
  const model = new ReferenceModel({ now: () => NOW });
  keys = new KeySet(model.keyRecords);
  await keys.load();
  admin = new KeyAdmin(model.apiKeys, { now: () => NOW, afterChange: (ids) => keys.refresh(ids) });
});

async function issue(input: Parameters<KeyAdmin["create"]>[0]) {
  const issued = await admin.create(input);
  if (issued.kind !== "issued") throw new Error(JSON.stringify(issued));
  return issued;
}

/** What a refusal says: its catalogue reason, message and headers. */
async function refusal(call: Promise<unknown>) {
  const error = await call.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!(error instanceof ServiceError)) throw new Error(`not refused with a ServiceError: ${String(error)}`);
  return { reason: error.reason, message: error.rawMessage, headers: Object.fromEntries(error.metadata) };
}

describe("KeyRateLimiter (in memory)", () => {
  it("counts calls per key within the window and refuses the one over the limit with Retry-After", async () => {
    const limiter = new KeyRateLimiter({ points: 3, windowSeconds: 60 });
    const remaining = [];
    for (let i = 0; i < 3; i++) remaining.push((await limiter.consume("key_a", null)).headers);
    expect(remaining.map((h) => h.ratelimit)).toEqual([
      '"default";r=2;t=60',
      '"default";r=1;t=60',
      '"default";r=0;t=60',
    ]);
    expect(remaining[0]?.["ratelimit-policy"]).toBe('"default";q=3;w=60');
    const refused = await refusal(limiter.consume("key_a", null));
    expect(refused).toEqual({
      reason: "RATE_LIMITED",
      message: "rate limit exceeded for this API key (3 requests per 60 s). Retry in 60 s",
      headers: { "ratelimit-policy": '"default";q=3;w=60', ratelimit: '"default";r=0;t=60', "retry-after": "60" },
    });
    // Another key has a budget of its own.
    expect((await limiter.consume("key_b", null)).headers.ratelimit).toBe('"default";r=2;t=60');
  });

  it("applies a key's own policy, and counts a publishable key per client address", async () => {
    const limiter = new KeyRateLimiter({ points: 3, windowSeconds: 60 }, undefined, { points: 2, windowSeconds: 10 });
    expect((await limiter.consume("key_c", { points: 5, windowSeconds: 30 })).headers).toEqual({
      "ratelimit-policy": '"key";q=5;w=30',
      ratelimit: '"key";r=4;t=30',
    });
    await limiter.consume("key_p", null, "198.51.100.1");
    await limiter.consume("key_p", null, "198.51.100.1");
    expect((await refusal(limiter.consume("key_p", null, "198.51.100.1"))).message).toBe(
      "rate limit exceeded for this API key from this address (2 requests per 10 s). Retry in 10 s",
    );
    expect((await limiter.consume("key_p", null, "198.51.100.2")).headers).toEqual({
      "ratelimit-policy": '"publishable";q=2;w=10',
      ratelimit: '"publishable";r=1;t=10',
    });
  });
});

describe("Admission", () => {
  it("admits a held key from Authorization (any case of Bearer, spaces around) with its rate headers", async () => {
    const issued = await issue({ affiliateId: "aff-adm", rateLimit: { points: 10, windowSeconds: 60 } });
    const admission = new Admission(keys, new KeyRateLimiter({ points: 60, windowSeconds: 60 }));
    const admitted = await admission.admitBearer(`bearer   ${issued.secret}  `);
    expect([admitted.caller.keyId, admitted.caller.kind, admitted.headers]).toEqual([
      issued.key.id,
      "secret",
      { "ratelimit-policy": '"key";q=10;w=60', ratelimit: '"key";r=9;t=60' },
    ]);
  });

  it("refuses no key, a malformed key, an unknown key and a revoked key alike with 401", async () => {
    const admission = new Admission(keys, new KeyRateLimiter({ points: 60, windowSeconds: 60 }));
    const revoked = await issue({ affiliateId: "aff-adm" });
    await admin.revoke(revoked.key.id);
    const unknown = generateApiKey("secret").secret; // well formed, never stored
    const expected = {
      reason: "UNAUTHENTICATED",
      message: "missing or invalid API key (send Authorization Bearer with your key)",
      headers: { "www-authenticate": 'Bearer realm="topwagers"' },
    };
    for (const authorization of [
      undefined,
      "",
      "Bearer",
      "Basic abc",
      "Bearer not-a-key",
      `Bearer tw_sk_${"0".repeat(38)}`, // the shape of a key, a wrong checksum
      `Bearer ${unknown}`,
    ]) {
      expect(await refusal(admission.admitBearer(authorization))).toEqual(expected);
    }
    expect(await refusal(admission.admitBearer(`Bearer ${revoked.secret}`))).toEqual(expected);
  });

  it("refuses a secret key in the URL with its own message, and admits a publishable one there with CORS", async () => {
    const admission = new Admission(keys, new KeyRateLimiter({ points: 60, windowSeconds: 60 }));
    const secret = await issue({ affiliateId: "aff-adm" });
    expect(
      (await refusal(admission.admitRequest({ authorization: undefined, urlKey: secret.secret, clientAddress: "a" })))
        .reason,
    ).toBe("SECRET_KEY_IN_URL");
    const pub = await issue({
      affiliateId: "aff-adm",
      publishable: true,
      allowedOrigins: ["https://board.example.test"],
    });
    const admitted = await admission.admitRequest({
      authorization: undefined,
      urlKey: pub.secret,
      clientAddress: "203.0.113.9",
      origin: "https://board.example.test",
    });
    expect(admitted.headers).toEqual({
      "ratelimit-policy": '"publishable";q=60;w=60',
      ratelimit: '"publishable";r=59;t=60',
      "access-control-allow-origin": "https://board.example.test",
      "access-control-expose-headers": "RateLimit, RateLimit-Policy, Retry-After",
      vary: "Origin",
    });
    const elsewhere = await admission.admitRequest({
      authorization: undefined,
      urlKey: pub.secret,
      clientAddress: "203.0.113.9",
      origin: "https://other.example.test",
    });
    expect(elsewhere.headers.vary).toBe("Origin");
    expect(elsewhere.headers["access-control-allow-origin"]).toBeUndefined();
    expect(admission.preflight("https://board.example.test").allowed).toBe(true);
    expect(admission.preflight("https://other.example.test")).toEqual({ allowed: false, headers: {} });
  });

  it("answers 503 for a well-formed key before the keys are loaded, 401 for text that is no key", async () => {
    const model = new ReferenceModel({ now: () => NOW });
    const admission = new Admission(new KeySet(model.keyRecords), new KeyRateLimiter({ points: 1, windowSeconds: 1 }));
    expect((await refusal(admission.admitBearer(`Bearer ${generateApiKey("secret").secret}`))).reason).toBe(
      "DATABASE_UNAVAILABLE",
    );
    expect((await refusal(admission.admitBearer("Bearer nonsense"))).reason).toBe("UNAUTHENTICATED");
  });

  it("brakes an address after too many bad keys with 429, never a valid key", async () => {
    const good = await issue({ affiliateId: "aff-adm" });
    const admission = new Admission(
      keys,
      new KeyRateLimiter({ points: 60, windowSeconds: 60 }),
      new FailedAuthLimiter({ points: 2, windowSeconds: 60 }),
    );
    const reasons = [];
    for (let i = 0; i < 4; i++)
      reasons.push((await refusal(admission.admitBearer("Bearer bad", "198.51.100.7"))).reason);
    expect(reasons).toEqual(["UNAUTHENTICATED", "UNAUTHENTICATED", "UNAUTHENTICATED", "TOO_MANY_FAILED_ATTEMPTS"]);
    expect((await admission.admitBearer(`Bearer ${good.secret}`, "198.51.100.7")).caller.keyId).toBe(good.key.id);
    expect((await refusal(admission.admitBearer("Bearer bad", "198.51.100.8"))).reason).toBe("UNAUTHENTICATED");
  });
});
