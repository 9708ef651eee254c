/**
 * What a disabled endpoint missed is kept (issue 40 items 2 and 3). A race event sent while an endpoint is
 * disabled (here by a 410 Gone) is written as a failed delivery, never sent; once the endpoint is re-enabled,
 * RedeliverWebhook sends it with its own webhook-id and signature. And the delivery gauges are read from the
 * database by an instance that does not deliver (WEBHOOK_DELIVERY=false), so the docs' alert can fire from it.
 */
import { Webhook } from "standardwebhooks";
import { beforeAll, describe, expect, it } from "vitest";
import { startWebhookDelivery } from "../../src/jobs/webhook-delivery.js";
import { silentLogger } from "../../src/platform/logger.js";
import { Metrics } from "../../src/platform/observability/metrics.js";
import { newWebhookSecret } from "../../src/webhooks/core/signature.js";
import { useTestDatabase } from "../support/database.js";
import { NOV_1 } from "../support/dates.js";
import { addUsers, affiliateKey } from "../support/fixtures.js";
import { until } from "../support/polling.js";
import { instanceRaces, ok, raceNamed } from "../support/races.js";
import { quickDeliveryWorker, useWebhookBench } from "../support/webhook-receiver.js";

const database = useTestDatabase("webhook_disabled_endpoints");
let now = NOV_1 - 100;
const webhooks = useWebhookBench(database);

beforeAll(async () => {
  await addUsers(database.db, [{ id: "u1", affiliateId: "gone-aff", username: "ann", avatar: "" }]);
});

describe("a disabled endpoint", () => {
  it("keeps the events sent while it was disabled as failed deliveries, redelivered once it is re-enabled", async () => {
    const { receiver, transport, store } = webhooks;
    const affiliateId = await affiliateKey(database.db.read, "gone-aff");
    const secret = newWebhookSecret();
    const endpoint = await webhooks.endpoint("ep_gone", "gone-aff", ["race.started", "race.cancelled"], secret);
    const races = instanceRaces(database.db, { now: () => now, freeze: "primary" });
    const worker = quickDeliveryWorker(store, transport, "t");
    const race = ok(await races.create(affiliateId, raceNamed("gone", "Gone", [NOV_1, NOV_1 + 3600]))).race;
    // The receiver answers 410 Gone to the start: the endpoint is disabled.
    receiver.answer(() => ({ status: 410 }));
    now = NOV_1 + 1;
    await races.tick();
    while ((await worker.runOnce()) > 0);
    expect((await store.findEndpoint(endpoint.id))?.enabled).toBe(false);
    // Sent while it is disabled: nothing goes out, and the delivery is kept, failed.
    await races.cancel(affiliateId, race.id);
    while ((await worker.runOnce()) > 0);
    expect(receiver.received).toHaveLength(1);
    const deliveries = await store.listDeliveries(endpoint.id, 10);
    expect(deliveries.map((d) => [d.eventType, d.state, d.attempts])).toEqual([
      ["race.cancelled", "failed", 0],
      ["race.started", "failed", 1],
    ]);
    expect(deliveries[0]?.lastError).toBe(
      "the endpoint was disabled when the event was sent; redeliver it once re-enabled",
    );

    receiver.answer(() => ({ status: 200, body: "ok" }));
    await store.updateEndpoint(endpoint.id, { enabled: true });
    const cancelled = deliveries[0];
    if (cancelled === undefined) throw new Error("no delivery");
    await store.redeliver(cancelled.id, Date.now());
    while ((await worker.runOnce()) > 0);
    expect(receiver.received).toHaveLength(2);
    const arrived = receiver.received[1];
    if (arrived === undefined) throw new Error("nothing arrived");
    const event = new Webhook(secret).verify(arrived.body, arrived.headers) as { type: string; data: { id: string } };
    expect([event.type, event.data.id, arrived.headers["webhook-id"]]).toEqual([
      "race.cancelled",
      race.id,
      cancelled.messageId,
    ]);
    expect((await store.findDelivery(cancelled.id))?.state).toBe("delivered");
  });

  it("is counted in the delivery gauges by an instance that does not deliver", async () => {
    const { store, secretKey } = webhooks;
    const metrics = new Metrics();
    const settings = {
      delivery: false,
      allowPrivateUrls: true,
      secretKey,
      retryScale: 1,
      timeoutMs: 3_000,
      pollMs: 1_000,
      endpointsPerAffiliate: 10,
      manualSendsPerMinute: 10,
    };
    await store.updateEndpoint("ep_gone", { enabled: false });
    const delivery = startWebhookDelivery(settings, database.db, metrics, silentLogger);
    try {
      expect(delivery.worker).toBeUndefined();
      const gauge = async () =>
        (await metrics.registry.getSingleMetric("topwagers_webhook_disabled_endpoints")?.get())?.values[0]?.value;
      expect(await until("the disabled endpoints gauge", gauge, (value) => value === 1)).toBe(1);
    } finally {
      await delivery.stop();
    }
  });
});
