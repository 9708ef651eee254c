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
  let closing = false;
  // While draining, every HTTP/1.1 answer closes its connection (Node then ends the socket after it).
  const h1Handler: RequestHandler = (req, res) => {
    if (closing) res.setHeader("connection", "close");
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
  const sessions = new Set<Http2Session>();
  h2.on("session", (session: Http2Session) => {
    sessions.add(session);
    session.setTimeout(limits.idleTimeoutMs, () => session.close());
    session.once("close", () => sessions.delete(session));
  });
  const sockets = new Set<net.Socket>();
  /** Connections whose first bytes have not arrived yet: they hold no request. */
  const unclassified = new Set<net.Socket>();

  const server = net.createServer((socket) => {
    sockets.add(socket);
    unclassified.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      unclassified.delete(socket);
    });
    socket.setNoDelay(true);
    // A connection that never sends enough bytes to be classified is closed.
    socket.setTimeout(limits.headersTimeoutMs, () => socket.destroy());
    let buffered: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      const n = Math.min(buffered.length, PREFACE.length);
      const looksLikeHttp2 = buffered.subarray(0, n).equals(PREFACE.subarray(0, n));
      if (looksLikeHttp2 && buffered.length < PREFACE.length) return;
      socket.removeListener("data", onData);
      unclassified.delete(socket);
      socket.setTimeout(0);
      socket.pause();
      socket.unshift(buffered);
      if (looksLikeHttp2) {
        // The HTTP/2 server reads the unshifted preface itself; resuming here would break its framing.
        h2.emit("connection", socket);
      } else {
        h1.emit("connection", socket);
        socket.resume();
      }
    };
    socket.on("data", onData);
    socket.on("error", () => socket.destroy());
  });

  return {
    server,
    close(graceMs = 10_000) {
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
          for (const socket of sockets) socket.destroy();
          finish();
        }, graceMs);
        timer.unref();
        closing = true;
        server.close(() => finish());
        // In-flight requests finish; idle connections go now (Node's server.close() closes the idle
        // HTTP/1.1 ones). An HTTP/1.1 connection whose answer had begun before this (so it promised
        // keep-alive) goes as soon as that answer is done: the sweep closes idle ones again until all are gone.
        for (const socket of unclassified) socket.destroy();
        h1.close();
        idleSweep = setInterval(() => h1.closeIdleConnections(), 10);
        idleSweep.unref();
        for (const session of sessions) session.close();
        if (sockets.size === 0) finish();
      });
    },
  };
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
