/**
 * Why the watch procedure writes its own stream framing:
 *
 *   npm run bench -- live-framing [--viewers 2000,5000] [--entries 10,100] [--messages 20]
 *
 * One server process per row, N gRPC streams from a client process (500 streams per HTTP/2 connection), the
 * same board message broadcast `--messages` times; the server's CPU per viewer per message and its RSS:
 *   connect-es   a connectNodeAdapter server-streaming handler yielding the one shared message object to each
 *                stream (connect-es serialises and frames it per stream);
 *   own framing  the message encoded once, the same enveloped bytes written to every stream (what
 *                src/boards/wire/watch-rpc.ts does).
 * The server and the client are this file run with a role argument.
 */
import { type ChildProcess, spawn } from "node:child_process";
import http2 from "node:http2";
import { parseArgs } from "node:util";
import { create, toBinary } from "@bufbuild/protobuf";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import {
  TopWagerEntrySchema,
  TopWagersService,
  type WatchTopAffiliateWagersByPeriodResponse,
  WatchTopAffiliateWagersByPeriodResponseSchema,
} from "../gen/topwagers/v1/top_wagers_pb.js";
import { fmt, table } from "./support.js";

const PATH = "/topwagers.v1.TopWagersService/WatchTopAffiliateWagersByPeriod";

function board(entries: number, round: number): WatchTopAffiliateWagersByPeriodResponse {
  return create(WatchTopAffiliateWagersByPeriodResponseSchema, {
    version: `version-${round}-abcdefghij`,
    asOf: BigInt(1_767_225_600 + round),
    data: Array.from({ length: entries }, (_, i) =>
      create(TopWagerEntrySchema, {
        username: `player number ${i}`,
        avatar: `https://img.example/avatars/${i}.png`,
        totalWagered: 12_345.678 + i + round,
        totalWageredDecimal: `${12_345.678 + i + round}`,
        userId: `user-${i}-0123456789`,
        rank: i + 1,
      }),
    ),
  });
}

function envelope(bytes: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + bytes.length);
  out.writeUInt32BE(bytes.length, 1);
  out.set(bytes, 5);
  return out;
}

