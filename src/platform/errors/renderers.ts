/**
 * The two renderers of an error as an HTTP body: the REST envelope, and the Connect protocol's own
 * JSON shape for the internal listener's answers outside its RPCs.
 */
import { HttpRefusal, violationsOf } from "./catalogue.js";
import { asConnectError } from "./domain.js";
import { codeName, httpStatusForCode } from "./http-status.js";

/** One item of the REST envelope's `errors` list. */
export interface ErrorItem {
  readonly code: string;
  readonly message: string;
  readonly field?: string;
}

/** An error as the REST envelope shows it: status, headers, and the body text. */
export interface RenderedError {
  readonly status: number;
  readonly code: string;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/**
 * The one renderer of the REST error envelope `{"data":null,"errors":[…]}`, for the REST skin,
 * both listeners' own answers and the transport's refusals: one item per field violation (or
 * one for the whole error), the error's headers (Retry-After, WWW-Authenticate, Allow …) and
 * `Cache-Control: no-store`.
 */
export function renderRestError(reason: unknown): RenderedError {
  const headers: Record<string, string> = { "cache-control": "no-store" };
  if (reason instanceof HttpRefusal) {
    Object.assign(headers, reason.headers);
    return {
      status: reason.status,
      code: reason.code,
      headers,
      body: envelope([{ code: reason.code, message: reason.message }]),
    };
  }
  const error = asConnectError(reason);
  const code = codeName(error.code);
  const own = violationsOf(error);
  const violations = own.length > 0 ? own : [{ message: error.rawMessage }];
  error.metadata.forEach((value, name) => {
    headers[name] = value;
  });
  return {
    status: httpStatusForCode(error.code),
    code,
    headers,
    body: envelope(
      violations.map((v) =>
        v.field === undefined ? { code, message: v.message } : { code, message: v.message, field: v.field },
      ),
    ),
  };
}

/**
 * An error in the Connect protocol's own JSON shape `{"code","message"}`, for the internal
 * listener's answers outside its RPCs (it serves Connect clients only).
 */
export function renderConnectError(reason: unknown): RenderedError {
  const headers = { "cache-control": "no-store" };
  if (reason instanceof HttpRefusal) {
    const body = JSON.stringify({ code: reason.code, message: reason.message });
    return { status: reason.status, code: reason.code, headers: { ...headers, ...reason.headers }, body };
  }
  const error = asConnectError(reason);
  const code = codeName(error.code);
  return {
    status: httpStatusForCode(error.code),
    code,
    headers,
    body: JSON.stringify({ code, message: error.rawMessage }),
  };
}

function envelope(items: readonly ErrorItem[]): string {
  return JSON.stringify({ data: null, errors: items });
}
