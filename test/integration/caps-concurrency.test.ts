/**
 * The caps under concurrency, on one MariaDB: 100 CreateRace and 100 CreateWebhookEndpoint calls of one affiliate
 * sent at once over Connect JSON (the default caps, RACES_PER_AFFILIATE=50 and WEBHOOK_ENDPOINTS_PER_AFFILIATE=20)
 * end with exactly the cap made, in the answers and in the tables; every other call is refused with the documented
 * LIMIT_REACHED body. The count and the insert are one transaction that first writes the affiliate's row
 * (races/sql/race-slugs.ts, webhooks/sql/webhooks.ts), so no two creates count the same rows.
 */
import type { RowDataPacket } from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { createKey } from "../support/fixtures.js";
import { useTestServer } from "../support/server.js";

const server = useTestServer("caps-concurrency", { WEBHOOK_ALLOW_PRIVATE_URLS: "true" });

const CALLS = 100;

interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

async function call(key: string, procedure: string, request: unknown): Promise<Answer> {
  const response = await fetch(`${server.baseUrl}/topwagers.v1.${procedure}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(request),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** The LIMIT_REACHED body of a cap, as docs/api.md gives it (Connect JSON). */
function limitBody(message: string, setting: string, limit: number) {
  return {
    code: "failed_precondition",
    message,
    details: [
      {
        type: "google.rpc.ErrorInfo",
        value: expect.any(String),
        debug: { reason: "LIMIT_REACHED", domain: "topwagers", metadata: { setting, limit: String(limit) } },
      },
    ],
  };
}

/** [calls answered 200, the refusals' bodies] of `answers`; any other answer fails. */
function tally(answers: readonly Answer[]): { ok: number; refused: Record<string, unknown>[] } {
  const ok = answers.filter((a) => a.status === 200).length;
  const refused = answers.filter((a) => a.status !== 200);
  for (const answer of refused) expect(answer.status).toBe(400);
  return { ok, refused: refused.map((a) => a.body) };
}

async function count(sql: string, affiliate: string): Promise<number> {
  const [rows] = await server.database.db.write.query<RowDataPacket[]>(sql, [affiliate]);
  return Number(rows[0]?.n);
}

describe("caps under 100 concurrent creates of one affiliate", () => {
  it("make exactly 50 races (RACES_PER_AFFILIATE) and refuse the other 50 with LIMIT_REACHED", async () => {
    const { secret } = await createKey(server.database.db, "aff-caps-race-storm");
    const now = Math.floor(Date.now() / 1000);
    const answers = await Promise.all(
      Array.from({ length: CALLS }, (_, i) =>
        call(secret, "RaceService/CreateRace", {
          rules: { slug: `storm-${i}`, title: `Storm ${i}`, startTimestamp: now + 3_600, endTimestamp: now + 86_400 },
        }),
      ),
    );
    const { ok, refused } = tally(answers);
    expect([ok, refused.length]).toEqual([50, 50]);
    const message =
      "the affiliate has 50 scheduled and live races, the most allowed (RACES_PER_AFFILIATE). Cancel one first";
    for (const body of refused) expect(body).toEqual(limitBody(message, "RACES_PER_AFFILIATE", 50));
    const stored = await count(
      "SELECT COUNT(*) AS n FROM races r JOIN affiliates a ON a.id = r.affiliate_id WHERE a.external_id = ?",
      "aff-caps-race-storm",
    );
    expect(stored).toBe(50);
  }, 60_000);

  it("make exactly 20 webhook endpoints (WEBHOOK_ENDPOINTS_PER_AFFILIATE) and refuse the other 80", async () => {
    const { secret } = await createKey(server.database.db, "aff-caps-endpoint-storm");
    const answers = await Promise.all(
      Array.from({ length: CALLS }, (_, i) =>
        call(secret, "WebhookService/CreateWebhookEndpoint", {
          url: `http://127.0.0.1:9/storm-${i}`,
          eventTypes: ["webhook.test"],
        }),
      ),
    );
    const { ok, refused } = tally(answers);
    expect([ok, refused.length]).toEqual([20, 80]);
    const message =
      "the affiliate has 20 webhook endpoints, the most allowed (WEBHOOK_ENDPOINTS_PER_AFFILIATE). Delete one first";
    for (const body of refused) expect(body).toEqual(limitBody(message, "WEBHOOK_ENDPOINTS_PER_AFFILIATE", 20));
    const stored = await count(
      "SELECT COUNT(*) AS n FROM webhook_endpoints p JOIN affiliates a ON a.id = p.affiliate_id WHERE a.external_id = ?",
      "aff-caps-endpoint-storm",
    );
    expect(stored).toBe(20);
  }, 60_000);
});
