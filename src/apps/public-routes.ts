/**
 * The public port's routing table (which skin takes a path and method) and the request handler that reads it: the
 * REST POST first, then the table, then connect-es; the REST POST on HTTP/2 streams; the traces' route names; and
 * the answers no skin gives (/healthz, /readyz, 404).
 */
import { WATCH_PATH } from "../boards/wire/watch-rpc.js";
import { HttpRefusal } from "../platform/errors/catalogue.js";
import type { Logger } from "../platform/logger.js";
import type { Readiness } from "../platform/observability/readiness.js";
import { packageInfo } from "../platform/package-info.js";
import { type clientAddressResolver, stampClientAddress } from "../platform/transport/client-address.js";
import { nodeExchange, streamExchange } from "../platform/transport/exchange.js";
import {
  type NodeRequest,
  type NodeResponse,
  normalizePath,
  type RequestHandler,
  type StreamHandler,
  writeJson,
} from "../platform/transport/http.js";
import { sayOversizeBodiesAs413 } from "../platform/transport/oversize-status.js";
import { refuse } from "../platform/wire/parts/rest-reply.js";
import type { LogSkin } from "../results-log/wire/log-tiles.js";
import type { SigningKeysSkin } from "../signing/wire/signing-keys.js";
import { VERIFY_PATH, type VerifyPage } from "../signing/wire/verify-page.js";
import type { Skins } from "./public-skins.js";

/** One line of the routing table. */
interface Route {
  /** The path, normalised (no query, no doubled or trailing slash). */
  readonly path: string;
  /** For a family of paths (`/races/{slug}`): whether the route serves this one; `path` then names the family. */
  readonly serves?: (path: string) => boolean;
  /** The methods it takes (others go on down the table); absent: every method, the skin answering 405. */
  readonly methods?: readonly string[];
  /** Whether it takes this request besides its path and method (the watch procedure: its content types). */
  readonly takes?: (req: NodeRequest) => boolean;
  readonly handle: (req: NodeRequest, res: NodeResponse, path: string) => unknown;
  /**
   * The one method taken on this exact path before the table is read, on the raw URL (no normalisation, no scan):
   * the REST operation's POST, the port's hottest request (what the table scan costs it: docs/benchmarks.md,
   * "Issue 28: what the layering changed on the hot paths").
   */
  readonly first?: string;
  /** Answers a POST on an HTTP/2 stream itself, without Node's (req, res) objects (docs/benchmarks.md). */
  readonly stream?: (
    stream: Parameters<StreamHandler>[0],
    headers: Parameters<StreamHandler>[1],
    address: string,
  ) => unknown;
  /**
   * What traces call the request: `path` (true), the family's template for this path (a function), or nothing
   * (false: the span is named otherwise, as RPCs are, or not worth a name).
   */
  readonly traced: boolean | ((path: string) => string);
}

const GET = ["GET", "HEAD"] as const;
const POST = ["POST"] as const;
const OPTIONS = ["OPTIONS"] as const;

/**
 * The public port's routes, tried in order on the request's normalised path; what no route takes goes to
 * connect-es (the Connect services), and what connect-es does not know either is a 404 in the REST envelope.
 *
 * To serve a new REST GET route, add one entry, e.g. for an exact path:
 * `{ path: `${base}/things`, methods: GET, handle: (req, res) => things.handle(req, res), traced: true }`;
 * a family of paths adds `serves: (p) => things.matches(p)` and names its template in `traced`. A path a browser
 * page calls with a publishable key adds its OPTIONS entry (CORS preflight) above it. To serve a new Connect
 * service, add one line to `connectServices` (public-skins.ts) instead.
 */
