/**
 * The Connect service implementations called through connect-es's in-memory router transport (no
 * socket, no HTTP) over a real test database: what each service answers, with exact values, apart
 * from the transports, which the other integration files cover. The public service reads its
 * caller from the context value `callerKey` that the request gate sets (`admit` in
 * src/apps/public.ts); here an interceptor sets it from the same Authenticator, without the rate
 * limits (the gate's other job).
 */
import { create } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createClient,
  createRouterTransport,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { ApiKeyService } from "../../gen/topwagers/v1/api_keys_pb.js";
import { GetTopAffiliateWagersByPeriodRequestSchema, TopWagersService } from "../../gen/topwagers/v1/top_wagers_pb.js";
import { WagerIngestService } from "../../gen/topwagers/v1/wager_ingest_pb.js";
import { Admission } from "../../src/auth/admission.js";
import { KeyAdmin } from "../../src/auth/key-admin.js";
import { KeySet } from "../../src/auth/key-set.js";
import { apiKeyService } from "../../src/handlers/api-key-service.js";
import { callerKey, leaderboardRpc } from "../../src/handlers/leaderboard-rpc.js";
import { wagerIngestService } from "../../src/handlers/wager-ingest-service.js";
import { WagerIngest } from "../../src/ingest/wager-ingest.js";
import { Leaderboard } from "../../src/leaderboard/leaderboard.js";
import { KeyRateLimiter } from "../../src/limits/rate-limiter.js";
import { findApiKeysByIds, listUsableApiKeys } from "../../src/storage/api-keys.js";
import { mariadbApiKeys, mariadbIngest, mariadbStandings } from "../../src/storage/stores.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { FEB_1_2026, JAN_1_2026 } from "../support/dates.js";
import { addBoard, createKey } from "../support/fixtures.js";

/** Both services' clock: noon on 1 February 2026. */
const NOW = FEB_1_2026 + 12 * 3600;
const DEFAULT_AVATAR = "https://cdn.example.test/default.png";
const JANUARY = { startTimestamp: BigInt(JAN_1_2026), endTimestamp: BigInt(FEB_1_2026 - 1) };

let database: TestDatabase;
/** TopWagersService, as on the public port. */
let publicTransport: Transport;
/** WagerIngestService and ApiKeyService, as on the internal port. */
let internalTransport: Transport;
let key: string;

const bearer = (secret: string) => ({ headers: { authorization: `Bearer ${secret}` } });

/** The Connect error a call failed with: code, message, ErrorInfo reason and BadRequest violations. */
async function failure(call: Promise<unknown>) {
  const error = await call.then(
    () => undefined,
    (reason: unknown) => ConnectError.from(reason),
  );
  if (error === undefined) throw new Error("the call succeeded");
  return {
    code: error.code,
    message: error.rawMessage,
    reasons: error.findDetails(ErrorInfoSchema).map((i) => i.reason),
    violations: error
      .findDetails(BadRequestSchema)
      .flatMap((b) => b.fieldViolations.map((v) => [v.field, v.description])),
  };
}

beforeAll(async () => {
  database = await createTestDatabase("services_in_memory");
  const db = database.db;
  key = (await createKey(db, "aff-mem")).secret;
  await addBoard(db, "aff-mem", [
    ["m-1", "alice", "https://img.example.test/alice.png", ["1.00000001", JAN_1_2026], ["2.5", FEB_1_2026 - 1]],
    // bob's February wager is outside January.
    ["m-2", "bob", "", ["15000.5", JAN_1_2026 + 1], ["99", FEB_1_2026]],
  ]);
  await addBoard(db, "aff-other", [["o-1", "other", "", ["1000000", JAN_1_2026]]]);

  const keys = new KeySet({
    usable: (now) => listUsableApiKeys(db.read, now),
    byIds: (ids) => findApiKeysByIds(db.read, ids),
  });
  await keys.load();
  const admission = new Admission(keys, new KeyRateLimiter({ points: 1000, windowSeconds: 60 }));
  const authenticate: Interceptor = (next) => async (request) => {
    const admitted = await admission.admit(request.header.get("authorization"));
    request.contextValues.set(callerKey, admitted.caller);
    return next(request);
  };
  const leaderboard = new Leaderboard({
    standings: mariadbStandings(db.read),
    defaultAvatarUrl: DEFAULT_AVATAR,
    cacheTtlMs: 0,
    now: () => NOW,
  });
  publicTransport = createRouterTransport(
    (router) => {
      router.service(TopWagersService, leaderboardRpc(leaderboard));
    },
    { router: { interceptors: [authenticate] } },
  );
  internalTransport = createRouterTransport((router) => {
    router.service(
      WagerIngestService,
      wagerIngestService(new WagerIngest(mariadbIngest(db.write), { now: () => NOW })),
    );
    router.service(
      ApiKeyService,
      apiKeyService(
        new KeyAdmin(mariadbApiKeys(db.write), { now: () => NOW, afterChange: (ids) => keys.refresh(ids) }),
      ),
    );
  });
});

afterAll(async () => {
  await database?.drop();
});

