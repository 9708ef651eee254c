/**
 * Webhook deliveries as the end-to-end tests count them: test events sent to endpoints on a receiver, the
 * POSTs the receiver got by webhook-id, and each delivery's state and attempt log read from the database.
 * Endpoints of one batch share a label: `ep_<label><n>`, at `<receiver>/<label>/<n>`.
 */
import type { Pool, RowDataPacket } from "mysql2/promise";
import type { WebhookStore } from "../../src/ports/webhooks.js";
import { newWebhookSecret } from "../../src/webhooks/core/signature.js";
import type { WebhookReceiver } from "./webhook-receiver.js";

/** `endpoints` endpoints labelled `label` on `receiver`, with `perEndpoint` test events each; their message ids. */
export async function testEventsTo(
  store: WebhookStore,
  receiver: WebhookReceiver,
  label: string,
  endpoints: number,
  perEndpoint: number,
): Promise<string[]> {
  const ids: string[] = [];
  for (let e = 0; e < endpoints; e++) {
    const endpoint = await store.insertEndpoint({
      id: `ep_${label}${e}`,
      affiliateExternalId: `aff-${label}`,
      url: `${receiver.url}/${label}/${e}`,
      description: `${label} ${e}`,
      eventTypes: ["webhook.test"],
      secret: newWebhookSecret(),
    });
    for (let n = 0; n < perEndpoint; n++) {
      ids.push((await store.sendTestEvent(endpoint.id, 1793491200 + n, { endpoint: e, n })).messageId);
    }
  }
  return ids;
}

/** How many POSTs `receiver` got for the endpoints labelled `label`, by webhook-id. */
export function receiptsOf(receiver: WebhookReceiver, label: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const request of receiver.received) {
    if (!request.path.startsWith(`/${label}/`)) continue;
    const id = request.headers["webhook-id"] ?? "";
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/** One delivery as read back: its state and its attempts as [attempt, status, error ("" for none)]. */
export type LoggedDelivery = [state: string, attempts: [number, number | null, string][]];

/** Each delivery to the endpoints labelled `label`, by message id, as `pool` reads it. */
export async function deliveryLogOf(pool: Pool, label: string): Promise<Map<string, LoggedDelivery>> {
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT e.message_id, d.state, a.attempt, a.status, a.error
       FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
       LEFT JOIN webhook_attempts a ON a.delivery_id = d.id
      WHERE d.endpoint_id LIKE ? ORDER BY d.id, a.attempt`,
    [`ep\\_${label}%`],
  );
  const log = new Map<string, LoggedDelivery>();
  for (const row of rows) {
    const id = String(row.message_id);
    const entry = log.get(id) ?? [String(row.state), []];
    if (row.attempt !== null) {
      entry[1].push([Number(row.attempt), row.status === null ? null : Number(row.status), String(row.error ?? "")]);
    }
    log.set(id, entry);
  }
  return log;
}

/** Whether all `count` deliveries to the endpoints labelled `label` are delivered, as `pool` reads them. */
export async function allDelivered(pool: Pool, label: string, count: number): Promise<boolean> {
  const log = await deliveryLogOf(pool, label);
  return log.size === count && [...log.values()].every(([state]) => state === "delivered");
}
