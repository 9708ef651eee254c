/**
 * The Connect services through connect-es's in-memory router transport (no socket, no HTTP) on the
 * in-memory reference model (test/support/reference-model.ts): no database and no Redis, so this
 * runs in the unit tier with both unreachable. The same services on MariaDB are
 * test/integration/services-in-memory.test.ts; the model-based test holds the model to MariaDB's
 * answers. Expected values are written out by hand from the data below.
 */
import { Code, createClient, type Transport } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { ApiKeyService } from "../../gen/topwagers/v1/api_keys_pb.js";
import { RankBy } from "../../gen/topwagers/v1/top_wagers_pb.js";
import { WagerIngestService } from "../../gen/topwagers/v1/wager_ingest_pb.js";
import { entryCells } from "../support/calls.js";
import { FEB_1_2026 as FEB_1, JAN_1_2026 as JAN_1 } from "../support/dates.js";
import { ReferenceModel } from "../support/reference-model.js";
import {
  DEFAULT_AVATAR,
  failure,
  ingestCases,
  januaryTop,
  keyCreationCases,
  NOW,
  refusedCallCases,
  servicesOn,
} from "../support/services-harness.js";

let publicTransport: Transport;
let internalTransport: Transport;
let key: string;

beforeAll(async () => {
  const model = new ReferenceModel({ now: () => NOW });
  const services = await servicesOn(model);
  ({ publicTransport, internalTransport } = services);
  const issued = await services.admin.create({ affiliateId: "aff-mem", label: "test" });
  if (issued.kind !== "issued") throw new Error("no key");
  key = issued.secret;
  await services.ingest.upsertUsers([
    { id: "m-1", affiliateId: "aff-mem", username: "alice", avatar: "https://img.example.test/alice.png" },
    { id: "m-2", affiliateId: "aff-mem", username: "bob", avatar: "" },
    { id: "o-1", affiliateId: "aff-other", username: "other", avatar: "" },
  ]);
  const recorded = await services.ingest.recordWagers([
    { id: "w-1", userId: "m-1", amount: "1.00000001", placedAt: BigInt(JAN_1), weightBps: 10_000 },
    { id: "w-2", userId: "m-1", amount: "2.5", placedAt: BigInt(FEB_1 - 1) }, // weight absent: counts fully
    { id: "w-3", userId: "m-2", amount: "15000.5", placedAt: BigInt(JAN_1 + 1), weightBps: 1 },
    { id: "w-4", userId: "m-2", amount: "99", placedAt: BigInt(FEB_1) }, // February: outside January
    { id: "w-5", userId: "o-1", amount: "1000000", placedAt: BigInt(JAN_1) }, // another affiliate
  ]);
  expect(recorded).toEqual({ kind: "recorded", recorded: 5, duplicates: 0 });
});

describe("TopWagersService on the reference model", () => {
  refusedCallCases(() => ({ publicTransport, internalTransport, key }));

  it("answers the caller's affiliate for the period, both bounds inclusive, with exact totals", async () => {
    const response = await januaryTop(publicTransport, key);
    expect(response.data.map(entryCells)).toEqual([
      // 15000.5 × 1 / 10000 = 1.50005
      [1, "m-2", "bob", DEFAULT_AVATAR, "15000.5", "1.50005"],
      [2, "m-1", "alice", "https://img.example.test/alice.png", "3.50000001", "3.50000001"],
    ]);
  });

  it("ranks by the weighted total when asked", async () => {
    const response = await januaryTop(publicTransport, key, RankBy.WEIGHTED);
    expect(response.data.map((e) => [e.rank, e.userId, e.totalWageredDecimal, e.weightedWageredDecimal])).toEqual([
      [1, "m-1", "3.50000001", "3.50000001"],
      [2, "m-2", "15000.5", "1.50005"],
    ]);
  });
});

describe("WagerIngestService on the reference model", () => {
  ingestCases(() => ({ publicTransport, internalTransport, key }));

  it("refuses a re-sent wager with another weight as ALREADY_EXISTS", async () => {
    const ingest = createClient(WagerIngestService, internalTransport);
    const refused = await failure(
      ingest.recordWagers({
        wagers: [{ id: "w-3", userId: "m-2", amount: "15000.5", placedAt: BigInt(JAN_1 + 1), weightBps: 2 }],
      }),
    );
    expect([refused.code, refused.reasons]).toEqual([Code.AlreadyExists, ["WAGER_CONFLICT"]]);
  });

  it("voids a recorded wager and one not recorded yet, which never counts", async () => {
    const ingest = createClient(WagerIngestService, internalTransport);
    expect(await ingest.voidWagers({ wagerIds: ["w-1", "w-later"] })).toMatchObject({
      voided: 1,
      alreadyVoided: 0,
      pending: 1,
    });
    expect(
      await ingest.recordWagers({
        wagers: [{ id: "w-later", userId: "m-1", amount: "7", placedAt: BigInt(JAN_1 + 5) }],
      }),
    ).toMatchObject({ recorded: 1, duplicates: 0 });
    const response = await januaryTop(publicTransport, key);
    expect(response.data.map((e) => [e.userId, e.totalWageredDecimal])).toEqual([
      ["m-2", "15000.5"],
      ["m-1", "2.5"],
      ["m-3", "0.00000001"],
    ]);
  });
});

describe("ApiKeyService on the reference model", () => {
  // The services' clock stamps a new key.
  keyCreationCases(() => ({ publicTransport, internalTransport, key }), {
    before: () => BigInt(NOW),
    after: () => BigInt(NOW),
  });

  it("revokes a key: refused at once", async () => {
    const admin = createClient(ApiKeyService, internalTransport);
    const created = await admin.createApiKey({ affiliateId: "aff-mem", label: "short-lived" });
    await admin.revokeApiKey({ id: created.apiKey?.id ?? "" });
    const refused = await failure(januaryTop(publicTransport, created.secret));
    expect(refused.code).toBe(Code.Unauthenticated);
  });
});
