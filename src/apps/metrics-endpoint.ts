/**
 * GET /metrics in Prometheus' text format: served by the internal listener, or
 * alone on METRICS_PORT (then a network policy can let Prometheus reach the
 * metrics without reaching ingest or the key service).
 */
import type { Logger } from "../platform/logger.js";
import type { Metrics } from "../platform/observability/metrics.js";
import {
  type NodeRequest,
  type NodeResponse,
  normalizePath,
  type RequestHandler,
  writeJson,
  writeWhole,
} from "../platform/transport/http.js";

/** Answers the request when it is GET /metrics (true), else leaves it alone (false). */
export function serveMetrics(metrics: Metrics, logger: Logger, req: NodeRequest, res: NodeResponse): boolean {
  if (req.method !== "GET" || normalizePath(req.url ?? "/") !== "/metrics") return false;
  metrics.registry.metrics().then(
    (text) => writeWhole(res, 200, { "content-type": metrics.registry.contentType, "cache-control": "no-store" }, text),
    (error: unknown) => {
      logger.error({ err: error }, "could not collect metrics");
      writeJson(res, 503, { code: "unavailable", message: "metrics could not be collected" });
    },
  );
  return true;
}

/** The handler of the METRICS_PORT listener: GET /metrics, and 404 for anything else. */
export function metricsOnlyHandler(metrics: Metrics, logger: Logger): RequestHandler {
  return (req, res) => {
    if (serveMetrics(metrics, logger, req, res)) return;
    writeJson(res, 404, { code: "not_found", message: "this listener serves GET /metrics only" });
  };
}
