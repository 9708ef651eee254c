/**
 * An API key's default ranking (CreateApiKey.default_rank_by, KeyAdmin.setRankBy): a key issued
 * with RANK_BY_WEIGHTED gets weighted boards from requests that do not say (REST with the fourth
 * field, Connect, the watch stream), an explicit rankBy wins, a change of the default holds within
 * a change-feed poll, a rotation keeps it, and a ranking this build does not know is refused.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  RankBy,
  TopWagersService,
  WatchTopAffiliateWagersByPeriodRequestSchema,
} from "../../gen/topwagers/v1/top_wagers_pb.js";
import { KeyAdmin } from "../../src/keys/core/key-admin.js";
import { mariadbApiKeys } from "../../src/keys/sql/key-stores.js";
import { JAN_1_2025, JANUARY } from "../support/dates.js";
import { keysFollowed } from "../support/fixtures.js";
import { type IngestServers, startIngestServers, TEST_INGEST_TOKEN, wagerMessage } from "../support/ingest.js";

const ADMIN_TOKEN = "test-admin-token-rank-by-0123456789";
const AVATAR = (id: string) => `https://avatars.example.com/${id}.png`;
/** ada wagered 100 at 10 % (weighted 10), bea 50 at 100 %: ada leads by total, bea by weight. */
const ADA = { username: "ada", avatar: AVATAR("kd-a"), total: "100", weighted: "10" };
const BEA = { username: "bea", avatar: AVATAR("kd-b"), total: "50", weighted: "50" };

let servers: IngestServers;

function admin() {
  return servers.adminClient(ADMIN_TOKEN);
}

function body(entries: readonly (typeof ADA)[], weighted: boolean): string {
  const items = entries.map(
    (e) =>
      `{"username":"${e.username}","avatar":"${e.avatar}","totalWagered":${e.total}` +
      `${weighted ? `,"weightedWagered":${e.weighted}` : ""}}`,
  );
  return `{"data":[${items.join(",")}],"errors":null}`;
}

async function rest(key: string, rankBy?: string): Promise<[number, string]> {
  const response = await fetch(`${servers.publicUrl}/top-affiliate-wagers-by-period`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ ...JANUARY, ...(rankBy === undefined ? {} : { rankBy }) }),
  });
  return [response.status, await response.text()];
}

async function connectOrder(key: string, rankBy?: RankBy): Promise<string[]> {
  const answer = await servers.publicClient(key).getTopAffiliateWagersByPeriod({
    startTimestamp: BigInt(JANUARY.startTimestamp),
    endTimestamp: BigInt(JANUARY.endTimestamp),
    numUsers: JANUARY.numUsers,
    ...(rankBy === undefined ? {} : { rankBy }),
  });
  return answer.data.map((e) => `${e.username} ${e.totalWageredDecimal}/${e.weightedWageredDecimal}`);
}

beforeAll(async () => {
  servers = await startIngestServers("key_default_rank", { INGEST_TOKEN: TEST_INGEST_TOKEN, ADMIN_TOKEN });
  const ingest = servers.client("grpc");
  await ingest.upsertUsers({
    users: [
      { id: "kd-a", affiliateId: "aff-kd", username: "ada", avatar: AVATAR("kd-a") },
      { id: "kd-b", affiliateId: "aff-kd", username: "bea", avatar: AVATAR("kd-b") },
    ],
  });
  await ingest.recordWagers({
    wagers: [
      wagerMessage("kd-1", "kd-a", "100", JAN_1_2025 + 60, 1000),
      wagerMessage("kd-2", "kd-b", "50", JAN_1_2025 + 120, 10_000),
    ],
  });
}, 60_000);

afterAll(async () => {
  await servers?.close();
});

