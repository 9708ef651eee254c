/**
 * The Node request and response types every listener and skin works with
 * (HTTP/1.1 or HTTP/2 compatibility objects, as Connect's node adapter takes
 * them), and the small HTTP helpers they share.
 */
import type http from "node:http";
import { type Http2ServerRequest, Http2ServerResponse, constants as http2Constants } from "node:http2";
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

/** Collapses repeated slashes and drops a trailing one, so "//a//b/" routes like "/a/b". */
export function normalizePath(rawUrl: string): string {
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
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        req.removeListener("data", onData);
        req.removeListener("end", onEnd);
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
    req.on("data", onData);
    req.once("end", onEnd);
    req.once("error", reject);
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
