/**
 * Observability: GET /metrics on the internal listener counts calls by
 * procedure, protocol and code, ingest results, cache use and pool state. That
 * logs are JSON and never carry keys or tokens: test/unit/log-redaction.test.ts.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { OCT_1 } from "../support/dates.js";
import { createKey } from "../support/fixtures.js";
import { TEST_INGEST_TOKEN, useIngestServers } from "../support/ingest.js";

const servers = useIngestServers("metrics");
let key: string;

beforeAll(async () => {
  key = (await createKey(servers.database.db, "aff-m")).secret;
});

async function metricsText(): Promise<string> {
  const response = await fetch(`${servers.internalUrl}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  return response.text();
}

/** The value of one sample line, e.g. `name{a="b"} 3`. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe("GET /metrics", () => {
  it("counts calls by procedure, protocol and code, and ingest results", async () => {
    const ingest = servers.client("grpc");
    await ingest.upsertUsers({ users: [{ id: "u1", affiliateId: "aff-m", username: "ann", avatar: "" }] });
    const wagers = [{ id: "w1", userId: "u1", amount: "2.5", placedAt: BigInt(OCT_1) }];
    await ingest.recordWagers({ wagers });
    await ingest.recordWagers({ wagers }); // a re-send: one duplicate
    const post = (authorization: string, body: object) =>
      fetch(`${servers.publicUrl}/top-affiliate-wagers-by-period`, {
        method: "POST",
        headers: { authorization, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const period = { startTimestamp: OCT_1, endTimestamp: OCT_1 + 59, numUsers: 5 };
    expect((await post(`Bearer ${key}`, period)).status).toBe(200);
    expect((await post(`Bearer ${key}`, period)).status).toBe(200);
    expect((await post(`Bearer ${key}`, { ...period, numUsers: 0 })).status).toBe(400);
    expect((await post("Bearer tw_unknownunknownunknownunknown1234", period)).status).toBe(401);
    const grpc = servers.publicClient(key);
    await grpc.getTopAffiliateWagersByPeriod({
      startTimestamp: BigInt(OCT_1),
      endTimestamp: BigInt(OCT_1 + 59),
      numUsers: 5,
    });

    const text = await metricsText();
    const rest = 'procedure="topwagers.v1.TopWagersService/GetTopAffiliateWagersByPeriod",protocol="rest"';
    expect(sample(text, `topwagers_rpc_calls_total{${rest},code="ok"}`)).toBe(2);
    expect(sample(text, `topwagers_rpc_calls_total{${rest},code="invalid_argument"}`)).toBe(1);
    expect(sample(text, `topwagers_rpc_calls_total{${rest},code="unauthenticated"}`)).toBe(1);
    expect(
      sample(
        text,
        'topwagers_rpc_calls_total{procedure="topwagers.v1.TopWagersService/GetTopAffiliateWagersByPeriod",protocol="grpc",code="ok"}',
      ),
    ).toBe(1);
    expect(
      sample(
        text,
        'topwagers_rpc_calls_total{procedure="topwagers.v1.WagerIngestService/RecordWagers",protocol="grpc",code="ok"}',
      ),
    ).toBe(2);
    expect(sample(text, 'topwagers_ingest_wagers_total{result="recorded"}')).toBe(1);
    expect(sample(text, 'topwagers_ingest_wagers_total{result="duplicate"}')).toBe(1);
    expect(sample(text, "topwagers_ingest_users_upserted_total")).toBe(1);
    expect(sample(text, `topwagers_rpc_call_duration_seconds_count{${rest}}`)).toBe(4);
    expect(sample(text, 'topwagers_db_pool_connections{pool="read",state="open"}')).toBeGreaterThan(0);
    expect(sample(text, "topwagers_result_cache_entries")).toBe(0); // CACHE_TTL_MS=0 in tests
    expect(text).toContain("topwagers_process_resident_memory_bytes");
    // No secret ever reaches the metrics.
    expect(text).not.toContain(key);
    expect(text).not.toContain(TEST_INGEST_TOKEN);
  });

  it("is only on the internal listener", async () => {
    const response = await fetch(`${servers.publicUrl}/metrics`);
    expect(response.status).toBe(404);
  });
});
