/**
 * Race events reach a receiver (the first test): a race's start, end, freeze and a
 * cancellation, written to the outbox in the race's own transactions (storage/race-events.ts), are
 * delivered to the affiliate's subscribed endpoint on 127.0.0.1, each once (also when two instances
 * race to freeze), signed so that standardwebhooks accepts them; an endpoint of another affiliate or
 * not subscribed gets nothing.
 */
import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWebhookTransport } from "../../src/outbound/webhook-sender.js";
import type { Races } from "../../src/races/races.js";
import { WebhookSecretBox } from "../../src/storage/webhook-secrets.js";
import { MariadbWebhookStore } from "../../src/storage/webhooks.js";
import type { WebhookEventType } from "../../src/values/webhook-events.js";
import type { DeliveryWorker } from "../../src/webhooks/delivery-worker.js";
import { newWebhookSecret } from "../../src/webhooks/signature.js";
import { useTestDatabase } from "../support/database.js";
import { NOV_1, NOV_16 } from "../support/dates.js";
import { addUsers, addWagers, affiliateKey } from "../support/fixtures.js";
import { instanceRaces, raceNamed } from "../support/races.js";
import { quickDeliveryWorker, startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.js";

const database = useTestDatabase("webhook_race_events");
const END = NOV_16 - 1;
const REVIEW = 3_600;
let now = NOV_1 - 100;
let affiliateId = 0;
let receiver: WebhookReceiver;
let store: MariadbWebhookStore;
const transport = createWebhookTransport({ allowPrivate: true, userAgent: "test" });

function instance(): Races {
  return instanceRaces(database.db, { now: () => now, avatar: "https://a.example/x.png", freeze: "primary" });
}

/** An endpoint of `affiliate` on the receiver at /<id without "ep_">, subscribed to `eventTypes`. */
function receiverEndpoint(id: string, affiliate: string, eventTypes: WebhookEventType[], secret = newWebhookSecret()) {
  return store.insertEndpoint({
    id,
    affiliateExternalId: affiliate,
    url: `${receiver.url}/${id.replace(/^ep_/, "")}`,
    description: "",
    eventTypes,
    secret,
  });
}

function worker(): DeliveryWorker {
  return quickDeliveryWorker(store, transport, "test");
}

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  store = new MariadbWebhookStore(database.db.write, new WebhookSecretBox(randomBytes(32)));
  await addUsers(database.db, [
    { id: "u1", affiliateId: "race-aff", username: "alice", avatar: "" },
    { id: "u2", affiliateId: "race-aff", username: "bob", avatar: "" },
  ]);
  await addWagers(database.db, [
    { id: "w1", userId: "u1", amount: "300", placedAt: NOV_1 + 10 },
    { id: "w2", userId: "u2", amount: "200.5", placedAt: NOV_1 + 20 },
  ]);
  affiliateId = await affiliateKey(database.db.read, "race-aff");
});

afterAll(async () => {
  transport.close();
  await receiver?.close();
});

describe("race events as webhooks", () => {
  it("started, ended and finalized (once, with two instances freezing), then a cancellation, each delivered once and verified", async () => {
    const secret = newWebhookSecret();
    const endpoint = await receiverEndpoint(
      "ep_races",
      "race-aff",
      ["race.started", "race.ended", "race.finalized", "race.cancelled"],
      secret,
    );
    // Not subscribed to races, and another affiliate's: neither gets anything.
    await receiverEndpoint("ep_tests", "race-aff", ["webhook.test"]);
    await receiverEndpoint("ep_other", "other-aff", ["race.finalized"]);
    const [a, b] = [instance(), instance()];
    const created = await a.create(
      affiliateId,
      raceNamed("november", "November race", [NOV_1, END], {
        prizes: ["100.00", "50.00"],
        reviewSeconds: REVIEW,
      }),
    );
    if (created.kind !== "ok") throw new Error(JSON.stringify(created));
    const raceId = created.value.race.id;
    now = NOV_1 + 5;
    await a.tick();
    now = END + 1;
    await a.tick();
    now = END + REVIEW + 1;
    await Promise.all([a.tick(), b.tick()]);
    now = END + REVIEW + 100;
    await Promise.all([a.tick(), b.tick()]);
    const other = await a.create(
      affiliateId,
      raceNamed("december", "December", [NOV_16 + 86_400 * 20, NOV_16 + 86_400 * 40], {
        prizes: ["10"],
        reviewSeconds: 0,
      }),
    );
    if (other.kind !== "ok") throw new Error(JSON.stringify(other));
    await a.cancel(affiliateId, other.value.race.id);

    const w = worker();
    while ((await w.runOnce()) > 0);
    const got = receiver.received;
    expect(got.map((r) => r.path)).toEqual(["/races", "/races", "/races", "/races"]);
    const events = got.map(
      (r) =>
        new Webhook(secret).verify(r.body, r.headers) as {
          type: string;
          timestamp: string;
          data: Record<string, unknown>;
        },
    );
    // In order per race (docs/webhooks.md); another race's events are not held back behind them.
    const ofRace = (id: unknown) =>
      events.filter((e) => e.data.id === id).map((e) => [e.type, e.data.id, e.data.state]);
    expect(ofRace(raceId)).toEqual([
      ["race.started", raceId, "live"],
      ["race.ended", raceId, "reviewing"],
      ["race.finalized", raceId, "final"],
    ]);
    expect(ofRace(other.value.race.id)).toEqual([["race.cancelled", other.value.race.id, "cancelled"]]);
    expect(events).toHaveLength(4);
    expect(new Set(got.map((r) => r.headers["webhook-id"])).size).toBe(4);
    for (const request of got) expect(Buffer.byteLength(request.body)).toBeLessThan(20 * 1024);
    const finalized = events.find((e) => e.type === "race.finalized") as (typeof events)[number];
    expect(JSON.stringify(finalized.data)).toMatch(/"digest":"[0-9a-f]{64}"/);
    const deliveries = await store.listDeliveries(endpoint.id, 10);
    expect(deliveries.map((d) => [d.eventType, d.state, d.attempts])).toEqual([
      ["race.cancelled", "delivered", 1],
      ["race.finalized", "delivered", 1],
      ["race.ended", "delivered", 1],
      ["race.started", "delivered", 1],
    ]);
  });
});
