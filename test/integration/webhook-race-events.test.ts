/**
 * Race events reach a receiver (the first test): a race's start, end, freeze and a
 * cancellation, written to the outbox in the race's own transactions (races/sql/race-events.ts), are
 * delivered to the affiliate's subscribed endpoint on 127.0.0.1, each once (also when two instances
 * race to freeze), signed so that standardwebhooks accepts them; an endpoint of another affiliate or
 * not subscribed gets nothing.
 */
import { Webhook } from "standardwebhooks";
import { beforeAll, describe, expect, it } from "vitest";
import type { Races } from "../../src/races/core/races.js";
import type { DeliveryWorker } from "../../src/webhooks/core/delivery-worker.js";
import { newWebhookSecret } from "../../src/webhooks/core/signature.js";
import { useTestDatabase } from "../support/database.js";
import { NOV_1, NOV_16 } from "../support/dates.js";
import { addUsers, addWagers, affiliateKey } from "../support/fixtures.js";
import { instanceRaces, RACE_EVENT_TYPES, raceNamed } from "../support/races.js";
import { quickDeliveryWorker, useWebhookBench } from "../support/webhook-receiver.js";

const database = useTestDatabase("webhook_race_events");
const END = NOV_16 - 1;
const REVIEW = 3_600;
let now = NOV_1 - 100;
let affiliateId = 0;
const webhooks = useWebhookBench(database);

function instance(): Races {
  return instanceRaces(database.db, { now: () => now, avatar: "https://a.example/x.png", freeze: "primary" });
}

function worker(): DeliveryWorker {
  return quickDeliveryWorker(webhooks.store, webhooks.transport, "test");
}

beforeAll(async () => {
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

describe("race events as webhooks", () => {
  it("started, ended and finalized (once, with two instances freezing), then a cancellation, each delivered once and verified", async () => {
    const secret = newWebhookSecret();
    const endpoint = await webhooks.endpoint("ep_races", "race-aff", RACE_EVENT_TYPES, secret);
    // Not subscribed to races, and another affiliate's: neither gets anything.
    await webhooks.endpoint("ep_tests", "race-aff", ["webhook.test"]);
    await webhooks.endpoint("ep_other", "other-aff", ["race.finalized"]);
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
    const got = webhooks.receiver.received;
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
    const deliveries = await webhooks.store.listDeliveries(endpoint.id, 10);
    expect(deliveries.map((d) => [d.eventType, d.state, d.attempts])).toEqual([
      ["race.cancelled", "delivered", 1],
      ["race.finalized", "delivered", 1],
      ["race.ended", "delivered", 1],
      ["race.started", "delivered", 1],
    ]);
  });
});
