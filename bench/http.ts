/**
 * HTTP scenario: warm-cache REST throughput against a bare node:http baseline
 * doing the same key check, limiter call and bytes, in the same run; then
 * Connect and gRPC throughput with connect-es client loops.
 *
 *   npm run bench -- http [--seconds 10] [--connections 64]
 */
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import autocannon from "autocannon";
import { TopWagersService } from "../gen/topwagers/v1/top_wagers_pb.js";
import { generateApiKey } from "../src/keys/core/api-key-secret.js";
import { insertApiKey } from "../src/keys/sql/api-keys.js";
import { openDatabase } from "../src/platform/database/database.js";
import { insertWagers, upsertUsers } from "../test/support/users-and-wagers.js";
import { recreateDatabase } from "./ingest.js";
import { fmt, machineDescription, measuredServerEnv, percentile, startChild, table } from "./support.js";

export const OCT_1 = 1_790_812_800;

export async function prepareDatabase(url: string): Promise<string> {
  await recreateDatabase(url);
  const db = await openDatabase({ url, poolSize: 2 });
  try {
    const users = Array.from({ length: 200 }, (_, i) => ({
      id: `user-${i}`,
      affiliateId: "bench",
      username: `player_${i}`,
      avatar: `https://avatars.example.com/${i}.png`,
    }));
    await upsertUsers(db.write, users);
    for (let batch = 0; batch < 10; batch++) {
      const wagers = Array.from({ length: 1000 }, (_, i) => {
        const n = batch * 1000 + i;
        return {
          id: `w-${n}`,
          userId: `user-${(n * 7919) % 200}`,
          amount: `${(n % 977) + 1}.${String((n * 104729) % 100_000_000).padStart(8, "0")}`,
          placedAt: OCT_1 + ((n * 613) % (30 * 86_400)),
        };
      });
      await insertWagers(db.write, wagers);
    }
    const key = generateApiKey();
    await insertApiKey(db.write, {
      id: key.id,
      hash: key.hash,
      affiliateExternalId: "bench",
      label: "bench",
      rateLimit: { points: 1_000_000_000, windowSeconds: 60 },
    });
    return key.secret;
  } finally {
    await db.close();
  }
}

interface LoadResult {
  readonly requestsPerSecond: number;
  readonly p99Ms: number;
  readonly non2xx: number;
}

async function autocannonRun(
  url: string,
  key: string,
  body: string,
  seconds: number,
  connections: number,
): Promise<LoadResult> {
  const result = await autocannon({
    url,
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body,
    connections,
    duration: seconds,
  });
  return {
    requestsPerSecond: result.requests.average,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx + result.errors,
  };
}

async function rpcLoop(call: () => Promise<unknown>, seconds: number, concurrency: number): Promise<LoadResult> {
  const latencies: number[] = [];
  let failures = 0;
  const until = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        const started = performance.now();
        try {
          await call();
          latencies.push(performance.now() - started);
        } catch {
          failures += 1;
        }
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return { requestsPerSecond: latencies.length / seconds, p99Ms: percentile(latencies, 99), non2xx: failures };
}

