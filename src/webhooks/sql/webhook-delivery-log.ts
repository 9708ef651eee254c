/**
 * Deliveries as their endpoint's owner and an operator see them: the log of an endpoint's deliveries with
 * their attempts, one delivery, a test event, a redelivery, and the queue's state for the metrics. The
 * worker's own reads and writes are ./webhook-claims.ts and ./webhook-attempts.ts.
 */
import type { Pool, ResultSetHeader, RowDataPacket } from "mysql2/promise";
import { numberOrNull, textOrNull } from "../../platform/database/row-values.js";
import { inTransaction } from "../../platform/database/transactions.js";
import type { StoredWebhookDelivery, WebhookAttempt, WebhookDeliveryState } from "../../ports/webhooks.js";
import { isWebhookEventType, webhookBody } from "../../values/webhook-events.js";
import { insertEvent } from "./webhook-outbox.js";

const SELECT_DELIVERY = `SELECT d.id, d.endpoint_id, e.message_id, e.type, d.state, d.attempts, d.next_attempt_at_ms,
    d.last_status, d.last_error, d.last_response, d.delivered_at_ms, d.failed_at_ms, d.created_at
  FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id`;

function toDelivery(row: RowDataPacket, attempts: readonly WebhookAttempt[]): StoredWebhookDelivery {
  const type = String(row.type);
  return {
    id: String(row.id),
    endpointId: String(row.endpoint_id),
    messageId: String(row.message_id),
    eventType: isWebhookEventType(type) ? type : "webhook.test",
    state: String(row.state) as WebhookDeliveryState,
    attempts: Number(row.attempts),
    nextAttemptAtMs: numberOrNull(row.next_attempt_at_ms),
    lastStatus: numberOrNull(row.last_status),
    lastError: textOrNull(row.last_error),
    lastResponse: textOrNull(row.last_response),
    deliveredAtMs: numberOrNull(row.delivered_at_ms),
    failedAtMs: numberOrNull(row.failed_at_ms),
    createdAt: Number(row.created_at),
    attemptLog: attempts,
  };
}

/** A `webhook.test` event to one endpoint; answers its delivery. */
export async function sendTestEvent(
  pool: Pool,
  endpointId: string,
  at: number,
  data: unknown,
): Promise<StoredWebhookDelivery> {
  const body = webhookBody("webhook.test", at, data);
  const eventId = await inTransaction(pool, async (connection) => {
    const [rows] = await connection.query<RowDataPacket[]>("SELECT affiliate_id FROM webhook_endpoints WHERE id = ?", [
      endpointId,
    ]);
    if (rows[0] === undefined) throw new Error(`no webhook endpoint ${endpointId}`);
    const affiliateId = Number(rows[0].affiliate_id);
    const { eventId } = await insertEvent(connection, {
      affiliateId,
      type: "webhook.test",
      at,
      body,
      endpointIds: [endpointId],
    });
    return eventId;
  });
  const [rows] = await pool.query<RowDataPacket[]>(`${SELECT_DELIVERY} WHERE d.event_id = ? AND d.endpoint_id = ?`, [
    eventId,
    endpointId,
  ]);
  if (rows[0] === undefined) throw new Error(`test delivery of event ${eventId} vanished`);
  return toDelivery(rows[0], []);
}

/** An endpoint's deliveries with their attempts, newest first, at most `limit`, older than `beforeId` when given. */
export async function listDeliveries(
  pool: Pool,
  endpointId: string,
  limit: number,
  beforeId?: string,
): Promise<StoredWebhookDelivery[]> {
  const [rows] =
    beforeId === undefined
      ? await pool.query<RowDataPacket[]>(`${SELECT_DELIVERY} WHERE d.endpoint_id = ? ORDER BY d.id DESC LIMIT ?`, [
          endpointId,
          limit,
        ])
      : await pool.query<RowDataPacket[]>(
          `${SELECT_DELIVERY} WHERE d.endpoint_id = ? AND d.id < ? ORDER BY d.id DESC LIMIT ?`,
          [endpointId, beforeId, limit],
        );
  const log = await attemptsOf(
    pool,
    rows.map((row) => String(row.id)),
  );
  return rows.map((row) => toDelivery(row, log.get(String(row.id)) ?? []));
}

export async function findDelivery(pool: Pool, id: string): Promise<StoredWebhookDelivery | undefined> {
  if (!/^\d{1,20}$/.test(id)) return undefined;
  const [rows] = await pool.query<RowDataPacket[]>(`${SELECT_DELIVERY} WHERE d.id = ?`, [id]);
  if (rows[0] === undefined) return undefined;
  return toDelivery(rows[0], (await attemptsOf(pool, [id])).get(id) ?? []);
}

/** Sends a delivery again (same webhook-id): due now, one more attempt allowed. */
export async function redeliver(pool: Pool, id: string, nowMs: number): Promise<StoredWebhookDelivery | undefined> {
  if (!/^\d{1,20}$/.test(id)) return undefined;
  // Assignments run left to right: max_attempts reads the state before it is set. A pending
  // delivery keeps its schedule and is only made due now.
  const [result] = await pool.query<ResultSetHeader>(
    `UPDATE webhook_deliveries
        SET max_attempts = IF(state = 'pending', max_attempts, attempts + 1),
            state = 'pending', failed_at_ms = NULL,
            next_attempt_at_ms = LEAST(COALESCE(next_attempt_at_ms, ?), ?)
      WHERE id = ?`,
    [nowMs, nowMs, id],
  );
  return result.affectedRows === 0 ? undefined : findDelivery(pool, id);
}

async function attemptsOf(pool: Pool, ids: readonly string[]): Promise<Map<string, WebhookAttempt[]>> {
  const log = new Map<string, WebhookAttempt[]>();
  if (ids.length === 0) return log;
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT delivery_id, attempt, started_at_ms, duration_ms, status, error, response
       FROM webhook_attempts WHERE delivery_id IN (?) ORDER BY delivery_id, attempt`,
    [ids],
  );
  for (const row of rows) {
    const id = String(row.delivery_id);
    const list = log.get(id) ?? [];
    list.push({
      attempt: Number(row.attempt),
      startedAtMs: Number(row.started_at_ms),
      durationMs: Number(row.duration_ms),
      status: numberOrNull(row.status),
      error: textOrNull(row.error),
      response: textOrNull(row.response),
    });
    log.set(id, list);
  }
  return log;
}

/** The age of the oldest due delivery (0 when none is due) and the number of disabled endpoints. */
export async function queueState(
  pool: Pool,
  nowMs: number,
): Promise<{ oldestDueAgeMs: number; disabledEndpoints: number }> {
  const [due] = await pool.query<RowDataPacket[]>(
    `SELECT MIN(next_attempt_at_ms) AS oldest FROM webhook_deliveries
      WHERE state = 'pending' AND next_attempt_at_ms <= ? AND (claimed_until_ms IS NULL OR claimed_until_ms <= ?)`,
    [nowMs, nowMs],
  );
  const [disabled] = await pool.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM webhook_endpoints WHERE enabled = 0");
  const oldest = numberOrNull(due[0]?.oldest);
  return {
    oldestDueAgeMs: oldest === null ? 0 : Math.max(0, nowMs - oldest),
    disabledEndpoints: Number(disabled[0]?.n ?? 0),
  };
}
