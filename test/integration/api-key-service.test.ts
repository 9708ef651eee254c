/**
 * ApiKeyService end to end on the internal listener: keys issued over RPC
 * work at once on REST and gRPC; the list never shows a secret or a hash; an
 * own rate limit; rotation with an overlap; revocation; expiry; every refusal
 * of the wrong credential; and the structured error details as grpc-js and
 * connect-es clients decode them.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema, ErrorInfoSchema, RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { createPublicApp } from "../../src/apps/public.js";
import { openDatabase } from "../../src/platform/database/database.js";
import { createOnePortServer } from "../../src/platform/transport/one-port-server.js";
import { refusal } from "../support/calls.js";
import { createKey } from "../support/fixtures.js";
import { type IngestServers, startIngestServers, TEST_INGEST_TOKEN } from "../support/ingest.js";
import { listenOnFreePort } from "../support/listen.js";
import { restTop } from "../support/rest.js";

const ADMIN_TOKEN = "test-admin-token-abcdef0123456789";
const JAN = { startTimestamp: 1735689600, endTimestamp: 1738367999, numUsers: 10 };

let servers: IngestServers;
let disabled: IngestServers;
const grpcClients: grpc.Client[] = [];

function admin(token: string | null = ADMIN_TOKEN, protocol: "connect" | "grpc" = "connect", on = servers) {
  return on.adminClient(token, protocol);
}

async function rest(key: string, publicUrl = servers.publicUrl): Promise<number> {
  return (await restTop(publicUrl, key, JAN)).status;
}

async function grpcCode(key: string): Promise<Code | 0> {
  try {
    await servers.publicClient(key).getTopAffiliateWagersByPeriod({
      startTimestamp: BigInt(JAN.startTimestamp),
      endTimestamp: BigInt(JAN.endTimestamp),
      numUsers: 10,
    });
    return 0;
  } catch (error) {
    return ConnectError.from(error).code;
  }
}

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check()) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${servers.internalUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.split(" ")[1]);
}

beforeAll(async () => {
  servers = await startIngestServers("api_key_service", { INGEST_TOKEN: TEST_INGEST_TOKEN, ADMIN_TOKEN });
  disabled = await startIngestServers("api_key_service_off", { INGEST_TOKEN: TEST_INGEST_TOKEN });
});

afterAll(async () => {
  for (const c of grpcClients) c.close();
  await Promise.all([servers?.close(), disabled?.close()]);
});

describe("credentials", () => {
  it("without ADMIN_TOKEN every call is failed_precondition naming it", async () => {
    const error = await refusal(admin(ADMIN_TOKEN, "connect", disabled).listApiKeys({}));
    expect(error.code).toBe(Code.FailedPrecondition);
    expect(error.rawMessage).toBe(
      "the API key service is disabled on this server. Set the ADMIN_TOKEN environment variable " +
        "(16 or more characters) and restart the service to enable it",
    );
  });

  it.each([
    ["no token", null],
    ["a wrong token", "not-the-admin-token-at-all"],
    ["the ingest token", TEST_INGEST_TOKEN],
  ])("refuses %s as unauthenticated, on Connect and gRPC", async (_name, token) => {
    for (const protocol of ["connect", "grpc"] as const) {
      const error = await refusal(admin(token, protocol).listApiKeys({}));
      expect([protocol, error.code, error.rawMessage]).toEqual([
        protocol,
        Code.Unauthenticated,
        "missing or invalid admin token. Send Authorization Bearer with the ADMIN_TOKEN",
      ]);
    }
  });

  it("refuses an affiliate key as unauthenticated", async () => {
    const affiliateKey = (await createKey(servers.database.db, "aff-cred")).secret;
    const error = await refusal(admin(affiliateKey).listApiKeys({}));
    expect([error.code, error.rawMessage]).toEqual([
      Code.Unauthenticated,
      "affiliate API keys are not accepted by the API key service. Send Authorization Bearer with the ADMIN_TOKEN",
    ]);
  });
});

describe("issuing keys", () => {
  it("creates a key that works at once on REST and gRPC, and lists it without secret or hash", async () => {
    const before = await metric('topwagers_api_key_events_total{action="created"}');
    const created = await admin().createApiKey({ affiliateId: "aff-new", label: "site one" });
    expect(created.secret).toMatch(/^tw_sk_[0-9A-Za-z]{38}$/);
    expect(created.apiKey).toMatchObject({ affiliateId: "aff-new", label: "site one" });
    expect(created.apiKey?.expiresAt).toBeUndefined();
    expect(created.apiKey?.revokedAt).toBeUndefined();
    expect(Math.abs(Number(created.apiKey?.createdAt) - Date.now() / 1000)).toBeLessThan(60);
    expect(await rest(created.secret)).toBe(200);
    expect(await grpcCode(created.secret)).toBe(0);
    expect(await metric('topwagers_api_key_events_total{action="created"}')).toBe(before + 1);

    const response = await fetch(`${servers.internalUrl}/topwagers.v1.ApiKeyService/ListApiKeys`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ affiliateId: "aff-new" }),
    });
    const text = await response.text();
    expect(response.status).toBe(200);
    expect(JSON.parse(text)).toEqual({
      apiKeys: [
        {
          id: created.apiKey?.id,
          affiliateId: "aff-new",
          label: "site one",
          createdAt: String(created.apiKey?.createdAt),
        },
      ],
    });
    const { createHash } = await import("node:crypto");
    const hash = createHash("sha256").update(created.secret).digest();
    for (const forbidden of [created.secret, created.secret.slice(3), hash.toString("hex"), hash.toString("base64")]) {
      expect(text).not.toContain(forbidden);
    }
  });

  it("applies a key's own rate limit", async () => {
    const created = await admin(`${ADMIN_TOKEN}`, "grpc").createApiKey({
      affiliateId: "aff-limited",
      rateLimit: { points: 2, windowSeconds: 60 },
    });
    expect(created.apiKey?.rateLimit).toMatchObject({ points: 2, windowSeconds: 60 });
    expect([await rest(created.secret), await rest(created.secret), await rest(created.secret)]).toEqual([
      200, 200, 429,
    ]);
  });

  it("rotates with a 3 s overlap: both keys work, then only the new one", async () => {
    const old = await admin().createApiKey({
      affiliateId: "aff-rot",
      label: "rotating",
      rateLimit: { points: 1000, windowSeconds: 60 },
    });
    const rotated = await admin().rotateApiKey({ id: old.apiKey?.id ?? "", overlapSeconds: 3 });
    const rotatedAt = Date.now();
    expect(rotated.apiKey).toMatchObject({
      affiliateId: "aff-rot",
      label: "rotating",
      rateLimit: { points: 1000, windowSeconds: 60 },
    });
    expect(rotated.secret).not.toBe(old.secret);
    expect([await rest(old.secret), await rest(rotated.secret)]).toEqual([200, 200]);
    const listed = (await admin().listApiKeys({ affiliateId: "aff-rot" })).apiKeys;
    const oldExpiry = Number(listed.find((k) => k.id === old.apiKey?.id)?.expiresAt);
    expect(Math.abs(oldExpiry - (rotatedAt / 1000 + 3))).toBeLessThanOrEqual(2);
    const waited = await until(async () => (await rest(old.secret)) === 401, 8_000);
    expect(Date.now() - rotatedAt).toBeGreaterThanOrEqual(1_000); // it did overlap
    expect(waited).toBeLessThan(8_000);
    expect(await rest(rotated.secret)).toBe(200);
    expect(await grpcCode(old.secret)).toBe(Code.Unauthenticated);
  }, 20_000);

  it("revokes at once on this instance, idempotently", async () => {
    const created = await admin().createApiKey({ affiliateId: "aff-rev" });
    expect(await rest(created.secret)).toBe(200);
    const first = await admin().revokeApiKey({ id: created.apiKey?.id ?? "" });
    expect(first.apiKey?.revokedAt).toBeDefined();
    expect(await rest(created.secret)).toBe(401);
    const again = await admin(`${ADMIN_TOKEN}`, "grpc").revokeApiKey({ id: created.apiKey?.id ?? "" });
    expect(again.apiKey?.revokedAt).toBe(first.apiKey?.revokedAt);
  });

  it("refuses a key once its expiresAt has passed", async () => {
    const expiresAt = Math.floor(Date.now() / 1000) + 2;
    const created = await admin().createApiKey({ affiliateId: "aff-exp", expiresAt: BigInt(expiresAt) });
    expect(created.apiKey?.expiresAt).toBe(BigInt(expiresAt));
    expect(await rest(created.secret)).toBe(200);
    await until(async () => (await rest(created.secret)) === 401, 6_000);
    expect(Date.now() / 1000).toBeGreaterThanOrEqual(expiresAt);
    expect(await grpcCode(created.secret)).toBe(Code.Unauthenticated);
  }, 15_000);
});

describe("another instance", () => {
  it("accepts a key issued elsewhere within 1 s and refuses it within 1 s of its revocation", async () => {
    // A second instance: its own pool, app (its own in-memory key set, fed by the change feed) and public socket.
    const db = await openDatabase({ url: servers.database.url, poolSize: 2, queryTimeoutMs: 10_000 });
    const other = createPublicApp(servers.config, db);
    const server = createOnePortServer(other.handler);
    const port = await listenOnFreePort(server.server);
    const otherUrl = `http://127.0.0.1:${port}`;
    try {
      const created = await admin().createApiKey({ affiliateId: "aff-elsewhere" });
      await other.caughtUp(); // the other instance's keys are loaded (it is ready)
      const accepted = await until(async () => (await rest(created.secret, otherUrl)) === 200, 1_000);
      expect(accepted).toBeLessThan(1_000);
      expect(await rest(created.secret, otherUrl)).toBe(200);
      await admin().revokeApiKey({ id: created.apiKey?.id ?? "" });
      expect(await rest(created.secret)).toBe(401);
      const refused = await until(async () => (await rest(created.secret, otherUrl)) === 401, 1_000);
      expect(refused).toBeLessThan(1_000);
    } finally {
      other.stopServing();
      await server.close(5_000);
      await db.close();
    }
  }, 20_000);
});

describe("refusals with structured details", () => {
  it("an expiresAt in the past is invalid_argument with a BadRequest naming expires_at (connect-es findDetails)", async () => {
    const error = await refusal(admin().createApiKey({ affiliateId: "aff-x", expiresAt: 1000n }));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.findDetails(BadRequestSchema)).toEqual([
      expect.objectContaining({
        fieldViolations: [
          expect.objectContaining({
            field: "expires_at",
            description: "expiresAt must lie in the future (Unix seconds)",
          }),
        ],
      }),
    ]);
    expect(error.findDetails(ErrorInfoSchema).map((i) => [i.reason, i.domain])).toEqual([
      ["INVALID_ARGUMENT", "topwagers"],
    ]);
  });

  it("an unknown id is not_found naming the field id", async () => {
    // Each call starts when the loop reaches it: started together, the second could be refused
    // before anything awaits it (an unhandled rejection that fails the run).
    for (const call of [
      () => admin().revokeApiKey({ id: "key_doesnotexist" }),
      () => admin().rotateApiKey({ id: "key_doesnotexist", overlapSeconds: 0 }),
    ]) {
      const error = await refusal(call());
      expect([error.code, error.rawMessage]).toEqual([
        Code.NotFound,
        'no API key has the id "key_doesnotexist" (field id)',
      ]);
      expect(error.findDetails(ErrorInfoSchema)[0]?.reason).toBe("KEY_NOT_FOUND");
      expect(error.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toEqual(["id"]);
    }
  });

  it("an overlap beyond 30 days is invalid_argument naming overlap_seconds", async () => {
    const error = await refusal(admin().rotateApiKey({ id: "key_x", overlapSeconds: 30 * 86_400 + 1 }));
    expect(error.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => [v.field, v.description])).toEqual([
      ["overlap_seconds", "overlapSeconds must be 0 to 2592000 (30 days)"],
    ]);
  });

  it("grpc-js reads BadRequest for a validation error and RetryInfo for a rate limit from grpc-status-details-bin", async () => {
    const definition = protoLoader.loadSync("proto/topwagers/v1/top_wagers.proto", { longs: String, defaults: true });
    const service = definition["topwagers.v1.TopWagersService"] as protoLoader.ServiceDefinition;
    const m = service.GetTopAffiliateWagersByPeriod as protoLoader.MethodDefinition<object, object>;
    const client = new grpc.Client(`127.0.0.1:${new URL(servers.publicUrl).port}`, grpc.credentials.createInsecure());
    grpcClients.push(client);
    const call = (key: string, request: object) =>
      new Promise<grpc.ServiceError>((resolve) => {
        const metadata = new grpc.Metadata();
        metadata.set("authorization", `Bearer ${key}`);
        client.makeUnaryRequest(m.path, m.requestSerialize, m.responseDeserialize, request, metadata, (error) =>
          resolve(error as grpc.ServiceError),
        );
      });
    const status = (error: grpc.ServiceError) => {
      const bin = error.metadata.get("grpc-status-details-bin")[0] as Buffer;
      return fromBinary(StatusSchema, bin);
    };
    const key = (await createKey(servers.database.db, "aff-grpcjs", { points: 1, windowSeconds: 60 })).secret;
    const invalid = await call(key, {
      startTimestamp: String(JAN.startTimestamp),
      endTimestamp: String(JAN.endTimestamp),
      numUsers: 0,
    });
    expect(invalid.code).toBe(grpc.status.INVALID_ARGUMENT);
    const invalidStatus = status(invalid);
    expect(invalidStatus.code).toBe(grpc.status.INVALID_ARGUMENT);
    const badRequest = invalidStatus.details.map((d) => anyUnpack(d, BadRequestSchema)).find((d) => d !== undefined);
    expect(badRequest?.fieldViolations.map((v) => [v.field, v.description])).toEqual([
      ["num_users", "numUsers must be between 1 and 100"],
    ]);
    const limited = await call(key, {
      startTimestamp: String(JAN.startTimestamp),
      endTimestamp: String(JAN.endTimestamp),
      numUsers: 5,
    });
    expect(limited.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    const retry = status(limited)
      .details.map((d) => anyUnpack(d, RetryInfoSchema))
      .find((d) => d !== undefined);
    const retryAfter = Number(limited.metadata.get("retry-after")[0]);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retry?.retryDelay?.seconds).toBe(BigInt(retryAfter));
    const info = status(limited)
      .details.map((d) => anyUnpack(d, ErrorInfoSchema))
      .find((d) => d !== undefined);
    expect([info?.reason, info?.domain]).toEqual(["RATE_LIMITED", "topwagers"]);
  });

  it("connect-es reads RetryInfo for a rate limit", async () => {
    const key = (await createKey(servers.database.db, "aff-connectes", { points: 1, windowSeconds: 60 })).secret;
    expect(await grpcCode(key)).toBe(0);
    const error = await refusal(
      servers.publicClient(key).getTopAffiliateWagersByPeriod({
        startTimestamp: BigInt(JAN.startTimestamp),
        endTimestamp: BigInt(JAN.endTimestamp),
        numUsers: 10,
      }),
    );
    expect(error.code).toBe(Code.ResourceExhausted);
    const [retry] = error.findDetails(RetryInfoSchema);
    expect(Number(retry?.retryDelay?.seconds)).toBe(Number(error.metadata.get("retry-after")));
  });
});