export async function runHttpBench(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { seconds: { type: "string", default: "10" }, connections: { type: "string", default: "64" } },
  });
  const seconds = Number(values.seconds);
  const connections = Number(values.connections);
  const databaseUrl = process.env.BENCH_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/topwagers_bench_http";
  const key = await prepareDatabase(databaseUrl);
  const request = { startTimestamp: OCT_1, endTimestamp: OCT_1 + 15 * 86_400 - 1, numUsers: 10 };
  const body = JSON.stringify(request);
  const distDir = new URL(".", import.meta.url).pathname;
  const service = await startChild(join(distDir, "../src/main.js"), measuredServerEnv(databaseUrl), {
    isListening: (line) => line.msg?.startsWith("topwagers listening") === true,
  });
  const serviceUrl = `http://127.0.0.1:${service.port}/top-affiliate-wagers-by-period`;
  const warm = await fetch(serviceUrl, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body,
  });
  const bytes = Buffer.from(await warm.arrayBuffer());
  if (warm.status !== 200) throw new Error(`warm-up call answered ${warm.status}: ${bytes.toString()}`);
  const bodyFile = join(tmpdir(), `topwagers-bench-body-${process.pid}.json`);
  writeFileSync(bodyFile, bytes);
  const baseline = await startChild(join(distDir, "baseline-server.js"), {
    PORT: "0",
    KEY_HASH: createHash("sha256").update(key).digest("hex"),
    BODY_FILE: bodyFile,
  });
  const baselineUrl = `http://127.0.0.1:${baseline.port}/top-affiliate-wagers-by-period`;
  try {
    const rows: (string | number)[][] = [];
    const restRuns: LoadResult[] = [];
    const baseRuns: LoadResult[] = [];
    // Warm both servers up (JIT, connection pools, caches) before measuring.
    await autocannonRun(baselineUrl, key, body, 2, connections);
    await autocannonRun(serviceUrl, key, body, 2, connections);
    for (let round = 1; round <= 2; round++) {
      const base = await autocannonRun(baselineUrl, key, body, seconds, connections);
      const rest = await autocannonRun(serviceUrl, key, body, seconds, connections);
      baseRuns.push(base);
      restRuns.push(rest);
      rows.push([
        `node:http baseline (round ${round})`,
        fmt(base.requestsPerSecond, 0),
        fmt(base.p99Ms, 0),
        base.non2xx,
        "",
      ]);
      rows.push([
        `topwagers REST, warm cache (round ${round})`,
        fmt(rest.requestsPerSecond, 0),
        fmt(rest.p99Ms, 0),
        rest.non2xx,
        `${fmt((100 * rest.requestsPerSecond) / base.requestsPerSecond, 0)}%`,
      ]);
    }
    const connect = createClient(
      TopWagersService,
      createConnectTransport({ baseUrl: `http://127.0.0.1:${service.port}`, httpVersion: "1.1" }),
    );
    const connectBinary = createClient(
      TopWagersService,
      createConnectTransport({ baseUrl: `http://127.0.0.1:${service.port}`, httpVersion: "2", useBinaryFormat: true }),
    );
    const grpc = createClient(TopWagersService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${service.port}` }));
    const headers = { authorization: `Bearer ${key}` };
    const rpcRequest = {
      startTimestamp: BigInt(request.startTimestamp),
      endTimestamp: BigInt(request.endTimestamp),
      numUsers: 10,
    };
    const rpcRows: [string, LoadResult][] = [
      [
        "Connect JSON, HTTP/1.1 (connect-es loop)",
        await rpcLoop(() => connect.getTopAffiliateWagersByPeriod(rpcRequest, { headers }), seconds, connections),
      ],
      [
        "Connect binary, h2c (connect-es loop)",
        await rpcLoop(() => connectBinary.getTopAffiliateWagersByPeriod(rpcRequest, { headers }), seconds, connections),
      ],
      [
        "gRPC, h2c (connect-es loop)",
        await rpcLoop(() => grpc.getTopAffiliateWagersByPeriod(rpcRequest, { headers }), seconds, connections),
      ],
    ];
    for (const [name, result] of rpcRows)
      rows.push([name, fmt(result.requestsPerSecond, 0), fmt(result.p99Ms, 1), result.non2xx, ""]);
    const ratio =
      restRuns.reduce((sum, r) => sum + r.requestsPerSecond, 0) /
      baseRuns.reduce((sum, r) => sum + r.requestsPerSecond, 0);
    process.stdout.write(
      [
        "",
        `command: npm run bench -- http --seconds ${seconds} --connections ${connections}`,
        `machine: ${await machineDescription(databaseUrl)}`,
        `load: autocannon ${connections} connections x ${seconds} s on loopback (HTTP/1.1); RPC rows: ${connections} concurrent connect-es calls in the bench process`,
        "",
        table(["target", "req/s", "p99 ms", "non-2xx/errors", "vs baseline"], rows),
        "",
        `REST warm-cache throughput is ${fmt(100 * ratio, 0)}% of the node:http baseline (target >= 70%).`,
        "",
      ].join("\n"),
    );
  } finally {
    await Promise.all([service.stop(), baseline.stop()]);
  }
}
