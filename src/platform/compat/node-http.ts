/**
 * Where this service relies on node:http's internals (tested in test/integration/compat.test.ts):
 * a socket's response in progress is `socket._httpMessage`; a server that never listens itself
 * starts tracking its connections when it is sent a `listening` event.
 */
import type http from "node:http";
import type net from "node:net";

/** Whether Node's HTTP/1.1 server has begun a response on this socket (nothing more may be written then). */
export function responseStarted(socket: net.Socket): boolean {
  const inFlight = (socket as net.Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  return inFlight?.headersSent === true;
}

/**
 * Starts Node's own connection tracking on an HTTP/1.1 server that is handed its connections
 * (`emit("connection")`) instead of listening. Node starts it when the server listens: without it,
 * `closeIdleConnections()` and `closeAllConnections()` do nothing, and the headers and request
 * timeouts are never checked.
 */
export function trackConnections(server: http.Server): void {
  server.emit("listening");
}
