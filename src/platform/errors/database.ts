/**
 * A failed database call in the catalogue's terms: the database's trouble of the moment is
 * `unavailable` with Retry-After, anything else is `internal`. Which failures are transient is
 * storage's knowledge (platform/database/database-errors.ts: the one place that knows MySQL error numbers).
 */
import { ConnectError } from "@connectrpc/connect";
import { BeyondRetentionError } from "../../values/retention-horizon.js";
import { isTransientDatabaseError } from "../database/database-errors.js";
import { internal, ServiceError } from "./catalogue.js";

const UNAVAILABLE_MESSAGE = "the leaderboard database is unavailable right now. Retry shortly";

/** The database's trouble of the moment, as callers see it: `unavailable` with Retry-After 1. */
export function databaseUnavailable(cause?: unknown): ServiceError {
  return new ServiceError("DATABASE_UNAVAILABLE", UNAVAILABLE_MESSAGE, {
    retryAfterSeconds: 1,
    ...(cause === undefined ? {} : { cause }),
  });
}

/**
 * A failed database call as the caller sees it. The database's trouble of the moment (a node
 * down, a timeout, contention, no connection to be had) is `unavailable` with Retry-After;
 * anything else is a fault of ours: `internal`, its cause kept for the log and never shown.
 */
export function fromDatabase(error: unknown, message = UNAVAILABLE_MESSAGE): ConnectError {
  if (error instanceof ConnectError) return error;
  if (error instanceof BeyondRetentionError) return beyondRetention(error);
  if (!isTransientDatabaseError(error)) return internal(error);
  return new ServiceError("DATABASE_UNAVAILABLE", message, { retryAfterSeconds: 1, cause: error });
}

/** Runs a call of the database (or of a domain object on it); a failure comes out as fromDatabase makes it. */
export async function databaseCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw fromDatabase(error);
  }
}

/** A period, wager or void the retention job's deletions make unanswerable: `out_of_range`, naming the horizon. */
export function beyondRetention(error: BeyondRetentionError): ServiceError {
  return new ServiceError("BEYOND_RETENTION", error.message, {
    info: { kind: error.kind, horizon: String(error.horizon) },
  });
}
