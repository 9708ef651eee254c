/**
 * The viewers of `npm run bench -- live`, in their own process (started by
 * bench/live.ts with a raised file-descriptor limit): SSE over HTTP/1.1 (one
 * TCP connection each, chunked decoding here), SSE over h2c and gRPC (100
 * streams per HTTP/2 connection). Each message's board and pacer count are
 * read once per version; every arrival is timed, so the parent turns them
 * into commit-to-received latencies. Talks to the parent over IPC only.
 */

import http2 from "node:http2";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  WatchTopAffiliateWagersByPeriodRequestSchema,
  WatchTopAffiliateWagersByPeriodResponseSchema,
} from "../gen/topwagers/v1/top_wagers_pb.js";
import { noteArrivals } from "./arrivals.js";
import { rawSseStream } from "./raw-sse.js";

export type ViewerKind = "sse-h1" | "sse-h2" | "grpc";

export interface ViewersPlan {
  readonly baseUrl: string;
  /** API key of each board (one affiliate per board). */
  readonly keys: readonly string[];
  readonly startTimestamp: number;
  readonly endTimestamp: number;
  readonly numUsers: number;
  /** Viewers of each kind; viewer i watches board i % boards. */
  readonly counts: Readonly<Record<ViewerKind, number>>;
  /** The pacer's total is PACER_BASE + the number of bench wagers recorded for its board. */
  readonly pacerBase: number;
  /** Viewers opened per second. */
  readonly openPerSecond: number;
}

export type FromViewers =
  | { type: "ready"; open: Record<ViewerKind, number>; failed: number }
  | { type: "report"; report: ViewersReport };

export interface ViewersReport {
  /** Arrival times (ms, performance.timeOrigin-based) of each pacer count, by viewer kind, board, then count. */
  readonly arrivals: Record<ViewerKind, Record<string, Record<string, number[]>>>;
  /** Messages received by kind (boards and heartbeats). */
  readonly messages: Record<ViewerKind, number>;
  readonly heartbeats: number;
  /** Streams that ended or failed during the run. */
  readonly ended: Record<ViewerKind, number>;
}

const PACER = /"username":"pacer-(\d+)","avatar":"[^"]*","totalWagered":(\d+)/;

const now = () => performance.timeOrigin + performance.now();

/** The pacer count a version carries, read once per version. */
const countByVersion = new Map<string, number>();
const arrivals: Record<ViewerKind, Map<number, Map<number, number[]>>> = {
  "sse-h1": new Map(),
  "sse-h2": new Map(),
  grpc: new Map(),
};
const messages: Record<ViewerKind, number> = { "sse-h1": 0, "sse-h2": 0, grpc: 0 };
const ended: Record<ViewerKind, number> = { "sse-h1": 0, "sse-h2": 0, grpc: 0 };
let heartbeats = 0;

class Viewer {
  /** The last pacer count this viewer saw (counts between it and a new one each get this arrival). */
  last = -1;
  constructor(
    readonly board: number,
    readonly kind: ViewerKind,
  ) {}

  received(count: number | undefined): void {
    messages[this.kind] += 1;
    if (count === undefined) {
      heartbeats += 1;
      return;
    }
    const at = now();
    if (this.last >= 0) noteArrivals(arrivals[this.kind], this.board, this.last, count, at);
    if (count > this.last) this.last = count;
  }
}

/** SSE text in, events out: one parser per stream. */
class SseParser {
  private rest = "";
  constructor(
    private readonly viewer: Viewer,
    private readonly pacerBase: number,
  ) {}

  push(text: string): void {
    this.rest += text;
    for (let end = this.rest.indexOf("\n\n"); end >= 0; end = this.rest.indexOf("\n\n")) {
      const block = this.rest.slice(0, end);
      this.rest = this.rest.slice(end + 2);
      if (block.startsWith(": heartbeat")) this.viewer.received(undefined);
      else if (block.startsWith("event: board")) {
        const idStart = block.indexOf("id: ") + 4;
        const version = block.slice(idStart, block.indexOf("\n", idStart));
        let count = countByVersion.get(version);
        if (count === undefined) {
          const match = PACER.exec(block);
          count = match === null ? -1 : Number(match[2]) - this.pacerBase;
          countByVersion.set(version, count);
        }
        this.viewer.received(count);
      }
    }
  }
}

