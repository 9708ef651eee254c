/**
 * One port for every protocol. The first bytes of a connection decide: the
 * HTTP/2 connection preface goes to an HTTP/2 server (gRPC with prior
 * knowledge, h2c Connect and REST), anything else to an HTTP/1.1 server
 * (REST, Connect, gRPC-Web). Both servers run the same request handler.
 */
import http from "node:http";
import type { Http2Session } from "node:http2";
import http2 from "node:http2";
import net from "node:net";
import { responseStarted, trackConnections } from "../compat/node-http.js";
import { HttpRefusal } from "../errors/catalogue.js";
import { renderRestError } from "../errors/renderers.js";
import type { Handlers, RequestHandler } from "./http.js";

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

export interface ServerLimits {
  /** Close a connection that has not sent its full request headers by then. */
  readonly headersTimeoutMs: number;
  /** Close an HTTP/1.1 or HTTP/2 connection idle for this long. */
  readonly idleTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly maxHeaderBytes: number;
  readonly maxConcurrentStreams: number;
}

export const DEFAULT_LIMITS: ServerLimits = {
  headersTimeoutMs: 10_000,
  idleTimeoutMs: 65_000,
  requestTimeoutMs: 30_000,
  maxHeaderBytes: 16 * 1024,
  maxConcurrentStreams: 100,
};

export interface OnePortServer {
  readonly server: net.Server;
  /** Stops accepting connections and closes idle ones; resolves when every connection is gone or `graceMs` passed. */
  close(graceMs?: number): Promise<void>;
}

/**
 * `handlers`: a request handler, or an app's handlers (with a `streamHandler`, HTTP/2 streams it
 * takes never become (req, res) objects).
 */
export function createOnePortServer(
  handlers: RequestHandler | Handlers,
  limits: ServerLimits = DEFAULT_LIMITS,
): OnePortServer {
  const { handler, streamHandler } =
    typeof handlers === "function" ? { handler: handlers, streamHandler: undefined } : handlers;
  const draining: Draining = { closing: false };
  const h1 = http1Server(handler, limits, draining);
  const sessions = new Set<Http2Session>();
  const h2 = http2Server(handler, streamHandler, limits, sessions);
  const connections: Connections = { sockets: new Set(), unclassified: new Set() };
  const server = net.createServer((socket) => acceptConnection(socket, connections, limits, h1, h2));
  return {
    server,
    close(graceMs = 10_000) {
      draining.closing = true;
      return drain({ server, h1, sessions, connections }, graceMs);
    },
  };
}

/** Set once close() is called: from then on every HTTP/1.1 answer closes its connection. */
interface Draining {
  closing: boolean;
}

/** The open connections, and those among them whose first bytes have not arrived yet (they hold no request). */
interface Connections {
  readonly sockets: Set<net.Socket>;
  readonly unclassified: Set<net.Socket>;
}

/** The HTTP/1.1 server the connections that are not HTTP/2 are handed to. */
function http1Server(handler: RequestHandler, limits: ServerLimits, draining: Draining): http.Server {
  // While draining, every HTTP/1.1 answer closes its connection (Node then ends the socket after it).
  const h1Handler: RequestHandler = (req, res) => {
    if (draining.closing) res.setHeader("connection", "close");
    handler(req, res);
  };
  const h1 = http.createServer(
    {
      maxHeaderSize: limits.maxHeaderBytes,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.idleTimeoutMs,
    },
    h1Handler,
  );
  // The inner server never listens (the outer one does): Node's own connection tracking, which
  // closeIdleConnections and the header and request timeouts rely on, is started by hand.
  trackConnections(h1);
  h1.on("clientError", (error: NodeJS.ErrnoException, socket: net.Socket) => refuseMalformed(error, socket, limits));
  return h1;
}

/**
 * The HTTP/2 server the connections that open with the preface are handed to. A stream goes to
 * `streamHandler` when it takes it, else to `handler` as Node's compatibility (req, res) objects.
 */
function http2Server(
  handler: RequestHandler,
  streamHandler: Handlers["streamHandler"],
  limits: ServerLimits,
  sessions: Set<Http2Session>,
): http2.Http2Server {
  const h2 = http2.createServer({
    maxSessionMemory: 10,
    settings: { maxConcurrentStreams: limits.maxConcurrentStreams, maxHeaderListSize: limits.maxHeaderBytes },
  });
  // Node's compatibility (req, res) objects come from a server of their own that never listens: it
  // only turns the streams it is handed into requests for `handler`, as the listening server would.
  const compatibility = http2.createServer(handler);
  h2.on("stream", (stream, headers, flags, rawHeaders) => {
    if (streamHandler?.(stream, headers) === true) return;
    compatibility.emit("stream", stream, headers, flags, rawHeaders);
  });
  h2.on("session", (session: Http2Session) => {
    sessions.add(session);
    session.setTimeout(limits.idleTimeoutMs, () => session.close());
    session.once("close", () => sessions.delete(session));
  });
  return h2;
}

