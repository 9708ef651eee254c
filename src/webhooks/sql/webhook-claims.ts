/**
 * The delivery worker's claim: which due deliveries a worker takes, the lease it sets on them, and the
 * claimed rows read back with their endpoint's secrets opened. What a worker then records of an attempt
 * is ./webhook-attempts.ts.
 *
 * Claiming, on one server and on a Galera cluster. A worker claims due deliveries in one short
 * transaction: it reads the oldest due deliveries of each endpoint, locks the ones it picked with
 * `SELECT … FOR UPDATE SKIP LOCKED` (passing over rows another worker on the same node is claiming
 * at that moment), and an UPDATE then sets a claim token and a lease (`claimed_until_ms`) on them,
 * re-checking in its WHERE that each is still pending and unleased. After the
 * commit the worker reads back only the rows that carry its token. On one server the row locks make
 * the claim exclusive. Galera certifies write sets, not locks: SKIP LOCKED does not see a claim
 * running on another node, so two nodes may pick the same row; both UPDATEs then write that row, and
 * certification lets exactly one commit (the other fails with 1213 and its claim is retried from the
 * start by inTransaction, where the re-checked WHERE no longer matches the leased row). A row is
 * therefore sent by one worker per lease. The lease is the crash guard: a worker that dies holding
 * a claim (SIGKILL, lost node) never finishes it, its lease runs out, and the delivery is due again
 * for any worker. A worker that outlives its lease (a stall longer than the lease) finds its token
 * gone when it records the attempt and records nothing: the delivery may then have been sent twice,
 * which at-least-once delivery and the webhook-id as idempotency key allow.
 */
import { randomBytes } from "node:crypto";
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";
import { numberOrNull, textOrNull } from "../../platform/database/row-values.js";
import type { SecretBox } from "../../platform/database/secret-box.js";
import { inTransaction } from "../../platform/database/transactions.js";
import type { ClaimedWebhookDelivery } from "../../ports/webhooks.js";
import { isWebhookEventType } from "../../values/webhook-events.js";
import { recordLostAttempts } from "./webhook-lost-claims.js";
import { inRaceOrder } from "./webhook-race-order.js";

/**
 * Due rows a claim reads to pick from: enough that one endpoint's backlog (at most `perEndpoint` of
 * it is taken) leaves room for the others'. An endpoint with more due rows than this ahead of every
 * other one is served first, the others as its backlog drains.
 */
const CLAIM_SCAN_ROWS = 1000;

/** What claimDue is asked for. */
export interface ClaimOptions {
  readonly nowMs: number;
  readonly limit: number;
  readonly perEndpoint: number;
  /** Deliveries this worker is sending already, by endpoint: they count towards `perEndpoint`. */
  readonly busyEndpoints: ReadonlyMap<string, number>;
  readonly leaseMs: number;
}

