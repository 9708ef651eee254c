/**
 * Top wagering users of your affiliate from TypeScript with connect-es: the
 * service descriptor generated from proto/ by protoc-gen-es (`npm run
 * generate`, see buf.gen.yaml) and a transport from @connectrpc/connect-node.
 * The Connect protocol runs over HTTP/1.1 and HTTP/2, gRPC over HTTP/2; both
 * reach the same port as REST. In a browser, use createConnectTransport from
 * @connectrpc/connect-web instead; the rest is the same.
 *
 *   npm run -s build
 *   TOPWAGERS_KEY=tw_... node dist/examples/typescript/client.js [http://localhost:8080] [connect|grpc] [watch]
 *
 * With `watch`, the board is printed again each time it changes (the server
 * streams it: WatchTopAffiliateWagersByPeriod), until Ctrl-C.
 *
 * In your own project: npm install @connectrpc/connect @connectrpc/connect-node
 * @bufbuild/protobuf, generate from our proto with protoc-gen-es, and change
 * the import path of TopWagersService below.
 */
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import {
  type TopWagerEntry,
  TopWagersService,
  type WatchTopAffiliateWagersByPeriodResponse,
} from "../../gen/topwagers/v1/top_wagers_pb.js";

export type Protocol = "connect" | "grpc";

/** A client of TopWagersService that sends the API key with every call. */
export function topWagersClient(baseUrl: string, apiKey: string, protocol: Protocol = "connect") {
  const bearer: Interceptor = (next) => (request) => {
    request.header.set("authorization", `Bearer ${apiKey}`);
    return next(request);
  };
  const transport =
    protocol === "grpc"
      ? createGrpcTransport({ baseUrl, interceptors: [bearer] })
      : createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors: [bearer] });
  return createClient(TopWagersService, transport);
}

/**
 * The half-month containing `nowSeconds`: the 1st–15th or the 16th–last day,
 * UTC. Both ends are inclusive, so the end is one second before the next
 * half-month starts and adjacent periods never count a wager twice.
 */
export function currentHalfMonth(nowSeconds: number): { startTimestamp: bigint; endTimestamp: bigint } {
  const now = new Date(nowSeconds * 1000);
  const [year, month] = [now.getUTCFullYear(), now.getUTCMonth()];
  const firstHalf = now.getUTCDate() <= 15;
  const start = Date.UTC(year, month, firstHalf ? 1 : 16) / 1000;
  const nextStart = (firstHalf ? Date.UTC(year, month, 16) : Date.UTC(year, month + 1, 1)) / 1000;
  return { startTimestamp: BigInt(start), endTimestamp: BigInt(nextStart - 1) };
}

/** The top `numUsers` of the period; throws ConnectError (code Unauthenticated, InvalidArgument, …) on failure. */
export async function topWagers(
  client: ReturnType<typeof topWagersClient>,
  period: { startTimestamp: bigint; endTimestamp: bigint },
  numUsers: number,
): Promise<TopWagerEntry[]> {
  const response = await client.getTopAffiliateWagersByPeriod({ ...period, numUsers }, { timeoutMs: 10_000 });
  return response.data;
}

/**
 * Calls `onBoard` with the board now and again each time it changes, until `signal` aborts. A stream
 * that ends with UNAVAILABLE (the server restarts, or sends this client to another instance) is opened
 * again after a second with the last version seen, so an unchanged board is not sent twice.
 */
export async function watchTopWagers(
  client: ReturnType<typeof topWagersClient>,
  period: { startTimestamp: bigint; endTimestamp: bigint },
  numUsers: number,
  onBoard: (board: WatchTopAffiliateWagersByPeriodResponse) => void,
  signal: AbortSignal,
): Promise<void> {
  let resumeVersion = "";
  while (!signal.aborted) {
    try {
      for await (const message of client.watchTopAffiliateWagersByPeriod(
        { ...period, numUsers, resumeVersion },
        { signal },
      )) {
        resumeVersion = message.version;
        // A heartbeat (every 15 s without a change) only says the board is still `version`.
        if (!message.heartbeat) onBoard(message);
      }
    } catch (reason) {
      const error = ConnectError.from(reason);
      if (signal.aborted) return;
      if (error.code !== Code.Unavailable) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }
}

function printEntries(entries: readonly TopWagerEntry[]): void {
  for (const entry of entries) {
    // totalWageredDecimal is exact; totalWagered is a double for display.
    process.stdout.write(
      `${String(entry.rank).padStart(3)}  ${entry.username.padEnd(24)} ${entry.totalWageredDecimal}\n`,
    );
  }
  if (entries.length === 0) process.stdout.write("nobody wagered in this period\n");
}

async function main(): Promise<number> {
  const [baseUrl = "http://localhost:8080", protocol = "connect", mode = "once"] = process.argv.slice(2);
  const apiKey = process.env.TOPWAGERS_KEY;
  if (apiKey === undefined || apiKey === "") {
    process.stderr.write("set TOPWAGERS_KEY to your API key\n");
    return 2;
  }
  if (protocol !== "connect" && protocol !== "grpc") {
    process.stderr.write(`protocol must be connect or grpc, got ${protocol}\n`);
    return 2;
  }
  const client = topWagersClient(baseUrl, apiKey, protocol);
  const period = currentHalfMonth(Math.floor(Date.now() / 1000));
  try {
    if (mode === "watch") {
      const stop = new AbortController();
      process.once("SIGINT", () => stop.abort());
      await watchTopWagers(
        client,
        period,
        10,
        (board) => {
          process.stdout.write(`board ${board.version} as of ${new Date(Number(board.asOf) * 1000).toISOString()}\n`);
          printEntries(board.data);
        },
        stop.signal,
      );
      return 0;
    }
    printEntries(await topWagers(client, period, 10));
    return 0;
  } catch (reason) {
    const error = ConnectError.from(reason);
    // Branch on the code; RESOURCE_EXHAUSTED and UNAVAILABLE are worth a retry later.
    process.stderr.write(`${Code[error.code]}: ${error.rawMessage}\n`);
    return 1;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().then((code) => process.exit(code));
}