/** The server role: listens, reports its port, broadcasts when told, reports CPU and RSS. */
async function serve(mode: string, viewers: number, entries: number, messages: number): Promise<void> {
  const waiting = new Set<(message: WatchTopAffiliateWagersByPeriodResponse) => void>();
  const raw = new Set<http2.Http2ServerResponse>();
  let open = 0;
  const adapter = connectNodeAdapter({
    routes(router) {
      router.service(TopWagersService, {
        async *watchTopAffiliateWagersByPeriod(_request, context) {
          const queue: WatchTopAffiliateWagersByPeriodResponse[] = [];
          let wake: (() => void) | undefined;
          const push = (message: WatchTopAffiliateWagersByPeriodResponse) => {
            queue.push(message);
            wake?.();
          };
          waiting.add(push);
          open += 1;
          try {
            while (!context.signal.aborted) {
              const next = queue.shift();
              if (next !== undefined) {
                yield next;
                continue;
              }
              await new Promise<void>((resolve) => {
                wake = resolve;
                context.signal.addEventListener("abort", () => resolve(), { once: true });
              });
              wake = undefined;
            }
          } finally {
            waiting.delete(push);
          }
        },
      });
    },
  });
  const server = http2.createServer({ settings: { maxConcurrentStreams: 1000 } }, (req, res) => {
    if (mode === "connect-es") return void adapter(req, res);
    res.writeHead(200, { "content-type": "application/grpc" });
    raw.add(res);
    open += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  process.send?.({ port: (server.address() as { port: number }).port });
  while (open < viewers) await new Promise((resolve) => setTimeout(resolve, 50));
  process.send?.({ ready: true });
  const boards = Array.from({ length: messages }, (_, round) => board(entries, round));
  const encoded = boards.map((b) => envelope(toBinary(WatchTopAffiliateWagersByPeriodResponseSchema, b)));
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const before = process.cpuUsage();
  for (let round = 0; round < messages; round++) {
    const received = new Promise((resolve) => process.once("message", resolve));
    if (mode === "connect-es")
      for (const push of waiting) push(boards[round] as WatchTopAffiliateWagersByPeriodResponse);
    else for (const res of raw) res.write(encoded[round] as Buffer);
    await received;
  }
  const cpu = process.cpuUsage(before);
  process.send?.({
    cpuMicros: cpu.user + cpu.system,
    rssMiB: process.memoryUsage().rss / 2 ** 20,
    bytes: encoded[0]?.length ?? 0,
  });
}

/** The client role: opens the streams, tells the parent each time every stream has one more message. */
function watch(port: number, viewers: number): void {
  const sessions = Array.from({ length: Math.ceil(viewers / 500) }, () => http2.connect(`http://127.0.0.1:${port}`));
  const received = new Array<number>(viewers).fill(0);
  let round = 0;
  let complete = 0;
  for (let i = 0; i < viewers; i++) {
    const stream = (sessions[i % sessions.length] as http2.ClientHttp2Session).request({
      ":method": "POST",
      ":path": PATH,
      "content-type": "application/grpc",
      te: "trailers",
    });
    stream.end(Buffer.alloc(5));
    let buffer = Buffer.alloc(0);
    stream.on("data", (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      while (buffer.length >= 5 && buffer.length >= 5 + buffer.readUInt32BE(1)) {
        buffer = buffer.subarray(5 + buffer.readUInt32BE(1));
        received[i] = (received[i] ?? 0) + 1;
        if (received[i] === round + 1 && ++complete === viewers) {
          complete = 0;
          round += 1;
          process.send?.({ round });
        }
      }
    });
  }
}

function child(args: string[]): ChildProcess {
  return spawn(process.execPath, [new URL(import.meta.url).pathname, ...args], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
}

function next<T>(process_: ChildProcess, has: (message: Record<string, unknown>) => boolean): Promise<T> {
  return new Promise((resolve) => {
    const on = (message: Record<string, unknown>) => {
      if (!has(message)) return;
      process_.off("message", on);
      resolve(message as T);
    };
    process_.on("message", on);
  });
}

async function row(mode: string, viewers: number, entries: number, messages: number) {
  const server = child(["--role", "server", mode, String(viewers), String(entries), String(messages)]);
  const { port } = await next<{ port: number }>(server, (m) => "port" in m);
  const client = child(["--role", "client", String(port), String(viewers)]);
  await next(server, (m) => "ready" in m);
  // Relay "every stream has the message" from the client to the server.
  client.on("message", (message) => server.send(message as object));
  const result = await next<{ cpuMicros: number; rssMiB: number; bytes: number }>(server, (m) => "cpuMicros" in m);
  client.kill();
  server.kill();
  return [
    mode,
    viewers,
    `${entries} (${result.bytes} B)`,
    fmt(result.cpuMicros / messages / viewers, 1),
    fmt(result.cpuMicros / messages / 1000, 0),
    fmt(result.rssMiB, 0),
  ];
}

export async function runLiveFramingBench(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      viewers: { type: "string", default: "2000,5000" },
      entries: { type: "string", default: "10,100" },
      messages: { type: "string", default: "20" },
    },
  });
  const messages = Number(values.messages);
  const rows: (string | number)[][] = [];
  for (const viewers of String(values.viewers).split(",").map(Number)) {
    for (const entries of String(values.entries).split(",").map(Number)) {
      for (const mode of ["connect-es", "own framing"]) rows.push(await row(mode, viewers, entries, messages));
    }
  }
  process.stdout.write(
    [
      "",
      `command: npm run bench -- live-framing --viewers ${values.viewers} --entries ${values.entries} --messages ${messages}`,
      `machine: Node ${process.version}; server and client processes on the same cores`,
      "",
      table(
        [
          "server",
          "streams",
          "entries (message)",
          "CPU µs per stream per message",
          "CPU ms per broadcast",
          "server RSS MiB",
        ],
        rows,
      ),
      "",
    ].join("\n"),
  );
}

const role = process.argv.indexOf("--role");
if (role >= 0) {
  const [kind, ...rest] = process.argv.slice(role + 1);
  if (kind === "server") void serve(rest[0] as string, Number(rest[1]), Number(rest[2]), Number(rest[3]));
  else watch(Number(rest[0]), Number(rest[1]));
}
