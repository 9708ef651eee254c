/**
 * A Connect procedure that no route of the table serves goes to connect-es directly, without a scan of the table;
 * one a route does serve (the watch procedure, which has its own skin) still goes to that route, and so does a
 * path a route family serves.
 */
import { describe, expect, it } from "vitest";
import { directProcedurePaths, routingHandler, streamHandler } from "../../src/apps/public-routes.js";

const UNARY = "/topwagers.v1.TopWagersService/GetTopAffiliateWagersByPeriod";
const WATCH = "/topwagers.v1.TopWagersService/WatchTopAffiliateWagersByPeriod";
const FAMILY = "/docs/topwagers.v1.Example/Method";

type Handler = ReturnType<typeof routingHandler>;
type Req = Parameters<Handler>[0];
type Res = Parameters<Handler>[1];

function table(handled: string[]) {
  return [
    { path: WATCH, methods: ["POST"], handle: () => handled.push(`watch ${WATCH}`), traced: false },
    {
      path: "/docs",
      serves: (path: string) => path === "/docs" || path.startsWith("/docs/"),
      handle: (_req: unknown, _res: unknown, path: string) => handled.push(`docs ${path}`),
      traced: false,
    },
  ];
}

function exchange(url: string) {
  const req = {
    url,
    method: "POST",
    headers: { "content-type": "application/proto" },
    socket: { remoteAddress: "127.0.0.1" },
  } as unknown as Req;
  const writeHead = () => res;
  const res = { writeHead, getHeader: () => undefined } as unknown as Res;
  return { req, res, writeHead };
}

describe("Connect procedures a route does not serve", () => {
  it("are the only direct paths", () => {
    expect([...directProcedurePaths(table([]), [UNARY, WATCH, FAMILY])]).toEqual([UNARY]);
  });

  it("go to connect-es with the 413 rule in place; the others to their routes", () => {
    const handled: string[] = [];
    const routes = table(handled);
    const procedures = directProcedurePaths(routes, [UNARY, WATCH, FAMILY]);
    const handler = routingHandler(
      routes,
      (req) => handled.push(`connect ${req.url}`),
      () => "127.0.0.1",
      procedures,
    );
    const unary = exchange(UNARY);
    handler(unary.req, unary.res);
    // The response's writeHead is replaced by the one that says 413 for a body over the read limit.
    expect(unary.res.writeHead).not.toBe(unary.writeHead);
    for (const url of [WATCH, FAMILY, `${UNARY}?x=1`]) {
      const { req, res } = exchange(url);
      handler(req, res);
    }
    expect(handled).toEqual([`connect ${UNARY}`, `watch ${WATCH}`, `docs ${FAMILY}`, `connect ${UNARY}?x=1`]);
  });

  it("are left by the HTTP/2 stream handler to the request handler", () => {
    const routes = [{ path: UNARY, first: "POST", handle: () => undefined, stream: () => undefined, traced: false }];
    const stream = { session: { socket: { remoteAddress: "127.0.0.1" } } } as never;
    const headers = { ":method": "POST", ":path": UNARY };
    // A route with a stream answer on that path takes it while the path is not direct ...
    expect(streamHandler(routes, () => "127.0.0.1")(stream, headers)).toBe(true);
    // ... and the stream handler leaves every direct path alone.
    expect(streamHandler(routes, () => "127.0.0.1", new Set([UNARY]))(stream, headers)).toBe(false);
  });
});
