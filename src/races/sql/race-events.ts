/**
 * A race's events go out with the state change that causes them: written inside its transaction by
 * the webhooks' outbox (../../webhooks/sql/webhook-outbox.ts: one delivery per endpoint of the affiliate subscribed
 * to the event's type), never from memory after the commit.
 */
import type { PoolConnection } from "mysql2/promise";
import type { RaceEvent } from "../../ports/races.js";
import { type AffiliateEndpoints, affiliateEndpoints, enqueueWebhookEvent } from "../../webhooks/sql/webhook-outbox.js";

export async function enqueueRaceEvent(
  connection: PoolConnection,
  affiliateId: number,
  event: RaceEvent,
  at: number,
): Promise<void> {
  await enqueueWebhookEvent(connection, { affiliateId, type: event.type, data: event.data, at });
}

/**
 * The events of one transaction's state change for one affiliate (the freeze's owed start and end, and the
 * result): the affiliate's endpoints are read once, now, for all of them (so the result's event, written after the
 * results log's head is taken, reads nothing more under that lock).
 */
export async function raceEventsOf(
  connection: PoolConnection,
  affiliateId: number,
): Promise<(event: RaceEvent, at: number) => Promise<void>> {
  const endpoints: AffiliateEndpoints = await affiliateEndpoints(connection, affiliateId);
  return async (event, at) => {
    await enqueueWebhookEvent(connection, { affiliateId, type: event.type, data: event.data, at }, endpoints);
  };
}
