/**
 * Clients of the live boards as their users write them: connect-es `for await`
 * on every protocol, @grpc/grpc-js with proto-loader, and a raw SSE reader
 * over HTTP/1.1 (a TCP socket) and h2c (node:http2). Each collects what it
 * receives so a test can wait for the next board and assert on it.
 */

import type http2 from "node:http2";
import net from "node:net";
import { create } from "@bufbuild/protobuf";
import { ConnectError, createClient, type Transport } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import {
  TopWagersService,
  WatchTopAffiliateWagersByPeriodRequestSchema,
} from "../../gen/topwagers/v1/top_wagers_pb.js";
import { grpcJsMethod } from "./calls.js";

/** One board or heartbeat as a test compares it: entries in proto JSON names, the exact decimal. */
export interface Board {
  readonly version: string;
  readonly asOf: number;
  readonly heartbeat: boolean;
  readonly data: readonly {
    username: string;
    avatar: string;
    totalWageredDecimal: string;
    userId: string;
    rank: number;
  }[];
  /** When it arrived (performance.now()). */
  readonly at: number;
}

export interface WatchFields {
  readonly startTimestamp?: number;
  readonly endTimestamp?: number;
  readonly numUsers?: number;
  readonly resumeVersion?: string;
}

/** Something that receives over time: waits resolve when it has what the test waits for. */
class Waitable {
  private waiters: (() => void)[] = [];

  protected wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  /** Resolves with the first defined value of `ready()`, checked on every arrival; rejects after `timeoutMs`. */
  protected async waitFor<T>(ready: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const value = ready();
      if (value !== undefined) return value;
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }
}

/** A stream being read: what arrived, how it ended, and waits. */
export class Collected extends Waitable {
  readonly boards: Board[] = [];
  readonly heartbeats: Board[] = [];
  /** Set when the stream ended: undefined for a clean end, else the error (code and message). */
  ended: { code: number; message: string; metadata: Record<string, string> } | null | undefined = undefined;
  push(board: Board): void {
    (board.heartbeat ? this.heartbeats : this.boards).push(board);
    this.wake();
  }

  end(error: { code: number; message: string; metadata: Record<string, string> } | null): void {
    if (this.ended === undefined) this.ended = error;
    this.wake();
  }

  /** Resolves once `ready()` gives a value, or rejects after `timeoutMs`. */
  until<T>(ready: () => T | undefined, timeoutMs = 5_000, what = "condition"): Promise<T> {
    return this.waitFor(ready, timeoutMs, what);
  }

  /** The board number `n` (1-based), waiting for it. */
  board(n: number, timeoutMs = 5_000): Promise<Board> {
    return this.until(() => this.boards[n - 1], timeoutMs, `board ${n}`);
  }

  /** How the stream ended, waiting for it. */
  ending(timeoutMs = 5_000) {
    return this.until(() => (this.ended === undefined ? undefined : { error: this.ended }), timeoutMs, "stream end");
  }
}

export interface OpenStream {
  readonly name: string;
  readonly collected: Collected;
  close(): void;
}

export function watchRequest(fields: WatchFields) {
  return create(WatchTopAffiliateWagersByPeriodRequestSchema, {
    ...(fields.startTimestamp === undefined ? {} : { startTimestamp: BigInt(fields.startTimestamp) }),
    ...(fields.endTimestamp === undefined ? {} : { endTimestamp: BigInt(fields.endTimestamp) }),
    ...(fields.numUsers === undefined ? {} : { numUsers: fields.numUsers }),
    ...(fields.resumeVersion === undefined ? {} : { resumeVersion: fields.resumeVersion }),
  });
}

function headerRecord(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    out[name] = value;
  });
  return out;
}

/** A connect-es client reading the stream with `for await`, as docs/api.md shows. */
export function connectEsWatch(name: string, transport: Transport, key: string, fields: WatchFields): OpenStream {
  const client = createClient(TopWagersService, transport);
  const collected = new Collected();
  const abort = new AbortController();
  void (async () => {
    try {
      for await (const message of client.watchTopAffiliateWagersByPeriod(watchRequest(fields), {
        headers: { authorization: `Bearer ${key}` },
        signal: abort.signal,
      })) {
        collected.push({
          version: message.version,
          asOf: Number(message.asOf),
          heartbeat: message.heartbeat,
          data: message.data.map((e) => ({
            username: e.username,
            avatar: e.avatar,
            totalWageredDecimal: e.totalWageredDecimal,
            userId: e.userId,
            rank: e.rank,
          })),
          at: performance.now(),
        });
      }
      collected.end(null);
    } catch (reason) {
      const error = ConnectError.from(reason);
      collected.end({ code: error.code, message: error.rawMessage, metadata: headerRecord(error.metadata) });
    }
  })();
  return { name, collected, close: () => abort.abort() };
}