describe("TopWagersService.getTopAffiliateWagersByPeriod", () => {
  it("answers the caller's affiliate for the period, both bounds inclusive, with exact totals", async () => {
    const client = createClient(TopWagersService, publicTransport);
    const response = await client.getTopAffiliateWagersByPeriod(
      create(GetTopAffiliateWagersByPeriodRequestSchema, { ...JANUARY, numUsers: 10 }),
      bearer(key),
    );
    expect(
      response.data.map((e) => [e.rank, e.userId, e.username, e.avatar, e.totalWagered, e.totalWageredDecimal]),
    ).toEqual([
      [1, "m-2", "bob", DEFAULT_AVATAR, 15000.5, "15000.5"],
      [2, "m-1", "alice", "https://img.example.test/alice.png", 3.50000001, "3.50000001"],
    ]);
  });

  it("refuses an invalid request with INVALID_ARGUMENT and one violation per field", async () => {
    const client = createClient(TopWagersService, publicTransport);
    const refused = await failure(
      client.getTopAffiliateWagersByPeriod(
        create(GetTopAffiliateWagersByPeriodRequestSchema, {
          startTimestamp: BigInt(FEB_1_2026),
          endTimestamp: BigInt(FEB_1_2026 - 1),
          numUsers: 101,
        }),
        bearer(key),
      ),
    );
    expect(refused).toEqual({
      code: Code.InvalidArgument,
      message:
        "endTimestamp must not be before startTimestamp (both are inclusive. Equal means one second). " +
        "numUsers must be between 1 and 100",
      reasons: ["INVALID_ARGUMENT"],
      violations: [
        [
          "end_timestamp",
          "endTimestamp must not be before startTimestamp (both are inclusive. Equal means one second)",
        ],
        ["num_users", "numUsers must be between 1 and 100"],
      ],
    });
  });

  it("refuses a call without a key with UNAUTHENTICATED", async () => {
    const client = createClient(TopWagersService, publicTransport);
    const refused = await failure(
      client.getTopAffiliateWagersByPeriod(
        create(GetTopAffiliateWagersByPeriodRequestSchema, { ...JANUARY, numUsers: 10 }),
      ),
    );
    expect(refused).toEqual({
      code: Code.Unauthenticated,
      message: "missing or invalid API key (send Authorization Bearer with your key)",
      reasons: ["UNAUTHENTICATED"],
      violations: [],
    });
  });
});

describe("WagerIngestService", () => {
  it("records a wager once, counts a re-send as a duplicate, and the leaderboard sums it exactly", async () => {
    const ingest = createClient(WagerIngestService, internalTransport);
    expect(
      await ingest.upsertUsers({
        users: [{ id: "m-3", affiliateId: "aff-mem", username: "carol", avatar: "https://img.example.test/c.png" }],
      }),
    ).toMatchObject({ upserted: 1 });
    const wagers = [{ id: "w-new", userId: "m-3", amount: "0.00000001", placedAt: BigInt(JAN_1_2026 + 60) }];
    expect(await ingest.recordWagers({ wagers })).toMatchObject({ recorded: 1, duplicates: 0 });
    expect(await ingest.recordWagers({ wagers })).toMatchObject({ recorded: 0, duplicates: 1 });

    const top = createClient(TopWagersService, publicTransport);
    const response = await top.getTopAffiliateWagersByPeriod(
      create(GetTopAffiliateWagersByPeriodRequestSchema, {
        startTimestamp: BigInt(JAN_1_2026 + 60),
        endTimestamp: BigInt(JAN_1_2026 + 60),
        numUsers: 10,
      }),
      bearer(key),
    );
    expect(response.data.map((e) => [e.rank, e.userId, e.totalWageredDecimal])).toEqual([[1, "m-3", "0.00000001"]]);
  });

  it("refuses a wager of an unknown user with FAILED_PRECONDITION and writes nothing", async () => {
    const ingest = createClient(WagerIngestService, internalTransport);
    const refused = await failure(
      ingest.recordWagers({
        wagers: [{ id: "w-orphan", userId: "nobody", amount: "1", placedAt: BigInt(JAN_1_2026) }],
      }),
    );
    expect(refused).toEqual({
      code: Code.FailedPrecondition,
      message: 'unknown users "nobody". Send them with UpsertUsers before their wagers. Nothing was written',
      reasons: ["UNKNOWN_USERS"],
      violations: [["wagers", 'unknown users "nobody"']],
    });
  });
});

describe("ApiKeyService", () => {
  it("creates a key that lists under its affiliate and reads that affiliate's leaderboard", async () => {
    const admin = createClient(ApiKeyService, internalTransport);
    const before = BigInt(Math.floor(Date.now() / 1000));
    const created = await admin.createApiKey({
      affiliateId: "aff-other",
      label: "in memory",
      rateLimit: { points: 5, windowSeconds: 60 },
    });
    const after = BigInt(Math.ceil(Date.now() / 1000));
    expect(created.secret).toMatch(/^tw_sk_[0-9A-Za-z]{38}$/); // prefix, 32 random, 6 checksum
    expect(created.apiKey).toMatchObject({
      affiliateId: "aff-other",
      label: "in memory",
      rateLimit: { points: 5, windowSeconds: 60 },
    });
    expect(created.apiKey?.id).toMatch(/^key_[0-9a-f]{16}$/);
    // The database's clock stamps a new key.
    expect(created.apiKey?.createdAt).toBeGreaterThanOrEqual(before);
    expect(created.apiKey?.createdAt).toBeLessThanOrEqual(after);
    expect(created.apiKey?.expiresAt).toBeUndefined();
    expect(created.apiKey?.revokedAt).toBeUndefined();

    expect((await admin.listApiKeys({ affiliateId: "aff-other" })).apiKeys).toEqual([created.apiKey]);

    const top = createClient(TopWagersService, publicTransport);
    const response = await top.getTopAffiliateWagersByPeriod(
      create(GetTopAffiliateWagersByPeriodRequestSchema, { ...JANUARY, numUsers: 10 }),
      bearer(created.secret),
    );
    expect(response.data.map((e) => [e.rank, e.userId, e.totalWageredDecimal])).toEqual([[1, "o-1", "1000000"]]);
  });
});
