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

/** For a Connect unary call, turns the read limit's 429 (no Retry-After) into 413 as the response starts. */
export function sayOversizeBodiesAs413(req: NodeRequest, res: NodeResponse): void {
  if (req.method !== "POST" || !CONNECT_UNARY.test(req.headers["content-type"] ?? "")) return;
  const writeHead = res.writeHead.bind(res) as (status: number, headers?: OutgoingHttpHeaders) => NodeResponse;
  const replaced = (status: number, headers?: OutgoingHttpHeaders): NodeResponse => {
    const retryAfter = headers?.["retry-after"] ?? res.getHeader("retry-after");
    return writeHead(status === 429 && retryAfter === undefined ? 413 : status, headers);
  };
  (res as { writeHead: unknown }).writeHead = replaced;
}
