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
 * The server's ids (`CONNECTION_ID()`, the process list's `ID`) of every connection a pool holds now, checked out or
 * idle: from the same list (`_allConnections`, whose queue type has `toArray()`) and each connection's `threadId`,
 * set once its handshake is done.
 */
export function poolConnectionIds(pool: Pool): number[] {
  const inner = pool.pool as unknown as { _allConnections?: { toArray?: () => { threadId?: unknown }[] } };
  return (inner._allConnections?.toArray?.() ?? [])
    .map((connection) => connection.threadId)
    .filter((id): id is number => typeof id === "number");
}

/**
 * The driver's connection behind a checked-out promise PoolConnection: the same object every time
 * that connection is checked out (the promise wrapper is new each time), so per-connection set-up
 * can be remembered against it.
 */
export function connectionIdentity(connection: PoolConnection): object {
  return (connection as unknown as { connection: object }).connection;
}

/** Runs one statement: the call as the caller made it. */
export type RunStatement = () => Promise<unknown>;

/**
 * Passes every statement a pool runs through `wrap`: on the pool itself (`query`, `execute`) and on every
 * connection checked out of it. mysql2 has no hook for it, so the methods are replaced in place, once per object;
 * `sql` reads the statement's text (from a string or an options object) only when asked.
 */
export function wrapStatements(pool: Pool, wrap: (sql: () => string, run: RunStatement) => Promise<unknown>): void {
  wrapQueryMethods(pool, wrap);
  const getConnection = pool.getConnection.bind(pool);
  pool.getConnection = async () => {
    const connection = await getConnection();
    wrapQueryMethods(connection, wrap);
    return connection;
  };
}

const WRAPPED = Symbol("topwagers.wrappedStatements");

function wrapQueryMethods(
  target: Pool | PoolConnection,
  wrap: (sql: () => string, run: RunStatement) => Promise<unknown>,
): void {
  const marked = target as unknown as Record<symbol, boolean>;
  if (marked[WRAPPED] === true) return;
  marked[WRAPPED] = true;
  const loose = target as unknown as Record<"query" | "execute", (...args: unknown[]) => Promise<unknown>>;
  for (const method of ["query", "execute"] as const) {
    const original = loose[method].bind(target);
    loose[method] = (...args: unknown[]) =>
      wrap(
        () => statementText(args[0]),
        () => original(...args),
      );
  }
}

/** A statement's SQL text, whether given as a string or as mysql2's options object. */
function statementText(first: unknown): string {
  return typeof first === "string" ? first : String((first as { sql?: unknown } | undefined)?.sql ?? "");
}
