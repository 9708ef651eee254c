/**
 * How the REST skins send a whole JSON answer: the envelope's bytes with the headers every answer has (type, Vary,
 * length), gzip when the client accepts it (made at most once per body), and a refusal or error rendered in the
 * envelope (platform/errors/renderers.ts). The operation, the SSE stream's refusals, CORS preflights and unknown paths
 * answer through it.
 */
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import { renderRestError } from "../../errors/renderers.js";
import type { Logger } from "../../logger.js";
import { acceptsGzip } from "../../transport/accept-encoding.js";
import type { Exchange } from "../../transport/exchange.js";

const gzipAsync = promisify(gzip);

/** A response body, with its gzip form made at most once. */
export interface Body {
  readonly plain: Buffer;
  gzipped?: Buffer;
}

export function bodyOf(text: string): Body {
  return { plain: Buffer.from(text, "utf8") };
}

export const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * Sends a whole answer: `headerSets` (rate limit and CORS, caching, a refusal's own) and the body's own headers.
 * Returns a promise only when the body has to be compressed first (once per body).
 */
export function send(
  exchange: Exchange,
  status: number,
  body: Body,
  ...headerSets: Readonly<Record<string, string>>[]
): Promise<void> | undefined {
  if (exchange.answered) return undefined;
  const gzip = acceptsGzip(exchange.headers["accept-encoding"]);
  if (gzip && body.gzipped === undefined) {
    return gzipAsync(body.plain).then((gzipped) => {
      body.gzipped ??= gzipped;
      send(exchange, status, body, ...headerSets);
    });
  }
  const out: Record<string, string | number> = {};
  for (const headers of headerSets) Object.assign(out, headers);
  out["content-type"] = "application/json; charset=utf-8";
  out.vary = out.vary === undefined ? "Accept-Encoding" : `Accept-Encoding, ${out.vary}`;
  let payload = body.plain;
  if (gzip && body.gzipped !== undefined) {
    payload = body.gzipped;
    out["content-encoding"] = "gzip";
  }
  // As text: Node checks every header value with a regular expression, and a number takes its slow path (about
  // 3,800 instructions a REST call over HTTP/1.1 under callgrind; docs/benchmarks.md, issue 49 part 2).
  out["content-length"] = String(payload.length);
  // HTTP/2 has no Connection header (the stream ends; the session stays).
  if (exchange.httpVersionMajor >= 2) delete out.connection;
  exchange.answer(status, out, payload);
  return undefined;
}

/** Answers a refusal or an error in the envelope; a connection already gone is logged and aborted. */
export async function refuse(
  exchange: Exchange,
  reason: unknown,
  rateHeaders: Readonly<Record<string, string>> = NO_HEADERS,
  logger?: Logger,
): Promise<void> {
  const rendered = renderRestError(reason);
  try {
    await send(exchange, rendered.status, bodyOf(rendered.body), rateHeaders, rendered.headers);
  } catch (failure) {
    // The connection is gone or the response half-written: nothing left to tell the client.
    logger?.warn({ err: failure }, "could not send REST error response");
    exchange.abort();
  }
}
