/**
 * Write transactions that retry themselves. InnoDB may pick a transaction as a
 * deadlock victim (1213) or give up waiting for a row lock (1205); both roll
 * the work back, so running it again from the start is always safe. Attempts
 * are bounded and spaced with jittered exponential backoff, so concurrent
 * writers that collided do not collide again in lockstep.
 */
import type { Pool, PoolConnection } from "mysql2/promise";
import { connectionIdentity } from "../compat/mysql2.js";
import { classifyDatabaseError } from "./database-errors.js";

/** Thrown by transaction work to roll back and start over (e.g. a concurrent writer won a race). */
export class RetryTransaction extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "RetryTransaction";
  }
}

/** Every attempt failed on lock contention; nothing was written. */
export class ContentionError extends Error {
  constructor(
    readonly attempts: number,
    cause: unknown,
  ) {
    super(`gave up after ${attempts} attempts on lock contention`, { cause });
    this.name = "ContentionError";
  }
}

export interface RetryPolicy {
  readonly maxAttempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /** Session lock wait limit in seconds; the server default (50 s) is far too long for an RPC. */
  readonly lockWaitTimeoutSeconds: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 8,
  baseDelayMs: 4,
  maxDelayMs: 250,
  lockWaitTimeoutSeconds: 10,
};

function isRetryable(error: unknown): boolean {
  if (error instanceof RetryTransaction) return true;
  return classifyDatabaseError(error) === "retry";
}

/** Per-connection one-time set-up already done, by purpose (keyed by the driver's connection object). */
class PreparedConnections {
  private readonly done = new Map<string, WeakSet<object>>();

  async once(connection: PoolConnection, purpose: string, setUp: () => Promise<unknown>): Promise<void> {
    const core = connectionIdentity(connection);
    let done = this.done.get(purpose);
    if (done === undefined) {
      done = new WeakSet();
      this.done.set(purpose, done);
    }
    if (done.has(core)) return;
    await setUp();
    done.add(core);
  }
}

const PREPARED = Symbol("prepared connections");

/**
 * The pool's own record of prepared connections, kept on the pool object (made by openDatabase,
 * ./database.ts), so two databases in one process never share it and it goes with its pool.
 */
function preparedConnections(pool: Pool): PreparedConnections {
  const owner = pool as Pool & { [PREPARED]?: PreparedConnections };
  owner[PREPARED] ??= new PreparedConnections();
  return owner[PREPARED];
}

/** Runs `setUp` once per connection of `pool` and purpose (session settings, temporary tables). */
export function oncePerConnection(
  pool: Pool,
  connection: PoolConnection,
  purpose: string,
  setUp: () => Promise<unknown>,
): Promise<void> {
  return preparedConnections(pool).once(connection, purpose, setUp);
}

/**
 * Runs `work` inside a transaction on one pooled connection and commits;
 * rolls back and retries on deadlock, lock wait timeout or RetryTransaction.
 * `work` must do nothing outside the database that cannot be repeated.
 *
 * The transaction runs at READ COMMITTED: the writers here never rely on a
 * snapshot across statements (they detect races by affected row counts and
 * unique keys), and READ COMMITTED takes no gap locks, which is what makes
 * concurrent inserts and upserts deadlock in REPEATABLE READ.
 */
export async function inTransaction<T>(
  pool: Pool,
  work: (connection: PoolConnection) => Promise<T>,
  policy: RetryPolicy = DEFAULT_RETRY_POLICY,
): Promise<T> {
  let lastError: unknown;
  for (let attempt = 1; attempt <= policy.maxAttempts; attempt++) {
    const connection = await pool.getConnection();
    try {
      await oncePerConnection(pool, connection, "lock wait", () =>
        connection.query("SET SESSION innodb_lock_wait_timeout = ?", [policy.lockWaitTimeoutSeconds]),
      );
      await connection.query("SET TRANSACTION ISOLATION LEVEL READ COMMITTED");
      await connection.query("START TRANSACTION");
      const result = await work(connection);
      await connection.query("COMMIT");
      return result;
    } catch (error) {
      await connection.query("ROLLBACK").catch(() => undefined);
      if (!isRetryable(error)) throw error;
      lastError = error;
    } finally {
      connection.release();
    }
    if (attempt < policy.maxAttempts) {
      const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
      await new Promise((resolve) => setTimeout(resolve, ceiling / 2 + Math.random() * (ceiling / 2)));
    }
  }
  throw new ContentionError(policy.maxAttempts, lastError);
}
