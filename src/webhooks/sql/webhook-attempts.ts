/**
 * What a delivery worker records after sending under its claim (./webhook-claims.ts): each attempt's outcome
 * on its delivery, ending the claim, the attempt in the delivery's log, and what the attempts change on their
 * endpoints (the failure streak, a disable); or a claimed delivery failed without an attempt. Every write is
 * guarded by the claim's token: a worker whose lease ran out and was taken over records nothing.
 */
import type { Pool, PoolConnection, ResultSetHeader } from "mysql2/promise";
import { inTransaction } from "../../platform/database/transactions.js";
import type { ClaimedWebhookDelivery, WebhookAttemptOutcome } from "../../ports/webhooks.js";
import { clip, MAX_ERROR, responseBytes } from "./webhook-columns.js";

/** One attempt's outcome for its claimed delivery. */
export interface AttemptRecord {
  readonly delivery: ClaimedWebhookDelivery;
  readonly outcome: WebhookAttemptOutcome;
}

/**
 * Several attempts' outcomes in one transaction (one commit, one log flush, instead of one per
 * delivery). A delivery whose claim was lost is left alone and answered false.
 */
export async function recordAttempts(pool: Pool, items: readonly AttemptRecord[]): Promise<boolean[]> {
  if (items.length === 0) return [];
  return inTransaction(pool, async (connection) => {
    const recorded: boolean[] = [];
    for (const item of items) recorded.push(await finishClaim(connection, item));
    const kept = items.filter((_, index) => recorded[index] === true);
    if (kept.length > 0) await insertAttempts(connection, kept);
    await updateEndpoints(connection, endpointChanges(kept));
    return recorded;
  });
}

/** Fails a claimed delivery without an attempt (its endpoint is disabled), if the claim is still its. */
export async function failWithoutAttempt(
  pool: Pool,
  delivery: ClaimedWebhookDelivery,
  reason: string,
  nowMs: number,
): Promise<void> {
  await pool.query(
    `UPDATE webhook_deliveries
        SET state = 'failed', next_attempt_at_ms = NULL, claim_token = NULL, claimed_until_ms = NULL,
            last_error = ?, failed_at_ms = ?
      WHERE id = ? AND claim_token = ?`,
    [clip(reason, MAX_ERROR), nowMs, delivery.id, delivery.claimToken],
  );
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
