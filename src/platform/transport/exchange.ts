/**
 * One HTTP request and its answer as the REST skin sees them, whatever carries
 * them: Node's (req, res) pair (HTTP/1.1, or HTTP/2 through Node's
 * compatibility objects), or a bare HTTP/2 stream. The skin answers in one
 * piece (status, headers, body), so a stream needs none of the compatibility
 * layer's per-request objects and listeners.
 */
import type { IncomingHttpHeaders } from "node:http";
import type { ServerHttp2Stream } from "node:http2";
import type { Readable } from "node:stream";
import { clientAddressOf } from "./client-address.js";
import type { NodeRequest, NodeResponse } from "./http.js";

export interface Exchange {
  readonly method: string;
  /** Request headers by lower-case name (on a stream, with the HTTP/2 pseudo-headers). */
  readonly headers: IncomingHttpHeaders;
  /** The client's address (platform/transport/client-address.ts: behind trusted proxies, the forwarded one). */
  readonly clientAddress: string;
  readonly httpVersionMajor: number;
  /** The request body. */
  readonly body: Readable;
  /** Whether the answer has begun (then nothing more can be sent). */
  readonly answered: boolean;
  /** Sends the whole answer. `headers` is the exchange's from then on (a stream adds its `:status`). */
  answer(status: number, headers: Record<string, string | number>, body: Buffer | string): void;
  /** Gives up on the exchange: the connection (HTTP/1.1) or the stream (HTTP/2) is reset. */
  abort(): void;
}

class NodeExchange implements Exchange {
  constructor(
    private readonly req: NodeRequest,
    private readonly res: NodeResponse,
  ) {}

  get method(): string {
    return this.req.method ?? "GET";
  }

  get headers(): IncomingHttpHeaders {
    return this.req.headers;
  }

  get clientAddress(): string {
    return clientAddressOf(this.req);
  }

  get httpVersionMajor(): number {
    return this.req.httpVersionMajor;
  }

  get body(): Readable {
    return this.req;
  }

  get answered(): boolean {
    return this.res.headersSent;
  }

  answer(status: number, headers: Record<string, string | number>, body: Buffer | string): void {
    // Both response types take the same calls; their types differ only in overloads.
    (this.res as NodeResponse & { writeHead(s: number, h: typeof headers): void }).writeHead(status, headers);
    this.res.end(body);
  }

  abort(): void {
    this.res.destroy();
  }
}

class StreamExchange implements Exchange {
  readonly httpVersionMajor = 2;

  constructor(
    private readonly stream: ServerHttp2Stream,
    readonly headers: IncomingHttpHeaders,
    readonly clientAddress: string,
  ) {}

  get method(): string {
    return String(this.headers[":method"]);
  }

  get body(): Readable {
    return this.stream;
  }

  get answered(): boolean {
    return this.stream.headersSent;
  }

  answer(status: number, headers: Record<string, string | number>, body: Buffer | string): void {
    // A stream the client has reset takes no answer.
    if (this.stream.destroyed || this.stream.closed) return;
    headers[":status"] = status;
    this.stream.respond(headers);
    this.stream.end(body);
  }

  abort(): void {
    this.stream.destroy();
  }
}

/** The exchange of a Node (req, res) pair. */
export function nodeExchange(req: NodeRequest, res: NodeResponse): Exchange {
  return new NodeExchange(req, res);
}

/** The exchange of a bare HTTP/2 stream, its request headers and its client's address. */
export function streamExchange(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  clientAddress: string,
): Exchange {
  return new StreamExchange(stream, headers, clientAddress);
}