/** Claims due deliveries under a new token and lease (the port's claimDue) and reads back the ones it holds. */
export async function claimDue(pool: Pool, box: SecretBox, options: ClaimOptions): Promise<ClaimedWebhookDelivery[]> {
  if (options.limit <= 0) return [];
  const token = randomBytes(12).toString("hex");
  const picked = await inTransaction(pool, async (connection: PoolConnection) => {
    const ids = await pickDue(connection, options);
    return ids.length === 0 ? [] : lease(connection, ids, token, options);
  });
  if (picked.length === 0) return [];
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT d.id, d.endpoint_id, d.attempts, d.max_attempts, e.message_id, e.type, e.body,
        p.url, p.enabled, p.disabled_reason, p.failing_since_ms, p.secret, p.previous_secret,
        p.previous_secret_expires_at, a.external_id AS affiliate_external_id
      FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
        LEFT JOIN webhook_endpoints p ON p.id = d.endpoint_id
        LEFT JOIN affiliates a ON a.id = p.affiliate_id
      WHERE d.id IN (?) AND d.claim_token = ?
      ORDER BY d.id`,
    [picked, token],
  );
  const now = Math.floor(options.nowMs / 1000);
  return rows.map((row) => claimed(box, row, token, now));
}

/** A claimed delivery as read back: its endpoint's secrets opened (the previous one while it is valid). */
function claimed(box: SecretBox, row: RowDataPacket, token: string, now: number): ClaimedWebhookDelivery {
  const endpointId = String(row.endpoint_id);
  const exists = row.url !== null && row.url !== undefined;
  const secrets: string[] = [];
  if (exists) {
    secrets.push(box.open(endpointId, row.secret));
    if (row.previous_secret !== null && Number(row.previous_secret_expires_at) > now) {
      secrets.push(box.open(endpointId, row.previous_secret));
    }
  }
  const type = String(row.type);
  return {
    id: String(row.id),
    claimToken: token,
    endpointId,
    url: exists ? String(row.url) : "",
    endpointEnabled: exists && Number(row.enabled) === 1,
    disabledReason: exists ? textOrNull(row.disabled_reason) : "the endpoint was deleted",
    failingSinceMs: numberOrNull(row.failing_since_ms),
    secrets,
    messageId: String(row.message_id),
    eventType: isWebhookEventType(type) ? type : "webhook.test",
    affiliateExternalId: exists ? String(row.affiliate_external_id) : "",
    body: (row.body as Buffer).toString("utf8"),
    attempts: Number(row.attempts),
    maxAttempts: Number(row.max_attempts),
  };
}

/**
 * The oldest due deliveries, in the due index's order, at most `perEndpoint` of each endpoint and `limit` in
 * all, one race's events to an endpoint one after the other (./webhook-race-order.ts). A plain read: only the rows picked are locked (by lease), so a worker claiming at the same time is not
 * pushed onto later events by rows it skipped. Leased rows are not due (a claim moves next_attempt_at_ms to
 * the lease's end), so the scan reads only work that waits.
 */
async function pickDue(connection: PoolConnection, options: ClaimOptions): Promise<string[]> {
  const { nowMs, limit, perEndpoint } = options;
  const [candidates] = await connection.query<RowDataPacket[]>(
    `SELECT id, endpoint_id FROM webhook_deliveries
      WHERE state = 'pending' AND next_attempt_at_ms <= ? AND (claimed_until_ms IS NULL OR claimed_until_ms <= ?)
      ORDER BY next_attempt_at_ms, id LIMIT ?`,
    [nowMs, nowMs, Math.max(limit * 8, CLAIM_SCAN_ROWS)],
  );
  const ordered = await inRaceOrder(
    connection,
    candidates.map((row) => ({ id: String(row.id), endpointId: String(row.endpoint_id) })),
  );
  const counts = new Map(options.busyEndpoints);
  const ids: string[] = [];
  for (const row of ordered) {
    const endpoint = row.endpointId;
    const count = counts.get(endpoint) ?? 0;
    if (count >= perEndpoint) continue;
    counts.set(endpoint, count + 1);
    ids.push(row.id);
    if (ids.length >= limit) break;
  }
  return ids;
}

/**
 * Locks the picked rows and sets the claim's token and lease on them; answers the ids it leased. Rows another
 * worker on this node is claiming right now are skipped, not waited for.
 */
async function lease(
  connection: PoolConnection,
  ids: readonly string[],
  token: string,
  options: ClaimOptions,
): Promise<string[]> {
  const { nowMs, leaseMs } = options;
  const [locked] = await connection.query<RowDataPacket[]>(
    `SELECT id FROM webhook_deliveries
      WHERE id IN (?) AND state = 'pending' AND (claimed_until_ms IS NULL OR claimed_until_ms <= ?)
      FOR UPDATE SKIP LOCKED`,
    [ids, nowMs],
  );
  const mine = locked.map((row) => String(row.id));
  if (mine.length === 0) return [];
  await recordLostAttempts(connection, mine, nowMs, leaseMs);
  // The cross-node guard (see the module comment): only rows still pending and unleased are taken.
  // The lease's end is also the next attempt: a claim that is never finished is due again then.
  await connection.query(
    `UPDATE webhook_deliveries SET claim_token = ?, claimed_until_ms = ?, next_attempt_at_ms = ?
      WHERE id IN (?) AND state = 'pending' AND (claimed_until_ms IS NULL OR claimed_until_ms <= ?)`,
    [token, nowMs + leaseMs, nowMs + leaseMs, mine, nowMs],
  );
  return mine;
}