/**
 * Tells onFirst(true) at a viewer's first board (once), or onFirst(false) when its stream closes
 * before one; counts the close.
 */
function firstBoard(viewer: Viewer, onFirst: (ok: boolean) => void) {
  let first = true;
  return {
    seen(board: boolean): void {
      if (first && board) {
        first = false;
        onFirst(true);
      }
    },
    closed(): void {
      ended[viewer.kind] += 1;
      if (first) onFirst(false);
    },
  };
}

function sseHttp1(plan: ViewersPlan, viewer: Viewer, path: string, onFirst: (ok: boolean) => void): void {
  const parser = new SseParser(viewer, plan.pacerBase);
  const board = firstBoard(viewer, onFirst);
  const key = plan.keys[viewer.board] as string;
  const onHead = (ok: boolean) => {
    if (!ok) onFirst(false);
  };
  const socket = rawSseStream(plan.baseUrl, path, key, onHead, (text) => {
    parser.push(text);
    board.seen(viewer.last >= 0);
  });
  socket.on("close", () => board.closed());
  socket.on("error", () => undefined);
}

const sessions = new Map<string, { session: http2.ClientHttp2Session; streams: number }>();

/** An HTTP/2 connection with room for one more stream (the server allows 100 per connection). */
function session(plan: ViewersPlan, kind: ViewerKind): http2.ClientHttp2Session {
  const key = `${kind}:${Math.floor((sessionCounts[kind] ?? 0) / 100)}`;
  sessionCounts[kind] = (sessionCounts[kind] ?? 0) + 1;
  let entry = sessions.get(key);
  if (entry === undefined) {
    const created = http2.connect(plan.baseUrl);
    created.on("error", () => undefined);
    entry = { session: created, streams: 0 };
    sessions.set(key, entry);
  }
  entry.streams += 1;
  return entry.session;
}
const sessionCounts: Partial<Record<ViewerKind, number>> = {};

function sseHttp2(plan: ViewersPlan, viewer: Viewer, path: string, onFirst: (ok: boolean) => void): void {
  const stream = session(plan, "sse-h2").request({
    ":method": "GET",
    ":path": path,
    authorization: `Bearer ${plan.keys[viewer.board]}`,
  });
  const parser = new SseParser(viewer, plan.pacerBase);
  const board = firstBoard(viewer, onFirst);
  stream.setEncoding("utf8");
  stream.on("response", (headers) => {
    if (headers[":status"] !== 200) onFirst(false);
  });
  stream.on("data", (text: string) => {
    parser.push(text);
    board.seen(viewer.last >= 0);
  });
  stream.on("close", () => board.closed());
  stream.on("error", () => undefined);
}

/** The version (field 2) and whether it is a heartbeat (field 4) of a response message, without decoding it. */
function peek(message: Uint8Array): { version: string; heartbeat: boolean } {
  let at = 0;
  let version = "";
  let heartbeat = false;
  const varint = () => {
    let value = 0;
    let shift = 0;
    for (;;) {
      const byte = message[at++] as number;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
      shift += 7;
    }
  };
  while (at < message.length) {
    const tag = varint();
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    if (wire === 2) {
      const length = varint();
      if (field === 2) version = Buffer.from(message.subarray(at, at + length)).toString("latin1");
      at += length;
    } else if (wire === 0) {
      const value = varint();
      if (field === 4) heartbeat = value === 1;
    } else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else break;
  }
  return { version, heartbeat };
}

