/**
 * The Connect services behind connect-es's in-memory router transport, wired as the two ports wire
 * them, for tests that run the same services on MariaDB (integration) and on the reference model
 * (unit). The public service reads its caller from `callerKey`, which the request gate sets on the
 * real port; here an interceptor sets it from the same Admission (its rate limits included).
 */
import { create } from "@bufbuild/protobuf";
import { Code, createClient, createRouterTransport, type Interceptor, type Transport } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { ApiKeyService } from "../../gen/topwagers/v1/api_keys_pb.js";
import {
  GetTopAffiliateWagersByPeriodRequestSchema,
  type RankBy,
  TopWagersService,
} from "../../gen/topwagers/v1/top_wagers_pb.js";
import { WagerIngestService } from "../../gen/topwagers/v1/wager_ingest_pb.js";
import { Leaderboard } from "../../src/boards/core/leaderboard.js";
import { leaderboardRpc } from "../../src/boards/wire/leaderboard-rpc.js";
import { WagerIngest } from "../../src/ingest/core/wager-ingest.js";
import { wagerIngestService } from "../../src/ingest/wire/wager-ingest-service.js";
import { KeyAdmin } from "../../src/keys/core/key-admin.js";
import { KeySet } from "../../src/keys/core/key-set.js";
import { Admission } from "../../src/keys/gate/admission.js";
import { callerKey } from "../../src/keys/gate/caller-key.js";
import { apiKeyService } from "../../src/keys/wire/api-key-service.js";
import { KeyRateLimiter } from "../../src/platform/limits/rate-limiter.js";
import type { ApiKeyStore, KeyStore } from "../../src/ports/api-keys.js";
import type { IngestStore } from "../../src/ports/ingest.js";
import type { StandingsStore } from "../../src/ports/standings.js";
import { refusal } from "./calls.js";
import { FEB_1_2026, JAN_1_2026 } from "./dates.js";

/** Every clock of the services: noon on 1 February 2026. */
export const NOW = FEB_1_2026 + 12 * 3600;
export const DEFAULT_AVATAR = "https://cdn.example.test/default.png";
export const JANUARY = { startTimestamp: BigInt(JAN_1_2026), endTimestamp: BigInt(FEB_1_2026 - 1) };

export interface ServiceTransports {
  /** TopWagersService, as on the public port. */
  readonly publicTransport: Transport;
  /** WagerIngestService and ApiKeyService, as on the internal port. */
  readonly internalTransport: Transport;
}

/** What the services run on: MariaDB's adapters (each feature's sql/*-store.ts) or the reference model. */
export interface ServiceStores {
  readonly standings: StandingsStore;
  readonly ingest: IngestStore;
  readonly apiKeys: ApiKeyStore;
  readonly keyRecords: KeyStore;
}

/**
 * The services on `stores` as the two ports build them, every clock at NOW, no answer cache, and the key set
 * loaded (a key created through `admin` is read into it at once).
 */
export async function servicesOn(
  stores: ServiceStores,
): Promise<ServiceTransports & { readonly admin: KeyAdmin; readonly ingest: WagerIngest }> {
  const keys = new KeySet(stores.keyRecords);
  await keys.load();
  const admission = new Admission(keys, new KeyRateLimiter({ points: 1000, windowSeconds: 60 }));
  const leaderboard = new Leaderboard({
    standings: stores.standings,
    defaultAvatarUrl: DEFAULT_AVATAR,
    cacheTtlMs: 0,
    now: () => NOW,
  });
  const ingest = new WagerIngest(stores.ingest, { now: () => NOW });
  const admin = new KeyAdmin(stores.apiKeys, { now: () => NOW, afterChange: (ids) => keys.refresh(ids) });
  return { ...serviceTransports({ admission, leaderboard, ingest, admin }), admin, ingest };
}

function serviceTransports(services: {
  readonly admission: Admission;
  readonly leaderboard: Leaderboard;
  readonly ingest: WagerIngest;
  readonly admin: KeyAdmin;
}): ServiceTransports {
  const authenticate: Interceptor = (next) => async (request) => {
    const admitted = await services.admission.admitBearer(request.header.get("authorization"));
    request.contextValues.set(callerKey, admitted.caller);
    return next(request);
  };
  return {
    publicTransport: createRouterTransport(
      (router) => {
        router.service(TopWagersService, leaderboardRpc(services.leaderboard));
      },
      { router: { interceptors: [authenticate] } },
    ),
    internalTransport: createRouterTransport((router) => {
      router.service(WagerIngestService, wagerIngestService(services.ingest));
      router.service(ApiKeyService, apiKeyService(services.admin));
    }),
  };
}

export const bearer = (secret: string) => ({ headers: { authorization: `Bearer ${secret}` } });

/** The board of January 2026 (top 10) through TopWagersService, sent with `secret` as the key (none: no key). */
export function januaryTop(transport: Transport, secret?: string, rankBy?: RankBy) {
  return createClient(TopWagersService, transport).getTopAffiliateWagersByPeriod(
    create(GetTopAffiliateWagersByPeriodRequestSchema, {
      ...JANUARY,
      numUsers: 10,
      ...(rankBy === undefined ? {} : { rankBy }),
    }),
    secret === undefined ? {} : bearer(secret),
  );
}

