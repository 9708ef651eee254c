/**
 * Where this service relies on mysql2's internals (tested in test/integration/compat.test.ts): a
 * pool's connection lists (`_allConnections`, `_freeConnections`, `_connectionQueue`), and a promise
 * PoolConnection's core connection (`.connection`), which stays the same object across checkouts.
 */
import type { Pool, PoolConnection } from "mysql2/promise";

export interface PoolUsage {
  /** Connections the pool holds. */
  readonly open: number;
  /** Of those, not checked out. */
  readonly idle: number;
  /** Requests waiting for a connection. */
  readonly waiting: number;
}

/**
 * A mysql2 pool's use right now. mysql2 has no public counts, and its events cannot give them:
 * a connection handed from one caller straight to a queued one emits nothing, and a destroyed
 * connection leaves the pool without an event.
 */
export function poolUsage(pool: Pool): PoolUsage {
  const inner = pool.pool as unknown as {
    _allConnections?: { length: number };
    _freeConnections?: { length: number };
    _connectionQueue?: { length: number };
  };
  return {
    open: inner._allConnections?.length ?? 0,
    idle: inner._freeConnections?.length ?? 0,
    waiting: inner._connectionQueue?.length ?? 0,
  };
}

/**
 * The driver's connection behind a checked-out promise PoolConnection: the same object every time
 * that connection is checked out (the promise wrapper is new each time), so per-connection set-up
 * can be remembered against it.
 */
export function connectionIdentity(connection: PoolConnection): object {
  return (connection as unknown as { connection: object }).connection;
}
