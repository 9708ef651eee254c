/**
 * A claim that was never finished (its worker was killed or stalled past its lease while sending) leaves an
 * attempt whose outcome nobody knows: the receiver may have got it. When such a delivery is leased again, the
 * lost attempt is written to its log first, with no status and an error saying so (docs/webhooks.md), and
 * counted in its attempts; the delivery keeps at least the one try it is leased for.
 */
import type { PoolConnection } from "mysql2/promise";

export const LOST_ATTEMPT_ERROR =
  "unknown: the instance sending it stopped before recording the outcome (its lease ran out); it may have arrived";

/**
 * Of `ids` (locked by the caller, about to be leased at `nowMs`), records each one whose last claim ran out
 * unfinished as an attempt with an unknown outcome, dated from that claim's start (its lease's end minus
 * `leaseMs`, the lease every worker takes).
 */
export async function recordLostAttempts(
  connection: PoolConnection,
  ids: readonly string[],
  nowMs: number,
  leaseMs: number,
): Promise<void> {
  const unfinished = "id IN (?) AND claim_token IS NOT NULL AND claimed_until_ms <= ?";
  await connection.query(
    `INSERT IGNORE INTO webhook_attempts (delivery_id, attempt, started_at_ms, duration_ms, status, error, response, instance)
     SELECT id, attempts + 1, GREATEST(0, CAST(claimed_until_ms AS SIGNED) - ?), ?, NULL, ?, NULL, ''
       FROM webhook_deliveries WHERE ${unfinished}`,
    [leaseMs, leaseMs, LOST_ATTEMPT_ERROR, ids, nowMs],
  );
  // Assignments run left to right: max_attempts reads the attempts just counted.
  await connection.query(
    `UPDATE webhook_deliveries
        SET attempts = attempts + 1, max_attempts = GREATEST(max_attempts, attempts + 1), last_error = ?
      WHERE ${unfinished}`,
    [LOST_ATTEMPT_ERROR, ids, nowMs],
  );
}
