/**
 * A body over the read limit is 413 on Connect unary, as it is on REST (docs/api.md), never 429. connect-es
 * refuses such a body with resource_exhausted (naming the limit), which the Connect protocol maps to 429: a
 * status clients and proxies retry, although the same body can never pass. Its other 429s, the rate limits
 * (RATE_LIMITED, TOO_MANY_FAILED_ATTEMPTS, TOO_MANY_STREAMS, TOO_MANY_SENDS), always carry Retry-After; a
 * resource_exhausted without it is the read limit (declared or counted, compressed or not). gRPC and gRPC-Web
 * answer HTTP 200 and keep their resource_exhausted status as it is.
 */
import type { OutgoingHttpHeaders } from "node:http";
import type { NodeRequest, NodeResponse } from "./http.js";

/** Content types of Connect's unary protocol (its streams are application/connect+…). */
const CONNECT_UNARY = /^application\/(json|proto)\s*(;|$)/i;

/** The response's own writeHead, kept on it while the replacement below stands in for it. */
const ORIGINAL_WRITE_HEAD = Symbol("topwagers.writeHead");

type Replaced = NodeResponse & {
  [ORIGINAL_WRITE_HEAD]: (status: number, headers?: OutgoingHttpHeaders) => NodeResponse;
};

/**
 * One function for every response (no bound copy and closure per call, as before: two allocations on every
 * Connect unary call): the original is kept on the response itself.
 */
function writeHeadSaying413(this: Replaced, status: number, headers?: OutgoingHttpHeaders): NodeResponse {
  const retryAfter = headers?.["retry-after"] ?? this.getHeader("retry-after");
  return this[ORIGINAL_WRITE_HEAD](status === 429 && retryAfter === undefined ? 413 : status, headers);
}

/** For a Connect unary call, turns the read limit's 429 (no Retry-After) into 413 as the response starts. */
export function sayOversizeBodiesAs413(req: NodeRequest, res: NodeResponse): void {
  if (req.method !== "POST" || !CONNECT_UNARY.test(req.headers["content-type"] ?? "")) return;
  const replaced = res as Replaced;
  replaced[ORIGINAL_WRITE_HEAD] = res.writeHead as Replaced[typeof ORIGINAL_WRITE_HEAD];
  (res as { writeHead: unknown }).writeHead = writeHeadSaying413;
}