export function routingTable(
  skins: Skins & { readonly jwks: SigningKeysSkin; readonly verify: VerifyPage; readonly log: LogSkin },
  readiness: Readiness,
): readonly Route[] {
  const { rest, races, raceEvents, watch, boardStream, overlay, preflight, docs } = skins;
  const restHandle = (req: NodeRequest, res: NodeResponse) => rest.handle(nodeExchange(req, res));
  const restStream: Route["stream"] = (stream, headers, address) =>
    rest.handle(streamExchange(stream, headers, address));
  const preflightHandle = (req: NodeRequest, res: NodeResponse) => preflight.handle(req, res);
  const raceHandle = (req: NodeRequest, res: NodeResponse, path: string) =>
    races.handle(nodeExchange(req, res), req.url ?? "/", path);
  const racePaths = {
    path: races.path,
    serves: (p: string) => races.matches(p),
    traced: (p: string) => races.route(p),
  };
  const raceStreamPaths = {
    path: `${races.path}/{slug}/stream`,
    serves: (p: string) => raceEvents.matches(p),
    traced: () => `${races.path}/{slug}/stream`,
  };
  const table: Route[] = [
    { path: rest.path, methods: OPTIONS, handle: preflightHandle, traced: true },
    { path: boardStream.path, methods: OPTIONS, handle: preflightHandle, traced: true },
    { ...racePaths, methods: OPTIONS, handle: preflightHandle },
    { ...raceStreamPaths, methods: OPTIONS, handle: preflightHandle },
    { path: rest.path, first: "POST", handle: restHandle, stream: restStream, traced: true },
    { ...racePaths, handle: raceHandle },
    { ...raceStreamPaths, handle: (req, res, path) => raceEvents.handle(req, res, path) },
    {
      path: WATCH_PATH,
      methods: POST,
      takes: (req) => req.url === WATCH_PATH && watch.matches(req, WATCH_PATH),
      handle: (req, res) => watch.handle(req, res),
      traced: false,
    },
    { path: boardStream.path, handle: (req, res) => boardStream.handle(req, res), traced: true },
    { path: overlay.path, handle: (req, res) => overlay.handle(req, res), traced: true },
    { path: "/healthz", methods: GET, handle: (_req, res) => writeJson(res, 200, { status: "ok" }), traced: true },
    { path: "/readyz", methods: GET, handle: (_req, res) => readyz(readiness, res), traced: true },
    { path: skins.jwks.path, methods: GET, handle: (req, res, p) => skins.jwks.handle(req, res, p), traced: true },
    { path: skins.jwks.livePath, methods: GET, handle: (req, res, p) => skins.jwks.handle(req, res, p), traced: true },
    {
      path: VERIFY_PATH,
      serves: (path) => skins.verify.matches(path),
      methods: GET,
      handle: (req, res, path) => skins.verify.handle(req, res, path),
      traced: (path) => skins.verify.route(path),
    },
    {
      path: skins.log.path,
      serves: (path) => skins.log.matches(path),
      methods: GET,
      handle: (req, res, path) => skins.log.handle(req, res, path),
      traced: (path) => skins.log.route(path),
    },
    {
      path: "/docs",
      serves: (path) => docs.matches(path, "GET"),
      methods: GET,
      handle: (req, res, path) => docs.handle(req, res, path),
      traced: false,
    },
  ];
  return table.map(withEveryField);
}

/**
 * A route with every field, in one order, so that the dispatcher reads objects of one shape: routes of mixed
 * shapes cost more per request to look up (measured in docs/benchmarks.md, "Issue 28: what the layering changed
 * on the hot paths").
 */
function withEveryField(route: Route): Route {
  const { path, serves, methods, takes, first, handle, stream, traced } = route;
  return { path, serves, methods, takes, first, handle, stream, traced } as Route;
}

/** The first route that takes the request, or undefined. */
function routeOf(
  routes: readonly Route[],
  method: string | undefined,
  path: string,
  req?: NodeRequest,
): Route | undefined {
  for (const route of routes) {
    if (route.serves === undefined ? route.path !== path : !route.serves(path)) continue;
    if (route.methods !== undefined && (method === undefined || !route.methods.includes(method))) continue;
    if (route.takes !== undefined && (req === undefined || !route.takes(req))) continue;
    return route;
  }
  return undefined;
}

