/**
 * The domain's own errors (values/domain-errors.ts) mapped through the catalogue: the domain
 * throws plain errors that know nothing of Connect, and every skin turns a thrown value into the
 * catalogue's error here.
 */
import { ConnectError } from "@connectrpc/connect";
import { InvalidQueryError, StoreFailure } from "../../values/domain-errors.js";
import { internal, ServiceError } from "./catalogue.js";
import { fromDatabase } from "./database.js";

/**
 * A domain error as the catalogue's error; any other value unchanged (for a skin that lets
 * connect-es handle what it throws).
 */
export function fromDomain(reason: unknown): unknown {
  if (reason instanceof InvalidQueryError) {
    return new ServiceError("INVALID_ARGUMENT", reason.message, { violations: reason.violations });
  }
  if (reason instanceof StoreFailure) return fromDatabase(reason.cause);
  return reason;
}

/** Any thrown value as a ConnectError; unknown failures become Internal with a generic message. */
export function asConnectError(reason: unknown): ConnectError {
  if (reason instanceof ConnectError) return reason;
  const mapped = fromDomain(reason);
  return mapped instanceof ConnectError ? mapped : internal(reason);
}
