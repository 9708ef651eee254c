/**
 * The caps on what one key can make and send, over Connect JSON on the public port (a secret key with every
 * scope), with small settings: WEBHOOK_ENDPOINTS_PER_AFFILIATE=2 (a third endpoint is 400 failed_precondition
 * naming the setting; deleting one makes room), WEBHOOK_MANUAL_SENDS_PER_MINUTE=2 (a third SendTestEvent or
 * RedeliverWebhook to the same endpoint within the minute is 429 with Retry-After; another endpoint keeps its
 * own count, unless it points at the same URL of the same affiliate: that budget is shared, and survives deleting
 * and re-creating the endpoint), RACES_PER_AFFILIATE=2 (a third scheduled or live race is 400; cancelling one makes room).
 */
import { describe, expect, it } from "vitest";
import { createKey } from "../support/fixtures.js";
import { useTestServer } from "../support/server.js";

const server = useTestServer("caps", {
  WEBHOOK_ALLOW_PRIVATE_URLS: "true",
  WEBHOOK_ENDPOINTS_PER_AFFILIATE: "2",
  WEBHOOK_MANUAL_SENDS_PER_MINUTE: "2",
  RACES_PER_AFFILIATE: "2",
});

interface Answer {
  readonly status: number;
  readonly retryAfter: string | null;
  readonly body: Record<string, unknown>;
}

