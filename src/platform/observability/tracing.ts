/**
 * Opt-in OpenTelemetry tracing: when off, nothing of OpenTelemetry is loaded (the packages are imported here on
 * demand only). Settings, spans and the sampler: docs/operations.md, "Tracing".
 */
import type * as Api from "@opentelemetry/api";
import type { SpanExporter } from "@opentelemetry/sdk-trace-base";
import { type RunStatement, wrapStatements } from "../compat/mysql2.js";
import { ConfigError, readTracesExporter, type TracesExporterName } from "../config.js";
import type { Database } from "../database/database.js";
import { packageInfo } from "../package-info.js";
import type { RequestHandler } from "../transport/http.js";

export interface Tracing {
  /** Wraps a listener's request handler: one SERVER span per request, continuing the caller's trace. */
  wrapHandler(handler: RequestHandler, routeOf?: (path: string) => string | undefined): RequestHandler;
  /** Makes the database's pools report a CLIENT span per query made inside a traced request. */
  traceDatabase(database: Database): void;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

export type { TracesExporterName };

/** The exporter OTEL_TRACES_EXPORTER asks for ("none" when unset or OTEL_SDK_DISABLED=true); a bad value throws. */
export function tracesExporterName(env: NodeJS.ProcessEnv): TracesExporterName {
  const name = readTracesExporter(env);
  if (typeof name !== "string") throw new ConfigError([name.problem]);
  return name;
}

/** Tracing as the environment asks for it, or undefined (and nothing loaded) when it is off. */
export function tracingFromEnv(env: NodeJS.ProcessEnv = process.env): Promise<Tracing | undefined> {
  return startTracing(tracesExporterName(env), env.OTEL_SERVICE_NAME || "topwagers");
}

/**
 * Tracing to the exporter named (Config's tracesExporter), or undefined (and nothing loaded) when it is "none".
 * The OTLP exporter reads its own OTEL_EXPORTER_OTLP_* settings, as the OpenTelemetry specification has it.
 */
export async function startTracing(name: TracesExporterName, serviceName: string): Promise<Tracing | undefined> {
  if (name === "none") return undefined;
  let exporter: SpanExporter;
  if (name === "otlp") {
    const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-http");
    exporter = new OTLPTraceExporter();
  } else {
    const { ConsoleSpanExporter } = await import("@opentelemetry/sdk-trace-base");
    exporter = new ConsoleSpanExporter();
  }
  return createTracing({ exporter, serviceName });
}

const RPC_PATH = /^\/([A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+)\/([A-Za-z_]\w*)$/;

/**
 * Tracing to `exporter`. `simple` exports each span as it ends (tests);
 * otherwise spans are batched.
 */
export async function createTracing(options: {
  readonly exporter: SpanExporter;
  readonly serviceName?: string;
  readonly simple?: boolean;
}): Promise<Tracing> {
  const { otel, provider } = await loadOpenTelemetry(options);
  return {
    wrapHandler: (handler, routeOf) => serverSpans(otel, handler, routeOf),
    traceDatabase(database) {
      for (const pool of new Set([database.read, database.write, database.leaderboard])) {
        wrapStatements(pool, statementSpans(otel, database));
      }
    },
    async shutdown() {
      await provider.shutdown();
    },
  };
}

/** What the spans are made with, once OpenTelemetry is loaded. */
interface Otel {
  readonly api: typeof Api;
  readonly tracer: Api.Tracer;
  readonly propagator: Api.TextMapPropagator;
}

/** Loads the SDK on demand: one context manager per process (a second tracing, in tests, reuses the first). */
async function loadOpenTelemetry(options: Parameters<typeof createTracing>[0]) {
  const api: typeof Api = await import("@opentelemetry/api");
  const { AsyncLocalStorageContextManager } = await import("@opentelemetry/context-async-hooks");
  const { W3CTraceContextPropagator } = await import("@opentelemetry/core");
  const { resourceFromAttributes } = await import("@opentelemetry/resources");
  const { BasicTracerProvider, BatchSpanProcessor, SimpleSpanProcessor } = await import(
    "@opentelemetry/sdk-trace-base"
  );
  const manager = new AsyncLocalStorageContextManager().enable();
  if (!api.context.setGlobalContextManager(manager)) manager.disable();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      "service.name": options.serviceName ?? "topwagers",
      "service.version": packageInfo().version,
    }),
    spanProcessors: [
      options.simple === true ? new SimpleSpanProcessor(options.exporter) : new BatchSpanProcessor(options.exporter),
    ],
  });
  const otel: Otel = { api, tracer: provider.getTracer("topwagers"), propagator: new W3CTraceContextPropagator() };
  return { otel, provider };
}

