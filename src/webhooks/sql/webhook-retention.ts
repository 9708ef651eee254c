/**
 * Retention of the webhook history (issue 38): finished deliveries, their attempts and the events left without a
 * delivery are deleted once older than a window (delivered ones sooner, failed ones later: they are what an
 * operator redelivers). Pending deliveries are never touched. Small batches, each its own short transaction, so
 * the delivery worker and the API wait on no long lock; one instance at a time (a named lock on the connection).
 */
import type { Pool, PoolConnection, ResultSetHeader, RowDataPacket } from "mysql2/promise";

/** What one pass deletes: deliveries finished before these times (Unix milliseconds); undefined keeps that kind. */
export interface WebhookRetentionCutoffs {
  readonly deliveredBeforeMs: number | undefined;
  readonly failedBeforeMs: number | undefined;
}

export interface PrunedRows {
  readonly deliveries: number;
  readonly attempts: number;
  readonly events: number;
}

/** The lock's name: per database, so two deployments sharing one server do not wait for each other. */
const LOCK_NAME = "CONCAT('topwagers_retention:', DATABASE())";

/**
 * Runs `work` on one connection holding the retention lock; undefined (nothing run) when another instance holds
 * it. GET_LOCK is per server node: on Galera two instances on two nodes may both run, which is safe (every delete
 * re-checks its rows) and only repeats work.
 */
export async function withRetentionLock<T>(
  pool: Pool,
  work: (connection: PoolConnection) => Promise<T>,
): Promise<T | undefined> {
  const connection = await pool.getConnection();
  try {
    const [rows] = await connection.query<RowDataPacket[]>(`SELECT GET_LOCK(${LOCK_NAME}, 0) AS got`);
    if (Number(rows[0]?.got) !== 1) return undefined;
    try {
      return await work(connection);
    } finally {
      await connection.query(`SELECT RELEASE_LOCK(${LOCK_NAME})`);
    }
  } finally {
    connection.release();
  }
}

/**
 * Deletes up to `batch` finished deliveries past their window, their attempts, and their events once no delivery
 * of theirs is left, in one transaction. A delivery redelivered meanwhile (pending again) is kept: the delete
 * re-checks its state and time.
 */
export async function pruneWebhookBatch(
  connection: PoolConnection,
  cutoffs: WebhookRetentionCutoffs,
  batch: number,
): Promise<PrunedRows> {
  const delivered = cutoffs.deliveredBeforeMs ?? 0; // "< 0" matches no unsigned time: that kind is kept
  const failed = cutoffs.failedBeforeMs ?? 0;
  const finishedBefore = `((state = 'delivered' AND delivered_at_ms < ?) OR (state = 'failed' AND failed_at_ms < ?))`;
  const [candidates] = await connection.query<RowDataPacket[]>(
    `SELECT id, event_id FROM webhook_deliveries WHERE ${finishedBefore} ORDER BY id LIMIT ?`,
    [delivered, failed, batch],
  );
  if (candidates.length === 0) return { deliveries: 0, attempts: 0, events: 0 };
  const ids = candidates.map((r) => String(r.id));
  const eventIds = [...new Set(candidates.map((r) => String(r.event_id)))];
  await connection.beginTransaction();
  try {
    const [deliveries] = await connection.query<ResultSetHeader>(
      `DELETE FROM webhook_deliveries WHERE id IN (?) AND ${finishedBefore}`,
      [ids, delivered, failed],
    );
    const [attempts] = await connection.query<ResultSetHeader>(
      `DELETE a FROM webhook_attempts a LEFT JOIN webhook_deliveries d ON d.id = a.delivery_id
        WHERE a.delivery_id IN (?) AND d.id IS NULL`,
      [ids],
    );
    const [events] = await connection.query<ResultSetHeader>(
      `DELETE e FROM webhook_events e LEFT JOIN webhook_deliveries d ON d.event_id = e.id
        WHERE e.id IN (?) AND d.id IS NULL`,
      [eventIds],
    );
    await connection.commit();
    return { deliveries: deliveries.affectedRows, attempts: attempts.affectedRows, events: events.affectedRows };
  } catch (error) {
    await connection.rollback().catch(() => undefined);
    throw error;
  }
}
