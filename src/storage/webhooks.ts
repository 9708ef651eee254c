/**
 * SQL for outgoing webhooks: endpoints, deliveries and their attempts (the outbox's events are
 * written by ./webhook-outbox.ts). Secrets are sealed by ./webhook-secrets.ts before they reach a
 * statement.
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
import type { Pool, PoolConnection, ResultSetHeader, RowDataPacket } from "mysql2/promise";
import type {
  ClaimedWebhookDelivery,
  NewWebhookEndpoint,
  StoredWebhookDelivery,
  StoredWebhookEndpoint,
  WebhookAttempt,
  WebhookAttemptOutcome,
  WebhookDeliveryState,
  WebhookEndpointChange,
  WebhookStore,
} from "../ports/webhooks.js";
import { isWebhookEventType, type WebhookEventType, webhookBody } from "../values/webhook-events.js";
import { ensureAffiliate } from "./affiliates.js";
import { numberOrNull, textOrNull } from "./row-values.js";
import { inTransaction } from "./transactions.js";
import { recordLostAttempts } from "./webhook-lost-claims.js";
import { insertEvent } from "./webhook-outbox.js";
import { inRaceOrder } from "./webhook-race-order.js";
import type { WebhookSecretBox } from "./webhook-secrets.js";

/**
 * Due rows a claim reads to pick from: enough that one endpoint's backlog (at most `perEndpoint` of
 * it is taken) leaves room for the others'. An endpoint with more due rows than this ahead of every
 * other one is served first, the others as its backlog drains.
 */
const CLAIM_SCAN_ROWS = 1000;

/** Column limits of migration 11. */
const MAX_ERROR = 500;
const MAX_RESPONSE_BYTES = 1024;

const SELECT_ENDPOINT = `SELECT p.id, a.external_id AS affiliate_external_id, p.url, p.description, p.event_types,
    p.enabled, p.disabled_reason, p.disabled_at, p.previous_secret_expires_at, p.created_at, p.updated_at
  FROM webhook_endpoints p JOIN affiliates a ON a.id = p.affiliate_id`;

const SELECT_DELIVERY = `SELECT d.id, d.endpoint_id, e.message_id, e.type, d.state, d.attempts, d.next_attempt_at_ms,
    d.last_status, d.last_error, d.last_response, d.delivered_at_ms, d.failed_at_ms, d.created_at
  FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id`;

const nowSeconds = () => Math.floor(Date.now() / 1000);

function eventTypes(text: unknown): WebhookEventType[] {
  const parsed: unknown = JSON.parse(String(text));
  return Array.isArray(parsed) ? parsed.filter(isWebhookEventType) : [];
}