/** The Connect error a call failed with: code, message, ErrorInfo reasons and BadRequest violations. */
export async function failure(call: Promise<unknown>) {
  const error = await refusal(call);
  return {
    code: error.code,
    message: error.rawMessage,
    reasons: error.findDetails(ErrorInfoSchema).map((i) => i.reason),
    violations: error
      .findDetails(BadRequestSchema)
      .flatMap((b) => b.fieldViolations.map((v) => [v.field, v.description])),
  };
}

/** What the shared cases call: the transports and a key of affiliate aff-mem, read once beforeAll has set them. */
export type ServiceCaseContext = () => ServiceTransports & { readonly key: string };

/** Refusals of the public call, the same whatever stores the services run on. */
export function refusedCallCases(ctx: ServiceCaseContext): void {
  it("refuses an invalid request with INVALID_ARGUMENT and one violation per field", async () => {
    const client = createClient(TopWagersService, ctx().publicTransport);
    const refused = await failure(
      client.getTopAffiliateWagersByPeriod(
        create(GetTopAffiliateWagersByPeriodRequestSchema, {
          startTimestamp: BigInt(FEB_1_2026),
          endTimestamp: BigInt(FEB_1_2026 - 1),
          numUsers: 101,
        }),
        bearer(ctx().key),
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
    const refused = await failure(januaryTop(ctx().publicTransport));
    expect(refused).toEqual({
      code: Code.Unauthenticated,
      message: "missing or invalid API key (send Authorization Bearer with your key)",
      reasons: ["UNAUTHENTICATED"],
      violations: [],
    });
  });
}

/**
 * Ingest cases the same on every store. They record user m-3 of aff-mem and wager w-new at
 * 1 January 2026 00:01:00, which later cases of the file see.
 */
export function ingestCases(ctx: ServiceCaseContext): void {
  it("records a wager once, counts a re-send as a duplicate, and the leaderboard sums it exactly", async () => {
    const ingest = createClient(WagerIngestService, ctx().internalTransport);
    expect(
      await ingest.upsertUsers({
        users: [{ id: "m-3", affiliateId: "aff-mem", username: "carol", avatar: "https://img.example.test/c.png" }],
      }),
    ).toMatchObject({ upserted: 1 });
    const wagers = [{ id: "w-new", userId: "m-3", amount: "0.00000001", placedAt: BigInt(JAN_1_2026 + 60) }];
    expect(await ingest.recordWagers({ wagers })).toMatchObject({ recorded: 1, duplicates: 0 });
    expect(await ingest.recordWagers({ wagers })).toMatchObject({ recorded: 0, duplicates: 1 });

    const top = createClient(TopWagersService, ctx().publicTransport);
    const response = await top.getTopAffiliateWagersByPeriod(
      create(GetTopAffiliateWagersByPeriodRequestSchema, {
        startTimestamp: BigInt(JAN_1_2026 + 60),
        endTimestamp: BigInt(JAN_1_2026 + 60),
        numUsers: 10,
      }),
      bearer(ctx().key),
    );
    expect(response.data.map((e) => [e.rank, e.userId, e.totalWageredDecimal])).toEqual([[1, "m-3", "0.00000001"]]);
  });

  it("refuses a wager of an unknown user with FAILED_PRECONDITION and writes nothing", async () => {
    const ingest = createClient(WagerIngestService, ctx().internalTransport);
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
}

/**
 * The ApiKeyService create case, the same on every store: a key of aff-other (whose only user o-1 wagered
 * 1000000 in January 2026) lists under its affiliate and reads that affiliate's board. `stamp` bounds the
 * creation time the store writes: `before()` is read before the call and `after()` after it.
 */
export function keyCreationCases(
  ctx: ServiceCaseContext,
  stamp: { readonly before: () => bigint; readonly after: () => bigint },
): void {
  it("creates a key that lists under its affiliate and reads that affiliate's leaderboard", async () => {
    const admin = createClient(ApiKeyService, ctx().internalTransport);
    const before = stamp.before();
    const created = await admin.createApiKey({
      affiliateId: "aff-other",
      label: "in memory",
      rateLimit: { points: 5, windowSeconds: 60 },
    });
    const after = stamp.after();
    expect(created.secret).toMatch(/^tw_sk_[0-9A-Za-z]{38}$/); // prefix, 32 random, 6 checksum
    expect(created.apiKey).toMatchObject({
      affiliateId: "aff-other",
      label: "in memory",
      rateLimit: { points: 5, windowSeconds: 60 },
    });
    expect(created.apiKey?.id).toMatch(/^key_[0-9a-f]{16}$/);
    expect(created.apiKey?.createdAt).toBeGreaterThanOrEqual(before);
    expect(created.apiKey?.createdAt).toBeLessThanOrEqual(after);
    expect(created.apiKey?.expiresAt).toBeUndefined();
    expect(created.apiKey?.revokedAt).toBeUndefined();

    expect((await admin.listApiKeys({ affiliateId: "aff-other" })).apiKeys).toEqual([created.apiKey]);

    const response = await januaryTop(ctx().publicTransport, created.secret);
    expect(response.data.map((e) => [e.rank, e.userId, e.totalWageredDecimal])).toEqual([[1, "o-1", "1000000"]]);
  });
}
