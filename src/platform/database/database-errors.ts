/**
 * What a failed statement means, by the driver's errno and code: the one place
 * that knows MySQL/MariaDB error numbers. Transactions retry on `retry`, the
 * node set moves on at `node_down`, and the API answers `unavailable` for
 * every transient failure; anything else is a fault of ours (see ../errors/database.ts).
 */

export const ER_LOCK_WAIT_TIMEOUT = 1205;
export const ER_LOCK_DEADLOCK = 1213;
export const ER_DUP_ENTRY = 1062;

/** What a failed statement says about its node. */
export type DatabaseFailure =
  /** The node is gone or may not serve (connection lost or refused, non-Primary Galera node): use another. */
  | "node_down"
  /** Deadlock or Galera certification conflict (1213), lock wait timeout (1205): run the transaction again. */
  | "retry"
  /** Anything else (bad SQL, a constraint, one statement's timeout): the node is fine. */
  | "other";

const NODE_DOWN_ERRNOS = new Set([
  1047, // WSREP has not yet prepared node for application use (non-Primary Galera node)
  1053, // server shutdown in progress
  1927, // connection was killed
  2002, // can't connect through socket
  2003, // can't connect to server
  2006, // server has gone away
  2013, // lost connection during query
  1290, // running with --read-only: this node does not accept writes (a replica, a demoted primary)
  1836, // running in read-only mode
]);
const NODE_DOWN_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "PROTOCOL_CONNECTION_LOST",
  "PROTOCOL_SEQUENCE_TIMEOUT",
  "ER_SERVER_SHUTDOWN",
]);
/** Failures of the moment that are not the node's: a retry shortly may well succeed. */
const TRANSIENT_ERRNOS = new Set([
  1040, // too many connections
  1317, // query execution was interrupted (KILL QUERY)
  1969, // MariaDB max_statement_time exceeded
  3024, // MySQL max_execution_time exceeded
]);
/** mysql2's pool refusals carry no code, only these messages. */
const POOL_MESSAGES = ["Pool is closed", "No connections available", "Queue limit reached"];

export function errnoOf(error: unknown): number | undefined {
  const errno = (error as { errno?: unknown } | null)?.errno;
  return typeof errno === "number" ? errno : undefined;
}

export function classifyDatabaseError(error: unknown): DatabaseFailure {
  if (error === null || typeof error !== "object") return "other";
  const { code, fatal, message } = error as { code?: unknown; fatal?: unknown; message?: unknown };
  const errno = errnoOf(error);
  if (errno === ER_LOCK_DEADLOCK || errno === ER_LOCK_WAIT_TIMEOUT) return "retry";
  if (errno !== undefined && NODE_DOWN_ERRNOS.has(errno)) return "node_down";
  if (typeof code === "string" && NODE_DOWN_CODES.has(code)) return "node_down";
  if (fatal === true) return "node_down";
  // mysql2 on a pooled connection whose socket already closed.
  if (typeof message === "string" && message.includes("connection is in closed state")) return "node_down";
  return "other";
}

/**
 * Whether a failure is the database's trouble of the moment (a node down, a timeout, contention,
 * no connection to be had), which callers are told to retry, rather than a fault in our statements.
 */
export function isTransientDatabaseError(error: unknown): boolean {
  if (classifyDatabaseError(error) !== "other") return true;
  // A transaction that met lock contention on every attempt (./transactions.ts ContentionError): nothing was written.
  if (error instanceof Error && error.name === "ContentionError") return true;
  const errno = errnoOf(error);
  if (errno !== undefined && TRANSIENT_ERRNOS.has(errno)) return true;
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === "string" && POOL_MESSAGES.some((text) => message.startsWith(text));
}
