/**
 * The Node request and response types every listener and skin works with
 * (HTTP/1.1 or HTTP/2 compatibility objects, as Connect's node adapter takes
 * them), and the small HTTP helpers they share.
 */
import type http from "node:http";
import {
  type Http2ServerRequest,
  Http2ServerResponse,
  constants as http2Constants,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from "node:http2";
import type { Readable } from "node:stream";
import type { connectNodeAdapter } from "@connectrpc/connect-node";

type NodeHandlerFn = ReturnType<typeof connectNodeAdapter>;

/** The request and response types of Connect's node adapter (HTTP/1.1 or HTTP/2), as skins get them. */
export type NodeRequest = Parameters<NodeHandlerFn>[0];
export type NodeResponse = Parameters<NodeHandlerFn>[1];

/** What the one-port server runs for every request, HTTP/1.1 or HTTP/2. */
export type RequestHandler = (
  req: http.IncomingMessage | Http2ServerRequest,
  res: http.ServerResponse | Http2ServerResponse,
) => void;

/**
 * Takes an HTTP/2 stream before Node's compatibility layer makes (req, res) objects of it: returns
 * true when it answers the stream itself, false to leave it to the request handler.
 */
export type StreamHandler = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => boolean;

/** A listener's handlers: every request, and optionally HTTP/2 streams before that. */
export interface Handlers {
  readonly handler: RequestHandler;
  readonly streamHandler?: StreamHandler;
}

/** Collapses repeated slashes and drops a trailing one, so "//a//b/" routes like "/a/b". */
export function normalizePath(rawUrl: string): string {
  // The usual case, a clean path without a query, has nothing to change.
  if (!rawUrl.includes("//") && !rawUrl.includes("?") && (rawUrl.length < 2 || !rawUrl.endsWith("/"))) return rawUrl;
  const path = rawUrl.split("?", 1)[0] ?? "";
  const collapsed = path.replace(/\/{2,}/g, "/");
  return collapsed.length > 1 ? collapsed.replace(/\/$/, "") : collapsed;
}

/** Writes a whole response at once (both response types take the same call). */
export function writeWhole(
  res: NodeResponse,
  status: number,
  headers: Readonly<Record<string, string>>,
  body: string | Buffer,
): void {
  (res as http.ServerResponse).writeHead(status, headers);
  res.end(body);
}

/** Writes the status line and headers (both response types take the same call). */
export function writeHead(res: NodeResponse, status: number, headers: Readonly<Record<string, string>>): void {
  (res as http.ServerResponse).writeHead(status, headers);
}

/** A small JSON answer that is never cached (health and readiness). */
export function writeJson(res: NodeResponse, status: number, body: object): void {
  const payload = JSON.stringify(body);
  writeWhole(
    res,
    status,
    {
      "content-type": "application/json; charset=utf-8",
      "cache-control": "no-store",
      "content-length": String(Buffer.byteLength(payload)),
    },
    payload,
  );
}

/**
 * The request body, refused with `tooLarge()` as soon as it grows past `maxBytes` (a declared
 * Content-Length over the limit is refused unread).
 */
export function readBody(req: NodeRequest, maxBytes: number, tooLarge: () => Error): Promise<Buffer> {
  const declared = req.headers["content-length"];
  if (declared !== undefined && Number(declared) > maxBytes) return Promise.reject(tooLarge());
  return readStream(req, maxBytes, tooLarge);
}

/**
 * The whole body of a request when all of it is buffered and nothing reads it yet, taken at once (no
 * listeners, no promise); undefined otherwise (then readStream). Whole means the end has been pushed
 * (`complete`), or the buffered bytes are exactly the declared Content-Length: after a connection's
 * first HTTP/1.1 request, Node's parser hands the body over before it reports the message complete, and
 * the handler's first await resumes in between (docs/benchmarks.md, issue 23). Refused with
 * `tooLarge()` past `maxBytes`, as readStream would.
 */
export function bodyIfComplete(
  body: Readable,
  maxBytes: number,
  tooLarge: () => Error,
  declaredLength?: string,
): Buffer | undefined {
  if (body.readableFlowing !== null) return undefined;
  const ended = (body as { complete?: boolean }).complete === true;
  if (!ended && (body.readableLength === 0 || Number(declaredLength) !== body.readableLength)) return undefined;
  if (body.readableLength > maxBytes) throw tooLarge();
  // Paused: read() hands over everything buffered (null when nothing is).
  const bytes: Buffer | null = body.read();
  // The end is still to come: flowing, the stream reads it and ends as a drained one does.
  if (!ended) body.resume();
  return bytes ?? Buffer.alloc(0);
}

/** A body stream's bytes, refused with `tooLarge()` as soon as they grow past `maxBytes`. */
export function readStream(body: Readable, maxBytes: number, tooLarge: () => Error): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // Plain listeners, left on the body (it is this request's alone): `once` wraps each one, and removing them
    // cost more than the rest of the read (docs/benchmarks.md, issue 49 part 2). A promise settles once, so an
    // `end` after `close` (or the reverse) changes nothing.
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        // Nothing more is read (the body pauses, as before; the refusal closes the connection).
        body.removeListener("data", onData);
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
    body.on("data", onData);
    body.on("end", onEnd);
    body.on("error", reject);
    // A bare HTTP/2 stream the client resets only closes: what arrived is the body, as with Node's
    // compatibility request (the answer then goes nowhere).
    body.on("close", onEnd);
  });
}

/**
 * Cuts a response that must not finish (a viewer that does not read): an HTTP/2 stream is reset
 * with ENHANCE_YOUR_CALM (gRPC and Connect clients report resource_exhausted) and its connection
 * stays; an HTTP/1.1 connection is closed.
 */
export function cutResponse(res: NodeResponse): void {
  if (res instanceof Http2ServerResponse) res.stream.close(http2Constants.NGHTTP2_ENHANCE_YOUR_CALM);
  else res.destroy();
}
