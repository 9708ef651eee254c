/**
 * The Connect service implementations called through connect-es's in-memory router transport (no
 * socket, no HTTP) over a real test database: what each service answers, with exact values, apart
 * from the transports, which the other integration files cover. The wiring is
 * test/support/services-harness.ts, shared with the same services on the reference model
 * (test/unit/services-on-model.test.ts).
 */
import { create } from "@bufbuild/protobuf";
import { createClient, type Transport } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiKeyService } from "../../gen/topwagers/v1/api_keys_pb.js";
import { GetTopAffiliateWagersByPeriodRequestSchema, TopWagersService } from "../../gen/topwagers/v1/top_wagers_pb.js";
import { Admission } from "../../src/auth/admission.js";
import { KeyAdmin } from "../../src/auth/key-admin.js";
import { KeySet } from "../../src/auth/key-set.js";
import { WagerIngest } from "../../src/ingest/wager-ingest.js";
import { Leaderboard } from "../../src/leaderboard/leaderboard.js";
import { KeyRateLimiter } from "../../src/limits/rate-limiter.js";
import { findApiKeysByIds, listUsableApiKeys } from "../../src/storage/api-keys.js";
import { mariadbApiKeys, mariadbIngest, mariadbStandings } from "../../src/storage/stores.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { FEB_1_2026, JAN_1_2026 } from "../support/dates.js";
import { addBoard, createKey } from "../support/fixtures.js";
import { bearer, ingestCases, refusedCallCases, serviceTransports } from "../support/services-harness.js";

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
  const leaderboard = new Leaderboard({
    standings: mariadbStandings(db.read),
    defaultAvatarUrl: DEFAULT_AVATAR,
    cacheTtlMs: 0,
    now: () => NOW,
  });
  ({ publicTransport, internalTransport } = serviceTransports({
    admission,
    leaderboard,
    ingest: new WagerIngest(mariadbIngest(db.write), { now: () => NOW }),
    admin: new KeyAdmin(mariadbApiKeys(db.write), { now: () => NOW, afterChange: (ids) => keys.refresh(ids) }),
  }));
});

afterAll(async () => {
  await database?.drop();
});

describe("TopWagersService.getTopAffiliateWagersByPeriod", () => {
  refusedCallCases(() => ({ publicTransport, internalTransport, key }));

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
});

describe("WagerIngestService", () => {
  ingestCases(() => ({ publicTransport, internalTransport, key }));
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
