/**
 * One race's events reach an endpoint in order (issue 40 item 4): a catch-up writes a race's started, ended and
 * finalized events at once; the receiver fails the first POST (started), and ended and finalized wait for its
 * retry instead of overtaking it. Another race's event is not held back by it.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { every } from "../../src/jobs/every.js";
import { DeliveryWorker } from "../../src/webhooks/core/delivery-worker.js";
import { useTestDatabase } from "../support/database.js";
import { NOV_1 } from "../support/dates.js";
import { addUsers, addWagers, affiliateKey, wager } from "../support/fixtures.js";
import { instanceRaces, ok, raceNamed } from "../support/races.js";
import { useWebhookBench } from "../support/webhook-receiver.js";

const database = useTestDatabase("webhook_race_order");
let now = NOV_1 - 100;
const webhooks = useWebhookBench(database);

beforeAll(async () => {
  await addUsers(database.db, [{ id: "u1", affiliateId: "order-aff", username: "ann", avatar: "" }]);
  await addWagers(database.db, [wager("u1", "12", NOV_1 + 5)]);
});

describe("one race's events to an endpoint", () => {
  it("go out in order: ended and finalized wait for a failed started's retry; another race's event does not", async () => {
    const { receiver, transport, store } = webhooks;
    const affiliateId = await affiliateKey(database.db.read, "order-aff");
    await webhooks.endpoint("ep_order", "order-aff");
    const races = instanceRaces(database.db, { now: () => now, freeze: "primary" });
    const caught = ok(await races.create(affiliateId, raceNamed("caught", "Caught up", [NOV_1, NOV_1 + 60]))).race;
    const other = ok(
      await races.create(affiliateId, raceNamed("later", "Later", [NOV_1 + 864_000, NOV_1 + 900_000])),
    ).race;
    // Every instance was down through the race: one tick freezes it with its three events at once.
    now = NOV_1 + 60 + 86_400 + 1;
    expect(await races.tick()).toEqual({ started: 1, ended: 1, frozen: 1 });
    await races.cancel(affiliateId, other.id);
    let first = true;
    receiver.answer(() => {
      if (!first) return { status: 200, body: "ok" };
      first = false;
      return { status: 500 };
    });
    const worker = new DeliveryWorker({
      schedule: every,
      store,
      transport,
      retryScale: 0.01,
      timeoutMs: 3_000,
      pollMs: 10,
      instance: "t",
    });
    worker.start();
    try {
      await receiver.waitFor(5, 15_000);
    } finally {
      await worker.stop();
    }
    const arrived = receiver.received.map((request) => {
      const body = JSON.parse(request.body) as { type: string; data: { id: string } };
      return [body.type, body.data.id === caught.id ? "caught" : "later"];
    });
    // The caught-up race's events one by one, the failed start first; the other race's cancellation, claimed
    // with that first start, is not held back behind its retry.
    expect(arrived.filter(([, race]) => race === "caught").map(([type]) => type)).toEqual([
      "race.started",
      "race.started",
      "race.ended",
      "race.finalized",
    ]);
    const cancelledAt = arrived.findIndex(([type]) => type === "race.cancelled");
    expect(cancelledAt).toBeGreaterThanOrEqual(0);
    expect(cancelledAt).toBeLessThan(2);
  });
});