/**
 * The Connect procedures' paths that no route of the table serves: a request on one of them, exactly as
 * written, goes to connect-es without a scan of the table (whose `serves` and `takes` all ran for every RPC
 * call before, and twice over HTTP/2: the stream handler's look-up, then the request handler's).
 */
export function directProcedurePaths(routes: readonly Route[], procedurePaths: Iterable<string>): ReadonlySet<string> {
  const direct = new Set<string>();
  for (const path of procedurePaths) {
    if (!routes.some((route) => route.path === path || route.serves?.(path) === true)) direct.add(path);
  }
  return direct;
}

/**
 * The port's request handler: the client address is found once, before anything else reads it; then the routes
 * taken `first` on the raw URL, a Connect procedure no route serves (`procedures`, from directProcedurePaths),
 * the routing table, and connect-es.
 */
export function routingHandler(
  routes: readonly Route[],
  connect: RequestHandler,
  clientAddress: ReturnType<typeof clientAddressResolver>,
  procedures: ReadonlySet<string> = new Set(),
): RequestHandler {
  const firsts = routes.filter((route) => route.first !== undefined);
  return (req, res) => {
    stampClientAddress(req, clientAddress);
    const url = req.url ?? "/";
    for (const route of firsts) {
      if (url === route.path && req.method === route.first) return void route.handle(req, res, route.path);
    }
    if (procedures.has(url)) {
      sayOversizeBodiesAs413(req, res);
      return connect(req, res);
    }
    const path = normalizePath(url);
    const route = routeOf(routes, req.method, path, req);
    if (route === undefined) {
      sayOversizeBodiesAs413(req, res);
      connect(req, res);
    } else void route.handle(req, res, path);
  };
}

/**
 * REST over HTTP/2 is answered on the stream itself, without Node's compatibility (req, res) objects
 * (docs/benchmarks.md: they were the largest cost of the path): a POST to a route with `stream`. Everything else
 * goes through the request handler.
 */
export function streamHandler(
  routes: readonly Route[],
  clientAddress: ReturnType<typeof clientAddressResolver>,
  procedures: ReadonlySet<string> = new Set(),
): StreamHandler {
  // As over HTTP/1.1, the REST operation's POST is found on its exact raw path before the table is scanned.
  const firsts = routes.filter((route) => route.first === "POST" && route.stream !== undefined);
  return (stream, headers) => {
    const path = headers[":path"];
    if (headers[":method"] !== "POST" || path === undefined || headers.expect !== undefined) return false;
    // A Connect procedure no route serves is for the request handler (connect-es).
    if (procedures.has(path)) return false;
    let route: Route | undefined;
    for (const first of firsts) if (first.path === path) route = first;
    route ??= routeOf(routes, "POST", normalizePath(path));
    if (route?.stream === undefined) return false;
    void route.stream(stream, headers, clientAddress({ headers, socket: stream.session?.socket ?? {} }));
    return true;
  };
}

/** What traces call a request's route (a path of the table), or undefined. */
export function tracedRoute(routes: readonly Route[]): (path: string) => string | undefined {
  return (path) => {
    const normal = normalizePath(path);
    const route = routes.find((r) => (r.serves === undefined ? r.path === normal : r.serves(normal)));
    if (route === undefined || route.traced === false) return undefined;
    return route.traced === true ? route.path : route.traced(normal);
  };
}

/** The readiness answer, with the release that gives it (so a mixed fleet's instances can be told apart). */
function readyz(readiness: Readiness, res: NodeResponse): Promise<void> {
  const { version, commit } = packageInfo();
  return readiness
    .check()
    .then((body) => writeJson(res, body.status === "ready" ? 200 : 503, { ...body, version, commit }));
}

/** A path that neither the table nor connect-es knows: 404 in the REST envelope. */
export function notFound(req: NodeRequest, res: NodeResponse, restPath: string, logger: Logger): void {
  const reason = new HttpRefusal("NOT_FOUND", `no such path. The operation is POST ${restPath}`);
  void refuse(nodeExchange(req, res), reason, undefined, logger);
}
