/**
 * The MariaDB WebhookStore, and the endpoint admin SQL: endpoints made, read, changed, disabled, deleted and
 * their secrets rotated (sealed by ../../platform/database/secret-box.ts before they reach a statement). The store's other
 * jobs live by job beside it, and its methods hand them on: the delivery worker's claim and lease
 * (./webhook-claims.ts, whose comment says why the claim holds on Galera), the attempts it records
 * (./webhook-attempts.ts), the deliveries' log, test events and redeliveries (./webhook-delivery-log.ts); the
 * outbox's events are written by ./webhook-outbox.ts.
 */
import type { Pool, PoolConnection, ResultSetHeader, RowDataPacket } from "mysql2/promise";
import { ensureAffiliate, insertUnderCap } from "../../ingest/sql/affiliates.js";
import { numberOrNull, textOrNull } from "../../platform/database/row-values.js";
import type { SecretBox } from "../../platform/database/secret-box.js";
import { inTransaction } from "../../platform/database/transactions.js";
import type {
  ClaimedWebhookDelivery,
  NewWebhookEndpoint,
  StoredWebhookDelivery,
  StoredWebhookEndpoint,
  WebhookAttemptOutcome,
  WebhookEndpointChange,
  WebhookStore,
} from "../../ports/webhooks.js";
import { isWebhookEventType, type WebhookEventType } from "../../values/webhook-events.js";
import { type AttemptRecord, failWithoutAttempt, recordAttempts } from "./webhook-attempts.js";
import { type ClaimOptions, claimDue } from "./webhook-claims.js";
import { clip, MAX_ERROR } from "./webhook-columns.js";
import { findDelivery, listDeliveries, queueState, redeliver, sendTestEvent } from "./webhook-delivery-log.js";

const SELECT_ENDPOINT = `SELECT p.id, a.external_id AS affiliate_external_id, p.url, p.description, p.event_types,
    p.enabled, p.disabled_reason, p.disabled_at, p.previous_secret_expires_at, p.created_at, p.updated_at
  FROM webhook_endpoints p JOIN affiliates a ON a.id = p.affiliate_id`;

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

export class MariadbWebhookStore implements WebhookStore {
  constructor(
    private readonly pool: Pool,
    private readonly box: SecretBox,
  ) {}

  async affiliateExternalId(affiliateKey: number): Promise<string | undefined> {
    const [rows] = await this.pool.query<RowDataPacket[]>("SELECT external_id FROM affiliates WHERE id = ?", [
      affiliateKey,
    ]);
    return rows[0] === undefined ? undefined : String(rows[0].external_id);
  }

  async insertEndpoint(endpoint: NewWebhookEndpoint): Promise<StoredWebhookEndpoint> {
    const stored = await this.insertEndpointWithin(endpoint, undefined);
    if (stored === undefined) throw new Error(`webhook endpoint ${endpoint.id} was not inserted`);
    return stored;
  }

  /**
   * The cap is counted with the affiliate's row held, in the insert's transaction
   * (../../ingest/sql/affiliates.ts insertUnderCap), so two creates never both count the same endpoints.
   */
  async insertEndpointWithin(
    endpoint: NewWebhookEndpoint,
    cap: number | undefined,
  ): Promise<StoredWebhookEndpoint | undefined> {
    const affiliateId = await ensureAffiliate(this.pool, endpoint.affiliateExternalId);
    const held = async (connection: PoolConnection) => {
      const [rows] = await connection.query<RowDataPacket[]>(
        "SELECT COUNT(*) AS n FROM webhook_endpoints WHERE affiliate_id = ?",
        [affiliateId],
      );
      return Number(rows[0]?.n ?? 0);
    };
    const inserted = await insertUnderCap(this.pool, affiliateId, cap, held, async (connection) => {
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
      return "inserted";
    });
    if (inserted === "cap-reached") return undefined;
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

  sendTestEvent(endpointId: string, at: number, data: unknown): Promise<StoredWebhookDelivery> {
    return sendTestEvent(this.pool, endpointId, at, data);
  }

  listDeliveries(endpointId: string, limit: number, beforeId?: string): Promise<StoredWebhookDelivery[]> {
    return listDeliveries(this.pool, endpointId, limit, beforeId);
  }

  findDelivery(id: string): Promise<StoredWebhookDelivery | undefined> {
    return findDelivery(this.pool, id);
  }

  redeliver(id: string, nowMs: number): Promise<StoredWebhookDelivery | undefined> {
    return redeliver(this.pool, id, nowMs);
  }

  claimDue(options: ClaimOptions): Promise<ClaimedWebhookDelivery[]> {
    return claimDue(this.pool, this.box, options);
  }

  async recordAttempt(delivery: ClaimedWebhookDelivery, outcome: WebhookAttemptOutcome): Promise<boolean> {
    const [recorded] = await this.recordAttempts([{ delivery, outcome }]);
    return recorded === true;
  }

  recordAttempts(items: readonly AttemptRecord[]): Promise<boolean[]> {
    return recordAttempts(this.pool, items);
  }

  failWithoutAttempt(delivery: ClaimedWebhookDelivery, reason: string, nowMs: number): Promise<void> {
    return failWithoutAttempt(this.pool, delivery, reason, nowMs);
  }

  queueState(nowMs: number): Promise<{ oldestDueAgeMs: number; disabledEndpoints: number }> {
    return queueState(this.pool, nowMs);
  }
}