/** @grpc/grpc-js with the proto loaded at run time, as a plain Node gRPC user has it. */
export function grpcJsWatch(client: grpc.Client, key: string, fields: WatchFields): OpenStream {
  const method = grpcJsMethod("WatchTopAffiliateWagersByPeriod");
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${key}`);
  const request = {
    ...(fields.startTimestamp === undefined ? {} : { startTimestamp: String(fields.startTimestamp) }),
    ...(fields.endTimestamp === undefined ? {} : { endTimestamp: String(fields.endTimestamp) }),
    ...(fields.numUsers === undefined ? {} : { numUsers: fields.numUsers }),
    ...(fields.resumeVersion === undefined ? {} : { resumeVersion: fields.resumeVersion }),
  };
  const call = client.makeServerStreamRequest(
    method.path,
    method.requestSerialize,
    method.responseDeserialize,
    request,
    metadata,
  );
  const collected = new Collected();
  call.on("data", (message: Record<string, unknown>) => {
    const data = (message.data as Record<string, unknown>[]).map((e) => ({
      username: String(e.username),
      avatar: String(e.avatar),
      totalWageredDecimal: String(e.totalWageredDecimal ?? e.total_wagered_decimal),
      userId: String(e.userId ?? e.user_id),
      rank: Number(e.rank),
    }));
    collected.push({
      version: String(message.version),
      asOf: Number(message.asOf ?? message.as_of),
      heartbeat: Boolean(message.heartbeat),
      data,
      at: performance.now(),
    });
  });
  call.on("error", () => undefined); // reported through "status"
  call.on("status", (status: grpc.StatusObject) => {
    const md: Record<string, string> = {};
    for (const [name, value] of Object.entries(status.metadata.getMap())) md[name] = String(value);
    collected.end(status.code === 0 ? null : { code: status.code, message: status.details, metadata: md });
  });
  return { name: "grpc-js", collected, close: () => call.cancel() };
}

/** One parsed SSE event (or comment) as a raw reader sees it. */
export interface SseEvent {
  readonly event?: string;
  readonly id?: string;
  readonly data?: string;
  readonly retry?: string;
  readonly comment?: string;
}

/** Splits an event-stream text into events; returns the events and the unfinished rest. */
export function parseSse(text: string): { events: SseEvent[]; rest: string } {
  const events: SseEvent[] = [];
  let rest = text;
  for (let end = rest.indexOf("\n\n"); end >= 0; end = rest.indexOf("\n\n")) {
    const block = rest.slice(0, end);
    rest = rest.slice(end + 2);
    const event: Record<string, string> = {};
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) event.comment = line.slice(1).trim();
      else {
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        event[field] = event[field] === undefined ? value : `${event[field]}\n${value}`;
      }
    }
    events.push(event);
  }
  return { events, rest };
}

export interface RawReply {
  readonly status: number;
  /** Lower-case names. */
  readonly headers: Record<string, string>;
  /** The whole raw text received so far (head excluded). */
  body: string;
  readonly events: SseEvent[];
  /** The response or connection is over. */
  ended: boolean;
  /** The server ended the body cleanly (HTTP/1.1: the last chunk; HTTP/2: END_STREAM), not by a reset. */
  complete: boolean;
}

/** An SSE response read raw: status, headers, the body text and its events. */
class RawSse extends Waitable {
  reply: RawReply | undefined;
  private sseRest = "";

  protected appendText(text: string): void {
    const reply = this.reply as RawReply;
    reply.body += text;
    const parsed = parseSse(this.sseRest + text);
    this.sseRest = parsed.rest;
    reply.events.push(...parsed.events);
    this.wake();
  }

  protected closed(): void {
    if (this.reply !== undefined) this.reply.ended = true;
    this.wake();
  }

  until<T>(ready: (reply: RawReply) => T | undefined, timeoutMs = 5_000, what = "condition"): Promise<T> {
    return this.waitFor(() => (this.reply === undefined ? undefined : ready(this.reply)), timeoutMs, what);
  }
}

/** A raw HTTP/1.1 GET over a TCP socket: the head and body bytes exactly as sent (chunked decoding done here). */
export class RawHttp1Stream extends RawSse {
  readonly socket: net.Socket;
  private buffer = Buffer.alloc(0);
  private bodyBytes = 0;

  constructor(
    port: number,
    path: string,
    headers: Record<string, string>,
    options: { read?: boolean; localAddress?: string } = {},
  ) {
    super();
    this.socket = net.connect({
      port,
      host: "127.0.0.1",
      ...(options.localAddress === undefined ? {} : { localAddress: options.localAddress }),
    });
    const head = Object.entries({ host: `127.0.0.1:${port}`, ...headers })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join("");
    this.socket.write(`GET ${path} HTTP/1.1\r\n${head}\r\n`);
    if (options.read === false) this.socket.pause();
    this.socket.on("data", (chunk: Buffer) => this.onData(chunk));
    this.socket.on("close", () => this.closed());
    this.socket.on("error", () => undefined);
  }

  private onData(chunk: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    if (this.reply === undefined) {
      const end = this.buffer.indexOf("\r\n\r\n");
      if (end < 0) return;
      const lines = this.buffer.subarray(0, end).toString("latin1").split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(":");
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      this.reply = {
        status: Number(lines[0]?.split(" ")[1]),
        headers,
        body: "",
        events: [],
        ended: false,
        complete: false,
      };
      this.buffer = this.buffer.subarray(end + 4);
    }
    if (this.reply.headers["transfer-encoding"] !== "chunked") {
      this.bodyBytes += this.buffer.length;
      const text = this.buffer.toString("utf8");
      this.buffer = Buffer.alloc(0);
      this.appendText(text);
      // A whole response with Content-Length ends there (the connection stays open for the next request).
      if (this.bodyBytes >= Number(this.reply.headers["content-length"] ?? Number.POSITIVE_INFINITY)) this.closed();
      return;
    }
    for (;;) {
      const line = this.buffer.indexOf("\r\n");
      if (line < 0) break;
      const size = Number.parseInt(this.buffer.subarray(0, line).toString("latin1"), 16);
      if (this.buffer.length < line + 2 + size + 2) break;
      const text = this.buffer.subarray(line + 2, line + 2 + size).toString("utf8");
      this.buffer = this.buffer.subarray(line + 2 + size + 2);
      if (size === 0) {
        this.reply.complete = true;
        this.closed();
      } else this.appendText(text);
    }
  }

  close(): void {
    this.socket.destroy();
  }
}

/** A GET over h2c with node:http2: status, headers and the event stream. */
export class RawHttp2Stream extends RawSse {
  private readonly request: http2.ClientHttp2Stream;

  constructor(session: http2.ClientHttp2Session, path: string, headers: Record<string, string>) {
    super();
    this.request = session.request({ ":method": "GET", ":path": path, ...headers });
    this.request.setEncoding("utf8");
    this.request.on("response", (head) => {
      const out: Record<string, string> = {};
      for (const [name, value] of Object.entries(head)) if (!name.startsWith(":")) out[name] = String(value);
      this.reply = {
        status: Number(head[":status"]),
        headers: out,
        body: "",
        events: [],
        ended: false,
        complete: false,
      };
      this.wake();
    });
    this.request.on("data", (text: string) => this.appendText(text));
    this.request.on("end", () => {
      if (this.reply !== undefined) this.reply.complete = true;
    });
    this.request.on("close", () => this.closed());
    this.request.on("error", () => undefined);
  }

  close(): void {
    this.request.close();
  }
}

/** The SSE `data` of board events, parsed. */
export function boardEvents(reply: RawReply): { id: string; data: unknown }[] {
  return reply.events
    .filter((e) => e.event === "board")
    .map((e) => ({ id: e.id ?? "", data: JSON.parse(e.data ?? "null") as unknown }));
}

/** One sample of the app's /metrics text by its full series name (`name{labels}`), NaN when absent. */
export async function metricSample(
  metrics: { registry: { metrics(): Promise<string> } },
  series: string,
): Promise<number> {
  const text = await metrics.registry.metrics();
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return Number(line?.split(" ")[1] ?? Number.NaN);
}