/**
 * A new connection: kept in `connections` until it closes, and handed to the HTTP/2 or HTTP/1.1 server
 * once its first bytes tell which. One that never sends enough bytes to be classified is closed.
 */
function acceptConnection(
  socket: net.Socket,
  connections: Connections,
  limits: ServerLimits,
  h1: http.Server,
  h2: http2.Http2Server,
): void {
  connections.sockets.add(socket);
  connections.unclassified.add(socket);
  socket.once("close", () => {
    connections.sockets.delete(socket);
    connections.unclassified.delete(socket);
  });
  socket.setNoDelay(true);
  socket.setTimeout(limits.headersTimeoutMs, () => socket.destroy());
  let buffered: Buffer = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
    const n = Math.min(buffered.length, PREFACE.length);
    const looksLikeHttp2 = buffered.subarray(0, n).equals(PREFACE.subarray(0, n));
    if (looksLikeHttp2 && buffered.length < PREFACE.length) return;
    socket.removeListener("data", onData);
    connections.unclassified.delete(socket);
    if (looksLikeHttp2) {
      // The HTTP/2 server reads the unshifted preface itself; resuming here would break its framing.
      handOver(socket, buffered, h2);
    } else {
      handOver(socket, buffered, h1);
      socket.resume();
    }
  };
  socket.on("data", onData);
  socket.on("error", () => socket.destroy());
}

/** Gives the paused connection, with the bytes already read put back, to the server that speaks its protocol. */
function handOver(socket: net.Socket, buffered: Buffer, to: http.Server | http2.Http2Server): void {
  socket.setTimeout(0);
  socket.pause();
  socket.unshift(buffered);
  to.emit("connection", socket);
}

/**
 * Stops accepting connections and lets in-flight requests finish; idle connections go now (Node's
 * server.close() closes the idle HTTP/1.1 ones). An HTTP/1.1 connection whose answer had begun before this
 * (so it promised keep-alive) goes as soon as that answer is done: a sweep closes idle ones again until all
 * are gone. After `graceMs` every connection left is destroyed.
 */
function drain(
  parts: {
    readonly server: net.Server;
    readonly h1: http.Server;
    readonly sessions: Set<Http2Session>;
    readonly connections: Connections;
  },
  graceMs: number,
): Promise<void> {
  const { server, h1, sessions, connections } = parts;
  return new Promise<void>((resolve) => {
    let done = false;
    let idleSweep: NodeJS.Timeout | undefined;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearInterval(idleSweep);
      resolve();
    };
    const timer = setTimeout(() => {
      h1.closeAllConnections();
      for (const socket of connections.sockets) socket.destroy();
      finish();
    }, graceMs);
    timer.unref();
    server.close(() => finish());
    for (const socket of connections.unclassified) socket.destroy();
    h1.close();
    idleSweep = setInterval(() => h1.closeIdleConnections(), 10);
    idleSweep.unref();
    for (const session of sessions) session.close();
    if (connections.sockets.size === 0) finish();
  });
}

/**
 * A request Node's HTTP/1.1 parser refused (unknown method, malformed line or
 * header, headers over the limit, too slow): answered in the REST error
 * envelope like every other refusal, then the connection is closed. As Node's
 * default does, nothing is written once a response on this connection has begun.
 * Unlike Node's default (write, then destroy), the rest of the request is read
 * and dropped for a moment before closing: closing with unread input sends a
 * reset, which can make the client lose the answer.
 */
function refuseMalformed(error: NodeJS.ErrnoException, socket: net.Socket, limits: ServerLimits): void {
  if (error.code !== "ECONNRESET" && socket.writable && !responseStarted(socket)) {
    const refusal =
      error.code === "HPE_HEADER_OVERFLOW"
        ? new HttpRefusal("HEADERS_TOO_LARGE", `request headers are larger than ${limits.maxHeaderBytes} bytes`)
        : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
          ? new HttpRefusal("REQUEST_TIMEOUT", "the request did not arrive in time")
          : new HttpRefusal("MALFORMED_HTTP", "malformed HTTP request");
    const { status, headers, body } = renderRestError(refusal);
    const head = Object.entries({
      "content-type": "application/json; charset=utf-8",
      "content-length": String(Buffer.byteLength(body)),
      ...headers,
      connection: "close",
    })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join("");
    socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\n${head}\r\n${body}`);
    socket.resume();
    setTimeout(() => socket.destroy(), 1_000).unref();
    return;
  }
  socket.destroy();
}
