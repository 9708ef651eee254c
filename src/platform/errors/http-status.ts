/**
 * The HTTP status of each Connect code, and its snake_case name, as the REST envelope and the
 * metrics show them. connect-es keeps this table private to its protocol code
 * (protocol-connect's codeToHttpStatus is not part of its public API), so it is mirrored here and
 * test/unit/error-table.test.ts checks the copy against connect-es's and the specification's.
 */
import { Code } from "@connectrpc/connect";

/** snake_case name of a Connect code, as used in REST error items ("invalid_argument"). */
export function codeName(code: Code): string {
  return Code[code].replace(/[A-Z]/g, (c, i: number) => (i === 0 ? c.toLowerCase() : `_${c.toLowerCase()}`));
}

/** HTTP status of each Connect code, as the Connect protocol defines it. */
const HTTP_STATUS: Readonly<Record<Code, number>> = {
  [Code.Canceled]: 499,
  [Code.Unknown]: 500,
  [Code.InvalidArgument]: 400,
  [Code.DeadlineExceeded]: 504,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.PermissionDenied]: 403,
  [Code.ResourceExhausted]: 429,
  [Code.FailedPrecondition]: 400,
  [Code.Aborted]: 409,
  [Code.OutOfRange]: 400,
  [Code.Unimplemented]: 501,
  [Code.Internal]: 500,
  [Code.Unavailable]: 503,
  [Code.DataLoss]: 500,
  [Code.Unauthenticated]: 401,
};

export function httpStatusForCode(code: Code): number {
  return HTTP_STATUS[code] ?? 500;
}