const HEADER_GETTER: Api.TextMapGetter<Record<string, string | string[] | undefined>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

/** A listener's handler with one SERVER span per request, continuing the caller's trace. */
function serverSpans(
  otel: Otel,
  handler: RequestHandler,
  routeOf: ((path: string) => string | undefined) | undefined,
): RequestHandler {
  const { api, tracer, propagator } = otel;
  return (req, res) => {
    const parent = propagator.extract(api.ROOT_CONTEXT, req.headers, HEADER_GETTER);
    const { name, attributes } = serverSpanOf(req, routeOf);
    const span = tracer.startSpan(name, { kind: api.SpanKind.SERVER, attributes }, parent);
    endWithResponse(otel, span, res);
    api.context.with(api.trace.setSpan(parent, span), () => handler(req, res));
  };
}

/** A request's span name and attributes: an RPC by its service and method, anything else by its route. */
function serverSpanOf(
  req: Parameters<RequestHandler>[0],
  routeOf: ((path: string) => string | undefined) | undefined,
): { name: string; attributes: Api.Attributes } {
  const path = (req.url ?? "/").split("?", 1)[0] ?? "/";
  const method = req.method ?? "GET";
  const contentType = String(req.headers["content-type"] ?? "");
  const attributes: Api.Attributes = {
    "http.request.method": method,
    "url.path": path,
    "network.protocol.version": req.httpVersion,
  };
  const rpc = RPC_PATH.exec(path);
  if (rpc !== null) {
    attributes["rpc.system"] = contentType.startsWith("application/grpc") ? "grpc" : "connect_rpc";
    attributes["rpc.service"] = rpc[1] as string;
    attributes["rpc.method"] = rpc[2] as string;
    if (contentType.startsWith("application/grpc-web")) attributes["rpc.grpc_web"] = true;
    return { name: `${rpc[1]}/${rpc[2]}`, attributes };
  }
  const route = routeOf?.(path);
  if (route !== undefined) attributes["http.route"] = route;
  return { name: route === undefined ? method : `${method} ${route}`, attributes };
}

/** Ends the span when the response closes, with its HTTP status and gRPC's (from trailers or headers). */
function endWithResponse(otel: Otel, span: Api.Span, res: Parameters<RequestHandler>[1]): void {
  // gRPC reports its outcome in trailers (HTTP/2); keep the status when it is set there.
  const withTrailers = res as { addTrailers?: (t: Record<string, string | number>) => void };
  if (typeof withTrailers.addTrailers === "function") {
    const addTrailers = withTrailers.addTrailers.bind(res);
    withTrailers.addTrailers = (trailers) => {
      const status = trailers["grpc-status"];
      if (status !== undefined) span.setAttribute("rpc.grpc.status_code", Number(status));
      addTrailers(trailers);
    };
  }
  res.once("close", () => {
    span.setAttribute("http.response.status_code", res.statusCode);
    const grpcStatus = res.getHeader("grpc-status");
    if (grpcStatus !== undefined) span.setAttribute("rpc.grpc.status_code", Number(grpcStatus));
    if (res.statusCode >= 500) span.setStatus({ code: otel.api.SpanStatusCode.ERROR });
    span.end();
  });
}

/** A CLIENT span around one statement made inside a traced request; outside one, the statement alone. */
function statementSpans(otel: Otel, database: Database): (sql: () => string, run: RunStatement) => Promise<unknown> {
  const { api, tracer } = otel;
  return (sqlOf, run) => {
    const active = api.context.active();
    if (api.trace.getSpan(active) === undefined) return run();
    const sql = sqlOf();
    const operation = /^\s*(\w+)/.exec(sql)?.[1]?.toUpperCase() ?? "QUERY";
    const attributes = {
      "db.system.name": database.flavour,
      "db.namespace": database.name,
      "db.operation.name": operation,
      "db.query.text": sql.length > 2000 ? `${sql.slice(0, 2000)}…` : sql,
    };
    const span = tracer.startSpan(`${operation} ${database.name}`, { kind: api.SpanKind.CLIENT, attributes }, active);
    return api.context.with(api.trace.setSpan(active, span), run).then(
      (result) => {
        span.end();
        return result;
      },
      (error: unknown) => {
        span.recordException(error instanceof Error ? error : String(error));
        span.setStatus({ code: api.SpanStatusCode.ERROR });
        span.end();
        throw error;
      },
    );
  };
}
