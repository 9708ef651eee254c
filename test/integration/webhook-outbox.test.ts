/**
 * The webhook outbox (src/webhooks/sql/webhook-outbox.ts) on a real database: an event and its deliveries
 * are written inside the caller's transaction, only to the affiliate's endpoints subscribed to the type
 * (due for an enabled one, failed and kept for replay for a disabled one), commit or roll back with it,
 * and carry the exact body `{"type","timestamp","data"}`.
 */
import type { RowDataPacket } from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { ensureAffiliate } from "../../src/ingest/sql/affiliates.js";
import { inTransaction } from "../../src/platform/database/transactions.js";
import { MAX_WEBHOOK_BODY_BYTES, WEBHOOK_MAX_ATTEMPTS } from "../../src/values/webhook-events.js";
import { enqueueWebhookEvent } from "../../src/webhooks/sql/webhook-outbox.js";
import { useTestDatabase } from "../support/database.js";

const database = useTestDatabase("webhook_outbox");

async function rows(sql: string, params: unknown[] = []): Promise<RowDataPacket[]> {
  const [result] = await database.db.write.query<RowDataPacket[]>(sql, params);
  return result;
}

async function endpoint(id: string, affiliateId: number, types: string[], enabled = true): Promise<void> {
  await database.db.write.query(
    `INSERT INTO webhook_endpoints (id, affiliate_id, url, event_types, enabled, secret, created_at, updated_at)
     VALUES (?, ?, 'https://example.com/hook', ?, ?, 'plain:whsec_x', 0, 0)`,
    [id, affiliateId, JSON.stringify(types), enabled ? 1 : 0],
  );
}

describe("enqueueWebhookEvent", () => {
  it("writes the event, one due delivery per enabled subscribed endpoint and a failed one per disabled one, in the caller's transaction", async () => {
    const [a, b] = [
      await ensureAffiliate(database.db.write, "aff-a"),
      await ensureAffiliate(database.db.write, "aff-b"),
    ];
    await endpoint("ep_a1", a, ["race.started", "race.finalized"]);
    await endpoint("ep_a2", a, ["race.finalized"]);
    await endpoint("ep_a3", a, ["race.started"], false);
    await endpoint("ep_a4", a, ["race.cancelled"]);
    await endpoint("ep_b1", b, ["race.started"]);
    const before = Date.now();
    await inTransaction(database.db.write, (connection) =>
      enqueueWebhookEvent(connection, {
        affiliateId: a,
        type: "race.started",
        data: { id: "race_1", title: "Monthly \u{1F3C1}" },
        at: 1793491200,
      }),
    );
    const events = await rows("SELECT id, message_id, affiliate_id, type, body, created_at FROM webhook_events");
    expect(events).toHaveLength(1);
    const event = events[0] as RowDataPacket;
    expect(String(event.message_id)).toMatch(/^msg_[0-9a-f]{32}$/);
    expect([Number(event.affiliate_id), event.type, Number(event.created_at)]).toEqual([a, "race.started", 1793491200]);
    expect((event.body as Buffer).toString("utf8")).toBe(
      '{"type":"race.started","timestamp":"2026-11-01T00:00:00.000Z","data":{"id":"race_1","title":"Monthly \u{1F3C1}"}}',
    );
    const deliveries = await rows(
      `SELECT event_id, endpoint_id, state, attempts, max_attempts, next_attempt_at_ms, last_error, failed_at_ms
         FROM webhook_deliveries ORDER BY endpoint_id`,
    );
    expect(deliveries.map((d) => [String(d.event_id), d.endpoint_id, d.state, d.attempts, d.max_attempts])).toEqual([
      [String(event.id), "ep_a1", "pending", 0, WEBHOOK_MAX_ATTEMPTS],
      // The disabled endpoint's: failed at once, never sent, kept for a redelivery once it is re-enabled.
      [String(event.id), "ep_a3", "failed", 0, WEBHOOK_MAX_ATTEMPTS],
    ]);
    expect([deliveries[1]?.next_attempt_at_ms, deliveries[1]?.last_error]).toEqual([
      null,
      "the endpoint was disabled when the event was sent; redeliver it once re-enabled",
    ]);
    expect(Number(deliveries[1]?.failed_at_ms)).toBeGreaterThanOrEqual(before);
    const due = Number(deliveries[0]?.next_attempt_at_ms);
    expect(due).toBeGreaterThanOrEqual(before);
    expect(due).toBeLessThanOrEqual(Date.now());
  });

  it("rolls back with the caller, writes nothing without a subscriber, and refuses what it cannot send", async () => {
    const a = await ensureAffiliate(database.db.write, "aff-a");
    const count = async () => Number((await rows("SELECT COUNT(*) AS n FROM webhook_events"))[0]?.n);
    const start = await count();
    await expect(
      inTransaction(database.db.write, async (connection) => {
        await enqueueWebhookEvent(connection, { affiliateId: a, type: "race.finalized", data: {}, at: 1793491200 });
        throw new Error("the state change failed");
      }),
    ).rejects.toThrow("the state change failed");
    await inTransaction(database.db.write, (connection) =>
      enqueueWebhookEvent(connection, { affiliateId: a, type: "race.ended", data: {}, at: 1793491200 }),
    );
    expect(await count()).toBe(start);
    await inTransaction(database.db.write, async (connection) => {
      await expect(
        enqueueWebhookEvent(connection, { affiliateId: a, type: "race.exploded", data: {}, at: 1 }),
      ).rejects.toThrow("unknown webhook event type race.exploded");
      await expect(
        enqueueWebhookEvent(connection, { affiliateId: a, type: "race.started", data: {}, at: 1793491200000 }),
      ).rejects.toThrow("webhook event time must be Unix seconds, got 1793491200000");
      await expect(
        enqueueWebhookEvent(connection, {
          affiliateId: a,
          type: "race.started",
          data: "x".repeat(MAX_WEBHOOK_BODY_BYTES),
          at: 1793491200,
        }),
      ).rejects.toThrow(`a body must stay under ${MAX_WEBHOOK_BODY_BYTES}`);
    });
    expect(await count()).toBe(start);
  });
});