/** One Connect JSON call: the HTTP status, Retry-After and the JSON body. */
async function call(key: string, procedure: string, request: unknown): Promise<Answer> {
  const response = await fetch(`${server.baseUrl}/topwagers.v1.${procedure}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(request),
  });
  const body = (await response.json()) as Record<string, unknown>;
  return { status: response.status, retryAfter: response.headers.get("retry-after"), body };
}

/** A refusal as compared here: status, Retry-After, Connect code and message, the ErrorInfo's reason and metadata. */
function refusalOf(answer: Answer) {
  const details = (answer.body.details ?? []) as { type: string; debug?: Record<string, unknown> }[];
  const info = details.find((d) => d.type === "google.rpc.ErrorInfo")?.debug;
  return [answer.status, answer.retryAfter, answer.body.code, answer.body.message, info?.reason, info?.metadata];
}

/** The refusal of a cap at 2 on what an affiliate has: 400 failed_precondition, LIMIT_REACHED naming the setting. */
const limitReached = (message: string, setting: string) => [
  400,
  null,
  "failed_precondition",
  message,
  "LIMIT_REACHED",
  { setting, limit: "2" },
];

const endpoint = (n: number) => ({ url: `http://127.0.0.1:9/hook-${n}`, eventTypes: ["webhook.test"] });

describe("the caps", () => {
  it("refuse a third webhook endpoint of an affiliate with 400 naming WEBHOOK_ENDPOINTS_PER_AFFILIATE", async () => {
    const { secret } = await createKey(server.database.db, "aff-caps-endpoints");
    const first = await call(secret, "WebhookService/CreateWebhookEndpoint", endpoint(1));
    const second = await call(secret, "WebhookService/CreateWebhookEndpoint", endpoint(2));
    expect([first.status, second.status]).toEqual([200, 200]);
    const third = await call(secret, "WebhookService/CreateWebhookEndpoint", endpoint(3));
    expect(refusalOf(third)).toEqual(
      limitReached(
        "the affiliate has 2 webhook endpoints, the most allowed (WEBHOOK_ENDPOINTS_PER_AFFILIATE). Delete one first",
        "WEBHOOK_ENDPOINTS_PER_AFFILIATE",
      ),
    );
    const firstId = (first.body.endpoint as { id: string }).id;
    expect((await call(secret, "WebhookService/DeleteWebhookEndpoint", { id: firstId })).status).toBe(200);
    expect((await call(secret, "WebhookService/CreateWebhookEndpoint", endpoint(4))).status).toBe(200);
    // Another affiliate has its own count.
    const other = await createKey(server.database.db, "aff-caps-other");
    expect((await call(other.secret, "WebhookService/CreateWebhookEndpoint", endpoint(5))).status).toBe(200);
  });

  it("limit SendTestEvent and RedeliverWebhook per endpoint per minute: 429 with Retry-After", async () => {
    const { secret } = await createKey(server.database.db, "aff-caps-sends");
    const a = (
      (await call(secret, "WebhookService/CreateWebhookEndpoint", endpoint(1))).body.endpoint as { id: string }
    ).id;
    const b = (
      (await call(secret, "WebhookService/CreateWebhookEndpoint", endpoint(2))).body.endpoint as { id: string }
    ).id;
    const sent = await call(secret, "WebhookService/SendTestEvent", { id: a });
    const deliveryId = (sent.body.delivery as { id: string }).id;
    const redelivered = await call(secret, "WebhookService/RedeliverWebhook", { deliveryId });
    expect([sent.status, redelivered.status]).toEqual([200, 200]);
    const message =
      "this endpoint was sent 2 test events and redeliveries in the last minute, the most allowed (WEBHOOK_MANUAL_SENDS_PER_MINUTE)";
    const metadata = { setting: "WEBHOOK_MANUAL_SENDS_PER_MINUTE", limit: "2" };
    const refusedTest = refusalOf(await call(secret, "WebhookService/SendTestEvent", { id: a }));
    const refusedAgain = refusalOf(await call(secret, "WebhookService/RedeliverWebhook", { deliveryId }));
    for (const refused of [refusedTest, refusedAgain]) {
      const retryAfter = Number(refused[1]);
      expect(retryAfter >= 55 && retryAfter <= 60).toBe(true);
      expect([refused[0], ...refused.slice(2)]).toEqual([
        429,
        "resource_exhausted",
        message,
        "TOO_MANY_SENDS",
        metadata,
      ]);
    }
    // The other endpoint of the same key has its own count.
    expect((await call(secret, "WebhookService/SendTestEvent", { id: b })).status).toBe(200);
  });

  it("count manual sends per affiliate and target URL too: re-creating the endpoint keeps the budget", async () => {
    const { secret } = await createKey(server.database.db, "aff-caps-recreate");
    const create = async (url: string) =>
      (
        (await call(secret, "WebhookService/CreateWebhookEndpoint", { url, eventTypes: ["webhook.test"] })).body
          .endpoint as { id: string }
      ).id;
    const first = await create("http://127.0.0.1:9/receiver");
    const sent = [
      await call(secret, "WebhookService/SendTestEvent", { id: first }),
      await call(secret, "WebhookService/SendTestEvent", { id: first }),
    ];
    expect(sent.map((a) => a.status)).toEqual([200, 200]);
    expect((await call(secret, "WebhookService/DeleteWebhookEndpoint", { id: first })).status).toBe(200);
    // The same receiver, written another way (scheme and host case, a default port, a fragment): the same URL.
    const again = await create("HTTP://127.0.0.1:9/receiver#again");
    const refused = refusalOf(await call(secret, "WebhookService/SendTestEvent", { id: again }));
    const retryAfter = Number(refused[1]);
    expect(retryAfter >= 55 && retryAfter <= 60).toBe(true);
    expect([refused[0], ...refused.slice(2)]).toEqual([
      429,
      "resource_exhausted",
      "this endpoint's URL was sent (through any endpoint of the affiliate) 2 test events and redeliveries in the " +
        "last minute, the most allowed (WEBHOOK_MANUAL_SENDS_PER_MINUTE)",
      "TOO_MANY_SENDS",
      { setting: "WEBHOOK_MANUAL_SENDS_PER_MINUTE", limit: "2" },
    ]);
  });

  it("count manual sends to one URL through two endpoints against one budget", async () => {
    const { secret } = await createKey(server.database.db, "aff-caps-shared-url");
    const create = async (url: string) =>
      (
        (await call(secret, "WebhookService/CreateWebhookEndpoint", { url, eventTypes: ["webhook.test"] })).body
          .endpoint as { id: string }
      ).id;
    const a = await create("http://127.0.0.1:9/shared");
    const b = await create("http://127.0.0.1:9/hooks/../shared");
    expect((await call(secret, "WebhookService/SendTestEvent", { id: a })).status).toBe(200);
    const viaB = await call(secret, "WebhookService/SendTestEvent", { id: b });
    expect(viaB.status).toBe(200);
    const deliveryId = (viaB.body.delivery as { id: string }).id;
    // Each endpoint has sent once, the URL twice: a third send through either is refused.
    for (const refused of [
      refusalOf(await call(secret, "WebhookService/SendTestEvent", { id: a })),
      refusalOf(await call(secret, "WebhookService/RedeliverWebhook", { deliveryId })),
    ]) {
      expect([refused[0], refused[2], refused[4]]).toEqual([429, "resource_exhausted", "TOO_MANY_SENDS"]);
    }
    // Another affiliate's endpoint to the same URL has its own budget.
    const other = await createKey(server.database.db, "aff-caps-shared-url-other");
    const theirs = (
      (
        await call(other.secret, "WebhookService/CreateWebhookEndpoint", {
          url: "http://127.0.0.1:9/shared",
          eventTypes: ["webhook.test"],
        })
      ).body.endpoint as { id: string }
    ).id;
    expect((await call(other.secret, "WebhookService/SendTestEvent", { id: theirs })).status).toBe(200);
  });

  it("refuse a third scheduled or live race of an affiliate with 400 naming RACES_PER_AFFILIATE", async () => {
    const { secret } = await createKey(server.database.db, "aff-caps-races");
    const now = Math.floor(Date.now() / 1000);
    const rules = (slug: string) => ({
      rules: { slug, title: slug, startTimestamp: now + 3_600, endTimestamp: now + 86_400, prizes: ["10"] },
    });
    const first = await call(secret, "RaceService/CreateRace", rules("one"));
    const second = await call(secret, "RaceService/CreateRace", rules("two"));
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(refusalOf(await call(secret, "RaceService/CreateRace", rules("three")))).toEqual(
      limitReached(
        "the affiliate has 2 scheduled and live races, the most allowed (RACES_PER_AFFILIATE). Cancel one first",
        "RACES_PER_AFFILIATE",
      ),
    );
    const firstId = (first.body.race as { id: string }).id;
    expect((await call(secret, "RaceService/CancelRace", { id: firstId })).status).toBe(200);
    expect((await call(secret, "RaceService/CreateRace", rules("three"))).status).toBe(200);
  });
});