function grpc(plan: ViewersPlan, viewer: Viewer, request: Buffer, onFirst: (ok: boolean) => void): void {
  const stream = session(plan, "grpc").request({
    ":method": "POST",
    ":path": "/topwagers.v1.TopWagersService/WatchTopAffiliateWagersByPeriod",
    "content-type": "application/grpc",
    te: "trailers",
    authorization: `Bearer ${plan.keys[viewer.board]}`,
  });
  stream.end(request);
  let buffer: Buffer = Buffer.alloc(0);
  const board = firstBoard(viewer, onFirst);
  stream.on("data", (chunk: Buffer) => {
    buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
    while (buffer.length >= 5) {
      const length = buffer.readUInt32BE(1);
      if (buffer.length < 5 + length) break;
      const message = buffer.subarray(5, 5 + length);
      buffer = buffer.subarray(5 + length);
      const { version, heartbeat } = peek(message);
      if (heartbeat) {
        viewer.received(undefined);
        continue;
      }
      let count = countByVersion.get(version);
      if (count === undefined) {
        const decoded = fromBinary(WatchTopAffiliateWagersByPeriodResponseSchema, message);
        const pacer = decoded.data.find((e) => e.username.startsWith("pacer-"));
        count = pacer === undefined ? -1 : Number(pacer.totalWageredDecimal) - plan.pacerBase;
        countByVersion.set(version, count);
      }
      viewer.received(count);
      board.seen(true);
    }
  });
  stream.on("close", () => board.closed());
  stream.on("error", () => undefined);
}

async function main(): Promise<void> {
  const plan = JSON.parse(process.env.LIVE_VIEWERS_PLAN ?? "{}") as ViewersPlan;
  const boards = plan.keys.length;
  const query = `startTimestamp=${plan.startTimestamp}&endTimestamp=${plan.endTimestamp}&numUsers=${plan.numUsers}`;
  const path = `/top-affiliate-wagers-by-period/stream?${query}`;
  const message = toBinary(WatchTopAffiliateWagersByPeriodRequestSchema, {
    $typeName: "topwagers.v1.WatchTopAffiliateWagersByPeriodRequest",
    startTimestamp: BigInt(plan.startTimestamp),
    endTimestamp: BigInt(plan.endTimestamp),
    numUsers: plan.numUsers,
  });
  const request = Buffer.alloc(5 + message.length);
  request.writeUInt32BE(message.length, 1);
  request.set(message, 5);
  const kinds: ViewerKind[] = [];
  for (const kind of ["sse-h1", "sse-h2", "grpc"] as const)
    for (let i = 0; i < plan.counts[kind]; i++) kinds.push(kind);
  // A fixed shuffle, so every board has viewers of each kind and they open mixed.
  let seed = 12345;
  for (let i = kinds.length - 1; i > 0; i--) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    const j = seed % (i + 1);
    [kinds[i], kinds[j]] = [kinds[j] as ViewerKind, kinds[i] as ViewerKind];
  }
  const order = kinds.map((kind) => ({ kind }));
  const open: Record<ViewerKind, number> = { "sse-h1": 0, "sse-h2": 0, grpc: 0 };
  let failed = 0;
  let settled = 0;
  const done = new Promise<void>((resolve) => {
    const onFirst = (kind: ViewerKind) => (ok: boolean) => {
      if (ok) open[kind] += 1;
      else failed += 1;
      settled += 1;
      if (settled === kinds.length) resolve();
    };
    const batch = Math.max(1, Math.round(plan.openPerSecond / 20));
    let next = 0;
    const timer = setInterval(() => {
      for (let n = 0; n < batch && next < order.length; n++, next++) {
        const { kind } = order[next] as { kind: ViewerKind };
        const viewer = new Viewer(next % boards, kind);
        if (kind === "sse-h1") sseHttp1(plan, viewer, path, onFirst(kind));
        else if (kind === "sse-h2") sseHttp2(plan, viewer, path, onFirst(kind));
        else grpc(plan, viewer, request, onFirst(kind));
      }
      if (next >= order.length) clearInterval(timer);
    }, 50);
  });
  await done;
  process.send?.({ type: "ready", open, failed } satisfies FromViewers);
  process.on("message", (message: { type: string }) => {
    if (message.type !== "report") return;
    const out = { "sse-h1": {}, "sse-h2": {}, grpc: {} } as ViewersReport["arrivals"];
    for (const kind of ["sse-h1", "sse-h2", "grpc"] as const) {
      for (const [board, byCount] of arrivals[kind]) {
        const counts: Record<string, number[]> = {};
        for (const [k, list] of byCount) counts[k] = list;
        out[kind][board] = counts;
      }
    }
    process.send?.({ type: "report", report: { arrivals: out, messages, heartbeats, ended } } satisfies FromViewers);
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`viewers failed: ${String(error)}\n`);
  process.exit(1);
});
