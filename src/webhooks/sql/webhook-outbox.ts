/**
 * The webhook outbox: an event is written in the transaction of the state change that causes it,
 * never from memory after a commit, so a crash between the change and the delivery loses nothing.
 * The delivery worker (src/webhooks/core/delivery-worker.ts) sends what this writes, from any instance.
 */
import { randomBytes } from "node:crypto";
import type { PoolConnection, ResultSetHeader, RowDataPacket } from "mysql2/promise";
import {
  isWebhookEventType,
  WEBHOOK_MAX_ATTEMPTS,
  type WebhookEventType,
  webhookBody,
} from "../../values/webhook-events.js";

/** An event to send: `affiliateId` is the internal affiliate key, `at` Unix seconds. */
export interface WebhookEventInput {
  readonly affiliateId: number;
  readonly type: string;
  readonly data: unknown;
  readonly at: number;
}

/** The `webhook-id` of a new event: `msg_` and 128 random bits in hex. */
export function newMessageId(): string {
  return `msg_${randomBytes(16).toString("hex")}`;
}

/** Whether an endpoint's stored subscription (a JSON array of event types) includes `type`. */
function subscribes(eventTypes: unknown, type: string): boolean {
  const parsed: unknown = JSON.parse(String(eventTypes));
  return Array.isArray(parsed) && parsed.includes(type);
}

/** What a delivery made for a disabled endpoint says (docs/webhooks.md): failed, kept, redeliverable. */
export const DISABLED_AT_SEND = "the endpoint was disabled when the event was sent; redeliver it once re-enabled";

/** An affiliate's endpoints as the outbox reads them: id, subscription, whether enabled. */
export type AffiliateEndpoints = readonly RowDataPacket[];

/** The affiliate's endpoints, for one or more events of the caller's transaction (enqueueWebhookEvent). */
export async function affiliateEndpoints(connection: PoolConnection, affiliateId: number): Promise<AffiliateEndpoints> {
  // A plain read: an endpoint created by a transaction that has not committed yet does not get this event.
  const [endpoints] = await connection.query<RowDataPacket[]>(
    "SELECT id, event_types, enabled FROM webhook_endpoints WHERE affiliate_id = ? ORDER BY id",
    [affiliateId],
  );
  return endpoints;
}

/**
 * Writes the event and one delivery per endpoint of the affiliate subscribed to its type, on the caller's
 * connection inside the caller's open transaction: they commit or roll back with the state change. An enabled
 * endpoint's delivery is due now; a disabled one's is written failed at once (never sent, kept in its log
 * for RedeliverWebhook once re-enabled), so nothing sent while an endpoint is disabled is lost. Nothing is
 * written when no endpoint subscribes. Throws (rolling the caller back) on an unknown type, a time not in
 * Unix seconds or a body of 20 KB or more. `endpoints`: the affiliate's, when the transaction read them already
 * for an earlier event (one read for the several events of one state change); else read here.
 */
export async function enqueueWebhookEvent(
  connection: PoolConnection,
  event: WebhookEventInput,
  endpoints?: AffiliateEndpoints,
): Promise<void> {
  if (!isWebhookEventType(event.type)) throw new Error(`unknown webhook event type ${event.type}`);
  const body = webhookBody(event.type, event.at, event.data);
  const subscribed = (endpoints ?? (await affiliateEndpoints(connection, event.affiliateId))).filter((row) =>
    subscribes(row.event_types, event.type),
  );
  if (subscribed.length === 0) return;
  const enabled = subscribed.filter((row) => Number(row.enabled) === 1).map((row) => String(row.id));
  const disabled = subscribed.filter((row) => Number(row.enabled) !== 1).map((row) => String(row.id));
  await insertEvent(connection, {
    affiliateId: event.affiliateId,
    type: event.type,
    at: event.at,
    body,
    endpointIds: enabled,
    disabledIds: disabled,
  });
}

/** One event as the outbox writes it, with the endpoints it goes to. */
export interface OutboxEvent {
  readonly affiliateId: number;
  readonly type: WebhookEventType;
  /** When it happened (Unix seconds). */
  readonly at: number;
  /** The body as it is sent (webhookBody). */
  readonly body: string;
  /** Endpoints that get a delivery, due now. */
  readonly endpointIds: readonly string[];
  /** Subscribed endpoints that are disabled: each gets a failed delivery (DISABLED_AT_SEND). */
  readonly disabledIds?: readonly string[];
}

/**
 * Writes one event with deliveries to its endpoints, due now, and failed ones to its disabled endpoints;
 * returns its row id and message id. Also used by SendTestEvent (one endpoint, whatever it subscribes to).
 */
export async function insertEvent(
  connection: PoolConnection,
  { affiliateId, type, at, body, endpointIds, disabledIds = [] }: OutboxEvent,
): Promise<{ eventId: string; messageId: string }> {
  const messageId = newMessageId();
  const [inserted] = await connection.query<ResultSetHeader>(
    "INSERT INTO webhook_events (message_id, affiliate_id, type, body, created_at) VALUES (?, ?, ?, ?, ?)",
    [messageId, affiliateId, type, Buffer.from(body, "utf8"), Math.floor(at)],
  );
  const eventId = String(inserted.insertId);
  const now = Date.now();
  const created = Math.floor(now / 1000);
  if (endpointIds.length > 0) {
    await connection.query(
      `INSERT INTO webhook_deliveries (event_id, endpoint_id, state, attempts, max_attempts, next_attempt_at_ms, created_at)
       VALUES ?`,
      [endpointIds.map((endpointId) => [eventId, endpointId, "pending", 0, WEBHOOK_MAX_ATTEMPTS, now, created])],
    );
  }
  if (disabledIds.length > 0) {
    await connection.query(
      `INSERT INTO webhook_deliveries
         (event_id, endpoint_id, state, attempts, max_attempts, next_attempt_at_ms, last_error, failed_at_ms, created_at)
       VALUES ?`,
      [
        disabledIds.map((endpointId) => [
          eventId,
          endpointId,
          "failed",
          0,
          WEBHOOK_MAX_ATTEMPTS,
          null,
          DISABLED_AT_SEND,
          now,
          created,
        ]),
      ],
    );
  }
  return { eventId, messageId };
}