describe("a key's default ranking", () => {
  it("gives weighted boards to requests that do not say, on REST, Connect and the watch; the request's own wins", async () => {
    const created = await admin().createApiKey({
      affiliateId: "aff-kd",
      label: "race site",
      defaultRankBy: RankBy.WEIGHTED,
    });
    expect(created.apiKey?.defaultRankBy).toBe(RankBy.WEIGHTED);
    expect((await admin().listApiKeys({ affiliateId: "aff-kd" })).apiKeys.map((k) => k.defaultRankBy)).toEqual([
      RankBy.WEIGHTED,
    ]);
    await keysFollowed();
    const key = created.secret;
    expect(await rest(key)).toEqual([200, body([BEA, ADA], true)]);
    expect(await rest(key, "weighted")).toEqual([200, body([BEA, ADA], true)]);
    expect(await rest(key, "wagered")).toEqual([200, body([ADA, BEA], true)]);
    expect(await connectOrder(key)).toEqual(["bea 50/50", "ada 100/10"]);
    expect(await connectOrder(key, RankBy.UNSPECIFIED)).toEqual(["bea 50/50", "ada 100/10"]);
    expect(await connectOrder(key, RankBy.WAGERED)).toEqual(["ada 100/10", "bea 50/50"]);

    const client = createClient(
      TopWagersService,
      createConnectTransport({ baseUrl: servers.publicUrl, httpVersion: "1.1" }),
    );
    const abort = new AbortController();
    const stream = client.watchTopAffiliateWagersByPeriod(
      create(WatchTopAffiliateWagersByPeriodRequestSchema, {
        startTimestamp: BigInt(JANUARY.startTimestamp),
        endTimestamp: BigInt(JANUARY.endTimestamp),
        numUsers: JANUARY.numUsers,
      }),
      { headers: { authorization: `Bearer ${key}` }, signal: abort.signal },
    );
    for await (const message of stream) {
      expect(message.data.map((e) => e.username)).toEqual(["bea", "ada"]);
      break;
    }
    abort.abort();

    // A key without a default: exactly the three fields, by total wagered.
    const plain = await admin().createApiKey({ affiliateId: "aff-kd", label: "plain site" });
    expect(plain.apiKey?.defaultRankBy).toBe(RankBy.UNSPECIFIED);
    await keysFollowed();
    expect(await rest(plain.secret)).toEqual([200, body([ADA, BEA], false)]);
  });

  it("changes on every instance within a poll (setRankBy), and a rotation keeps it", async () => {
    const created = await admin().createApiKey({ affiliateId: "aff-kd", defaultRankBy: RankBy.WEIGHTED });
    const id = created.apiKey?.id ?? "";
    await keysFollowed();
    expect(await rest(created.secret)).toEqual([200, body([BEA, ADA], true)]);
    // Another process (the CLI) changes it: this server's key set follows the change feed.
    const other = new KeyAdmin(mariadbApiKeys(servers.database.db.write));
    expect(await other.setRankBy(id, "wagered")).toMatchObject({ kind: "updated", key: { defaultRankBy: "wagered" } });
    await keysFollowed();
    expect(await rest(created.secret)).toEqual([200, body([ADA, BEA], false)]);
    expect(await other.setRankBy(id, "weighted")).toMatchObject({ kind: "updated" });
    await keysFollowed();
    expect(await rest(created.secret)).toEqual([200, body([BEA, ADA], true)]);
    const rotated = await admin().rotateApiKey({ id, overlapSeconds: 60 });
    expect(rotated.apiKey?.defaultRankBy).toBe(RankBy.WEIGHTED);
    await keysFollowed();
    expect(await rest(rotated.secret)).toEqual([200, body([BEA, ADA], true)]);
    expect(await other.setRankBy(id, null)).toMatchObject({ kind: "updated", key: { defaultRankBy: null } });
    expect(await other.setRankBy("key_nope", "weighted")).toEqual({ kind: "not_found", id: "key_nope" });
  });

  it("refuses a ranking this build does not know, naming defaultRankBy, and creates nothing", async () => {
    const before = (await admin().listApiKeys({})).apiKeys.length;
    const error = await admin()
      .createApiKey({ affiliateId: "aff-kd", defaultRankBy: 5 as RankBy })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(ConnectError);
    expect([(error as ConnectError).code, (error as ConnectError).rawMessage]).toEqual([
      Code.InvalidArgument,
      "defaultRankBy must be RANK_BY_WAGERED or RANK_BY_WEIGHTED (got 5)",
    ]);
    expect((await admin().listApiKeys({})).apiKeys.length).toBe(before);
  });
});