function toEndpoint(row: RowDataPacket): StoredWebhookEndpoint {
  return {
    id: String(row.id),
    affiliateExternalId: String(row.affiliate_external_id),
    url: String(row.url),
    description: String(row.description),
    eventTypes: eventTypes(row.event_types),
    enabled: Number(row.enabled) === 1,
    disabledReason: textOrNull(row.disabled_reason),
    disabledAt: numberOrNull(row.disabled_at),
    previousSecretExpiresAt: numberOrNull(row.previous_secret_expires_at),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

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

/** Text cut to at most `max` characters, for a VARCHAR column. */
function clip(text: string | null, max: number): string | null {
  return text === null ? null : [...text].slice(0, max).join("");
}

/** The first bytes of a response as stored (VARBINARY(1024)). */
function responseBytes(text: string | null): Buffer | null {
  return text === null ? null : Buffer.from(text, "utf8").subarray(0, MAX_RESPONSE_BYTES);
}

export class MariadbWebhookStore implements WebhookStore {
  constructor(
    private readonly pool: Pool,
    private readonly box: WebhookSecretBox,
  ) {}

  async affiliateExternalId(affiliateKey: number): Promise<string | undefined> {
    const [rows] = await this.pool.query<RowDataPacket[]>("SELECT external_id FROM affiliates WHERE id = ?", [
      affiliateKey,
    ]);
    return rows[0] === undefined ? undefined : String(rows[0].external_id);
  }

  async insertEndpoint(endpoint: NewWebhookEndpoint): Promise<StoredWebhookEndpoint> {
    await inTransaction(this.pool, async (connection) => {
      const affiliateId = await ensureAffiliate(connection, endpoint.affiliateExternalId);
      const now = nowSeconds();
      await connection.query(
        `INSERT INTO webhook_endpoints (id, affiliate_id, url, description, event_types, enabled, secret, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?)`,
        [
          endpoint.id,
          affiliateId,
          endpoint.url,
          endpoint.description,
          JSON.stringify(endpoint.eventTypes),
          this.box.seal(endpoint.id, endpoint.secret),
          now,
          now,
        ],
      );
    });
    const stored = await this.findEndpoint(endpoint.id);
    if (stored === undefined) throw new Error(`webhook endpoint ${endpoint.id} vanished right after insert`);
    return stored;
  }

  async findEndpoint(id: string): Promise<StoredWebhookEndpoint | undefined> {
    const [rows] = await this.pool.query<RowDataPacket[]>(`${SELECT_ENDPOINT} WHERE p.id = ?`, [id]);
    return rows[0] === undefined ? undefined : toEndpoint(rows[0]);
  }

  async listEndpoints(affiliateExternalId?: string): Promise<StoredWebhookEndpoint[]> {
    const [rows] =
      affiliateExternalId === undefined
        ? await this.pool.query<RowDataPacket[]>(`${SELECT_ENDPOINT} ORDER BY p.created_at, p.id`)
        : await this.pool.query<RowDataPacket[]>(
            `${SELECT_ENDPOINT} WHERE a.external_id = ? ORDER BY p.created_at, p.id`,
            [affiliateExternalId],
          );
    return rows.map(toEndpoint);
  }

  async updateEndpoint(id: string, change: WebhookEndpointChange): Promise<StoredWebhookEndpoint | undefined> {
    const sets: string[] = [];
    const params: unknown[] = [];
    const set = (assignment: string, value: unknown) => {
      sets.push(assignment);
      params.push(value);
    };
    if (change.url !== undefined) set("url = ?", change.url);
    if (change.description !== undefined) set("description = ?", change.description);
    if (change.eventTypes !== undefined) set("event_types = ?", JSON.stringify(change.eventTypes));
    if (change.enabled === true) {
      sets.push("enabled = 1, disabled_reason = NULL, disabled_at = NULL, failing_since_ms = NULL");
    } else if (change.enabled === false) {
      // Disabling keeps the first reason and time when it is already disabled.
      sets.push("disabled_reason = IF(enabled = 1, ?, disabled_reason), disabled_at = IF(enabled = 1, ?, disabled_at)");
      params.push(clip(change.disabledReason ?? "disabled by its owner", MAX_ERROR), nowSeconds());
      sets.push("enabled = 0");
    }
    sets.push("updated_at = ?");
    params.push(nowSeconds());
    const [result] = await this.pool.query<ResultSetHeader>(
      `UPDATE webhook_endpoints SET ${sets.join(", ")} WHERE id = ?`,
      [...params, id],
    );
    if (result.affectedRows === 0) return undefined;
    return this.findEndpoint(id);
  }

  async deleteEndpoint(id: string): Promise<boolean> {
    return inTransaction(this.pool, async (connection) => {
      const [result] = await connection.query<ResultSetHeader>("DELETE FROM webhook_endpoints WHERE id = ?", [id]);
      if (result.affectedRows === 0) return false;
      await connection.query(
        "DELETE a FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = ?",
        [id],
      );
      await connection.query("DELETE FROM webhook_deliveries WHERE endpoint_id = ?", [id]);
      return true;
    });
  }

  async rotateSecret(
    id: string,
    secret: string,
    previousExpiresAt: number,
  ): Promise<StoredWebhookEndpoint | undefined> {
    const found = await inTransaction(this.pool, async (connection) => {
      const [rows] = await connection.query<RowDataPacket[]>(
        "SELECT secret FROM webhook_endpoints WHERE id = ? FOR UPDATE",
        [id],
      );
      const row = rows[0];
      if (row === undefined) return false;
      await connection.query(
        `UPDATE webhook_endpoints SET previous_secret = ?, previous_secret_expires_at = ?, secret = ?, updated_at = ?
          WHERE id = ?`,
        [row.secret, previousExpiresAt, this.box.seal(id, secret), nowSeconds(), id],
      );
      return true;
    });
    return found ? this.findEndpoint(id) : undefined;
  }

  async sendTestEvent(endpointId: string, at: number, data: unknown): Promise<StoredWebhookDelivery> {
    const body = webhookBody("webhook.test", at, data);
    const eventId = await inTransaction(this.pool, async (connection) => {
      const [rows] = await connection.query<RowDataPacket[]>(
        "SELECT affiliate_id FROM webhook_endpoints WHERE id = ?",
        [endpointId],
      );
      if (rows[0] === undefined) throw new Error(`no webhook endpoint ${endpointId}`);
      return (await insertEvent(connection, Number(rows[0].affiliate_id), "webhook.test", at, body, [endpointId]))
        .eventId;
    });
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `${SELECT_DELIVERY} WHERE d.event_id = ? AND d.endpoint_id = ?`,
      [eventId, endpointId],
    );
    if (rows[0] === undefined) throw new Error(`test delivery of event ${eventId} vanished`);
    return toDelivery(rows[0], []);
  }

  async listDeliveries(endpointId: string, limit: number, beforeId?: string): Promise<StoredWebhookDelivery[]> {
    const [rows] =
      beforeId === undefined
        ? await this.pool.query<RowDataPacket[]>(
            `${SELECT_DELIVERY} WHERE d.endpoint_id = ? ORDER BY d.id DESC LIMIT ?`,
            [endpointId, limit],
          )
        : await this.pool.query<RowDataPacket[]>(
            `${SELECT_DELIVERY} WHERE d.endpoint_id = ? AND d.id < ? ORDER BY d.id DESC LIMIT ?`,
            [endpointId, beforeId, limit],
          );
    const log = await this.attemptsOf(rows.map((row) => String(row.id)));
    return rows.map((row) => toDelivery(row, log.get(String(row.id)) ?? []));
  }

  async findDelivery(id: string): Promise<StoredWebhookDelivery | undefined> {
    if (!/^\d{1,20}$/.test(id)) return undefined;
    const [rows] = await this.pool.query<RowDataPacket[]>(`${SELECT_DELIVERY} WHERE d.id = ?`, [id]);
    if (rows[0] === undefined) return undefined;
    return toDelivery(rows[0], (await this.attemptsOf([id])).get(id) ?? []);
  }

  async redeliver(id: string, nowMs: number): Promise<StoredWebhookDelivery | undefined> {
    if (!/^\d{1,20}$/.test(id)) return undefined;
    // Assignments run left to right: max_attempts reads the state before it is set. A pending
    // delivery keeps its schedule and is only made due now.
    const [result] = await this.pool.query<ResultSetHeader>(
      `UPDATE webhook_deliveries
          SET max_attempts = IF(state = 'pending', max_attempts, attempts + 1),
              state = 'pending', failed_at_ms = NULL,
              next_attempt_at_ms = LEAST(COALESCE(next_attempt_at_ms, ?), ?)
        WHERE id = ?`,
      [nowMs, nowMs, id],
    );
    return result.affectedRows === 0 ? undefined : this.findDelivery(id);
  }

  private async attemptsOf(ids: readonly string[]): Promise<Map<string, WebhookAttempt[]>> {
    const log = new Map<string, WebhookAttempt[]>();
    if (ids.length === 0) return log;
    const [rows] = await this.pool.query<RowDataPacket[]>(
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

  async claimDue(options: ClaimOptions): Promise<ClaimedWebhookDelivery[]> {
    if (options.limit <= 0) return [];
    const token = randomBytes(12).toString("hex");
    const picked = await inTransaction(this.pool, async (connection: PoolConnection) => {
      const ids = await pickDue(connection, options);
      return ids.length === 0 ? [] : lease(connection, ids, token, options);
    });
    if (picked.length === 0) return [];
    const [rows] = await this.pool.query<RowDataPacket[]>(
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
    return rows.map((row) => this.claimed(row, token, now));
  }

  /** A claimed delivery as read back: its endpoint's secrets opened (the previous one while it is valid). */
  private claimed(row: RowDataPacket, token: string, now: number): ClaimedWebhookDelivery {
    const endpointId = String(row.endpoint_id);
    const exists = row.url !== null && row.url !== undefined;
    const secrets: string[] = [];
    if (exists) {
      secrets.push(this.box.open(endpointId, row.secret));
      if (row.previous_secret !== null && Number(row.previous_secret_expires_at) > now) {
        secrets.push(this.box.open(endpointId, row.previous_secret));
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

  async recordAttempt(delivery: ClaimedWebhookDelivery, outcome: WebhookAttemptOutcome): Promise<boolean> {
    const [recorded] = await this.recordAttempts([{ delivery, outcome }]);
    return recorded === true;
  }

  /**
   * Several attempts' outcomes in one transaction (one commit, one log flush, instead of one per
   * delivery). A delivery whose claim was lost is left alone and answered false.
   */
  async recordAttempts(items: readonly AttemptRecord[]): Promise<boolean[]> {
    if (items.length === 0) return [];
    return inTransaction(this.pool, async (connection) => {
      const recorded: boolean[] = [];
      for (const item of items) recorded.push(await finishClaim(connection, item));
      const kept = items.filter((_, index) => recorded[index] === true);
      if (kept.length > 0) await insertAttempts(connection, kept);
      await updateEndpoints(connection, endpointChanges(kept));
      return recorded;
    });
  }

  async failWithoutAttempt(delivery: ClaimedWebhookDelivery, reason: string, nowMs: number): Promise<void> {
    await this.pool.query(
      `UPDATE webhook_deliveries
          SET state = 'failed', next_attempt_at_ms = NULL, claim_token = NULL, claimed_until_ms = NULL,
              last_error = ?, failed_at_ms = ?
        WHERE id = ? AND claim_token = ?`,
      [clip(reason, MAX_ERROR), nowMs, delivery.id, delivery.claimToken],
    );
  }

  async queueState(nowMs: number): Promise<{ oldestDueAgeMs: number; disabledEndpoints: number }> {
    const [due] = await this.pool.query<RowDataPacket[]>(
      `SELECT MIN(next_attempt_at_ms) AS oldest FROM webhook_deliveries
        WHERE state = 'pending' AND next_attempt_at_ms <= ? AND (claimed_until_ms IS NULL OR claimed_until_ms <= ?)`,
      [nowMs, nowMs],
    );
    const [disabled] = await this.pool.query<RowDataPacket[]>(
      "SELECT COUNT(*) AS n FROM webhook_endpoints WHERE enabled = 0",
    );
    const oldest = numberOrNull(due[0]?.oldest);
    return {
      oldestDueAgeMs: oldest === null ? 0 : Math.max(0, nowMs - oldest),
      disabledEndpoints: Number(disabled[0]?.n ?? 0),
    };
  }
}

/** What claimDue is asked for. */
interface ClaimOptions {
  readonly nowMs: number;
  readonly limit: number;
  readonly perEndpoint: number;
  /** Deliveries this worker is sending already, by endpoint: they count towards `perEndpoint`. */
  readonly busyEndpoints: ReadonlyMap<string, number>;
  readonly leaseMs: number;
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

/** One attempt's outcome for its claimed delivery. */
interface AttemptRecord {
  readonly delivery: ClaimedWebhookDelivery;
  readonly outcome: WebhookAttemptOutcome;
}

/** Writes the attempt's outcome on its delivery and ends the claim; false when the claim was lost. */
async function finishClaim(connection: PoolConnection, { delivery, outcome }: AttemptRecord): Promise<boolean> {
  const { attempt, state } = outcome;
  const at = attempt.startedAtMs + attempt.durationMs;
  const [result] = await connection.query<ResultSetHeader>(
    `UPDATE webhook_deliveries
        SET attempts = ?, state = ?, next_attempt_at_ms = ?, claim_token = NULL, claimed_until_ms = NULL,
            last_attempt_at_ms = ?, last_status = ?, last_error = ?, last_response = ?,
            delivered_at_ms = IF(? = 'delivered', ?, delivered_at_ms), failed_at_ms = IF(? = 'failed', ?, NULL)
      WHERE id = ? AND claim_token = ?`,
    [
      attempt.attempt,
      state,
      state === "pending" ? outcome.nextAttemptAtMs : null,
      attempt.startedAtMs,
      attempt.status,
      clip(attempt.error, MAX_ERROR),
      responseBytes(attempt.response),
      state,
      at,
      state,
      at,
      delivery.id,
      delivery.claimToken,
    ],
  );
  return result.affectedRows > 0;
}

/** The attempts' log rows, in one statement. */
async function insertAttempts(connection: PoolConnection, kept: readonly AttemptRecord[]): Promise<void> {
  await connection.query(
    `INSERT INTO webhook_attempts (delivery_id, attempt, started_at_ms, duration_ms, status, error, response, instance)
     VALUES ?`,
    [
      kept.map(({ delivery, outcome }) => [
        delivery.id,
        outcome.attempt.attempt,
        outcome.attempt.startedAtMs,
        outcome.attempt.durationMs,
        outcome.attempt.status,
        clip(outcome.attempt.error, MAX_ERROR),
        responseBytes(outcome.attempt.response),
        clip(outcome.instance, 200),
      ]),
    ],
  );
}

/**
 * What the attempts change on an endpoint: its failure streak ends (null) with a delivered attempt, or starts
 * (the attempt's start) with the first failed one after it; undefined leaves it. A disable wins.
 */
interface EndpointChange {
  streak: number | null | undefined;
  disable?: { reason: string; at: number };
}

function endpointChanges(kept: readonly AttemptRecord[]): Map<string, EndpointChange> {
  const endpoints = new Map<string, EndpointChange>();
  for (const { delivery, outcome } of kept) {
    const entry = endpoints.get(delivery.endpointId) ?? { streak: undefined };
    if (outcome.succeeded) entry.streak = null;
    else if (entry.streak === undefined || entry.streak === null) entry.streak = outcome.attempt.startedAtMs;
    if (outcome.disableEndpoint !== undefined) {
      entry.disable = {
        reason: outcome.disableEndpoint,
        at: Math.floor((outcome.attempt.startedAtMs + outcome.attempt.durationMs) / 1000),
      };
    }
    endpoints.set(delivery.endpointId, entry);
  }
  return endpoints;
}

/**
 * Writes the endpoints' changes in id order (two workers lock endpoint rows in one order). The streak is
 * written only when it starts or ends (a statement that changes nothing writes nothing).
 */
async function updateEndpoints(
  connection: PoolConnection,
  changes: ReadonlyMap<string, EndpointChange>,
): Promise<void> {
  for (const id of [...changes.keys()].sort()) {
    const entry = changes.get(id);
    if (entry === undefined) continue;
    if (entry.streak === null) {
      await connection.query(
        "UPDATE webhook_endpoints SET failing_since_ms = NULL WHERE id = ? AND failing_since_ms IS NOT NULL",
        [id],
      );
    } else if (entry.streak !== undefined) {
      await connection.query(
        "UPDATE webhook_endpoints SET failing_since_ms = ? WHERE id = ? AND failing_since_ms IS NULL",
        [entry.streak, id],
      );
    }
    if (entry.disable !== undefined) {
      await connection.query(
        `UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ?, disabled_at = ?, updated_at = ?
          WHERE id = ? AND enabled = 1`,
        [clip(entry.disable.reason, MAX_ERROR), entry.disable.at, entry.disable.at, id],
      );
    }
  }
}
