/**
 * Ingest scenario: wagers per second through RecordWagers on the internal
 * listener of a real server process (`node dist/src/main.js`), over real
 * gRPC (h2c) or Connect, with batches of 1000 and concurrent clients, rollups
 * maintained in the same transaction (they always are). Afterwards every
 * rollup is verified against the raw wagers.
 *
 *   npm run bench -- ingest [--wagers 400000] [--clients 2] [--batch 1000] [--protocol grpc|connect|grpc-web] [--no-weights]
 *
 * Data: 20,000 users in 100 affiliates (Zipf-like); wagers as a live feed
 * would deliver them: two days of activity in time order with increasing ids,
 * skewed user activity and log-normal 8-decimal amounts built from integers, and weights as a casino with race
 * rules sends them (70 % at 10000, 20 % at 5000, 10 % at 1000; --no-weights sends none). Uses topwagers_bench_ingest (dropped and
 * created again) or BENCH_INGEST_DATABASE_URL.
 */

import { parseArgs } from "node:util";
import { type Client, createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import mysql from "mysql2/promise";
import { type IngestUser, type IngestWager, WagerIngestService } from "../gen/topwagers/v1/wager_ingest_pb.js";
import { mulberry32 } from "../src/ingest/core/seed-data.js";
import { verifyRollups } from "../src/ingest/sql/verify.js";
import { connectionOptions, openDatabase } from "../src/platform/database/database.js";
import { migrate } from "../src/schema/migration-runner.js";
import { fmt, logNormalUnits, machineDescription, percentile, startServerProcess, table } from "./support.js";

export const TOKEN = "bench-ingest-token-0123456789abcdef";
export type Protocol = "grpc" | "connect" | "grpc-web";

export async function recreateDatabase(url: string): Promise<void> {
  const { database, ...server } = connectionOptions(url);
  const admin = await mysql.createConnection(server);
  await admin.query(`DROP DATABASE IF EXISTS ${mysql.escapeId(database)}`);
  await admin.query(`CREATE DATABASE ${mysql.escapeId(database)} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  await admin.end();
  const db = await openDatabase({ url, poolSize: 1 });
  await migrate(db.write);
  await db.close();
}

export function users(): IngestUser[] {
  const next = mulberry32(11);
  return Array.from({ length: 20_000 }, (_, i) => {
    // Zipf-like affiliate sizes: the first of 100 affiliates has the most users.
    const affiliate = Math.min(99, Math.floor(100 * next() ** 2.2));
    return {
      $typeName: "topwagers.v1.IngestUser",
      id: `bench-u${i}`,
      affiliateId: `bench-aff-${affiliate}`,
      username: `player_${i}`,
      avatar: i % 3 === 0 ? "" : `https://avatars.example.com/${i}.png`,
    };
  });
}

export function wagerBatches(count: number, batch: number, runTag: string, weights = true): IngestWager[][] {
  const next = mulberry32(29);
  // A stream of its own, so the amounts, users and times are the same with or without weights.
  const nextWeight = mulberry32(31);
  const now = Math.floor(Date.now() / 1000);
  const batches: IngestWager[][] = [];
  for (let start = 0; start < count; start += batch) {
    const wagers: IngestWager[] = [];
    for (let n = start; n < Math.min(count, start + batch); n++) {
      // Heavier players wager more often; amounts from integers (log-normal around $3).
      const user = Math.floor(20_000 * next() ** 3);
      const units = logNormalUnits(next);
      const whole = Math.floor(units / 1e8);
      wagers.push({
        $typeName: "topwagers.v1.IngestWager",
        // Increasing ids, like the platform's own numbering.
        id: `bench-${runTag}-w${String(n).padStart(10, "0")}`,
        userId: `bench-u${user}`,
        amount: `${whole}.${String(units - whole * 1e8).padStart(8, "0")}`,
        // A live feed replayed: two days of wagers in time order, each a few seconds out of order.
        placedAt: BigInt(now - 2 * 86_400 + Math.floor((n / count) * 2 * 86_400) - Math.floor(next() * 5)),
        ...(weights ? { weightBps: weightOf(nextWeight()) } : {}),
      });
    }
    batches.push(wagers);
  }
  return batches;
}

/** 70 % count fully, 20 % half, 10 % a tenth. */
function weightOf(u: number): number {
  return u < 0.7 ? 10_000 : u < 0.9 ? 5000 : 1000;
}

export function client(
  protocol: Protocol,
  baseUrl: string,
): { client: Client<typeof WagerIngestService>; close(): void } {
  let transport: Transport;
  let session: Http2SessionManager | undefined;
  if (protocol === "grpc") {
    session = new Http2SessionManager(baseUrl);
    transport = createGrpcTransport({ baseUrl, sessionManager: session });
  } else if (protocol === "grpc-web") {
    transport = createGrpcWebTransport({ baseUrl, httpVersion: "1.1" });
  } else {
    transport = createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true });
  }
  return { client: createClient(WagerIngestService, transport), close: () => session?.abort() };
}

interface RunResult {
  readonly wagers: number;
  readonly seconds: number;
  readonly latencies: number[];
  readonly recorded: number;
}

/**
 * Sends `batches` from `clients` concurrent clients, each sending the next batch as soon as its
 * previous answer arrives; `call` sends one batch and returns how many items it changed.
 */
export async function sendConcurrently<T>(
  protocol: Protocol,
  baseUrl: string,
  batches: readonly T[],
  clients: number,
  call: (client: Client<typeof WagerIngestService>, batch: T, headers: Record<string, string>) => Promise<number>,
): Promise<{ seconds: number; latencies: number[]; changed: number }> {
  const headers = { authorization: `Bearer ${TOKEN}` };
  const pool = Array.from({ length: clients }, () => client(protocol, baseUrl));
  const latencies: number[] = [];
  let changed = 0;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    pool.map(async ({ client: c }) => {
      for (let i = next++; i < batches.length; i = next++) {
        const t = performance.now();
        // Await first: `changed += await …` would read `changed` before the await and lose other clients' counts.
        const n = await call(c, batches[i] as T, headers);
        latencies.push(performance.now() - t);
        changed += n;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  for (const c of pool) c.close();
  latencies.sort((a, b) => a - b);
  return { seconds, latencies, changed };
}

export async function run(
  protocol: Protocol,
  baseUrl: string,
  batches: IngestWager[][],
  clients: number,
): Promise<RunResult> {
  const result = await sendConcurrently(
    protocol,
    baseUrl,
    batches,
    clients,
    async (c, wagers, headers) => (await c.recordWagers({ wagers }, { headers })).recorded,
  );
  return {
    wagers: batches.reduce((n, b) => n + b.length, 0),
    seconds: result.seconds,
    latencies: result.latencies,
    recorded: result.changed,
  };
}

export async function runIngestBench(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      wagers: { type: "string", default: "400000" },
      clients: { type: "string", default: "2" },
      batch: { type: "string", default: "1000" },
      protocol: { type: "string", default: "grpc" },
      "no-weights": { type: "boolean", default: false },
    },
  });
  const weights = values["no-weights"] !== true;
  const count = Number(values.wagers);
  const clients = Number(values.clients);
  const batchSize = Number(values.batch);
  const protocol = values.protocol as Protocol;
  if (!["grpc", "connect", "grpc-web"].includes(protocol))
    throw new Error("--protocol must be grpc, connect or grpc-web");
  const databaseUrl = process.env.BENCH_INGEST_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/topwagers_bench_ingest";
  await recreateDatabase(databaseUrl);
  const server = await startServerProcess(databaseUrl, { INGEST_TOKEN: TOKEN });
  const baseUrl = server.internalUrl;
  try {
    const headers = { authorization: `Bearer ${TOKEN}` };
    const setup = client(protocol, baseUrl);
    const profiles = users();
    const usersStarted = performance.now();
    for (let i = 0; i < profiles.length; i += 1000) {
      await setup.client.upsertUsers({ users: profiles.slice(i, i + 1000) }, { headers });
    }
    const usersSeconds = (performance.now() - usersStarted) / 1000;
    setup.close();
    // Warm-up: JIT, pools, prepared paths; its wagers stay in the tables like earlier traffic would.
    await run(protocol, baseUrl, wagerBatches(20_000, batchSize, "warm", weights), clients);
    const result = await run(protocol, baseUrl, wagerBatches(count, batchSize, "run", weights), clients);
    const db = await openDatabase({ url: databaseUrl, poolSize: 1 });
    const check = await verifyRollups(db.read);
    await db.close();
    const rate = result.wagers / result.seconds;
    process.stdout.write(
      [
        "",
        `command: npm run bench -- ingest --wagers ${count} --clients ${clients} --batch ${batchSize} --protocol ${protocol}${weights ? "" : " --no-weights"}`,
        `machine: ${await machineDescription(databaseUrl)}`,
        `load: ${clients} concurrent ${protocol} clients in the bench process, each sending the next batch of ${batchSize} as soon as its previous answer arrives; server and MariaDB on the same cores`,
        "",
        table(
          ["what", "count", "seconds", "per second", "batch p50 ms", "batch p95 ms", "batch p99 ms"],
          [
            [
              "UpsertUsers (1000 per call, 1 client)",
              profiles.length,
              fmt(usersSeconds, 1),
              fmt(profiles.length / usersSeconds, 0),
              "",
              "",
              "",
            ],
            [
              `RecordWagers (${batchSize} per call, ${clients} clients, ${weights ? "weights 70/20/10 %" : "no weights"})`,
              result.wagers,
              fmt(result.seconds, 1),
              fmt(rate, 0),
              fmt(percentile(result.latencies, 50), 1),
              fmt(percentile(result.latencies, 95), 1),
              fmt(percentile(result.latencies, 99), 1),
            ],
          ],
        ),
        "",
        `recorded ${result.recorded} of ${result.wagers} (duplicates ${result.wagers - result.recorded}); ` +
          `verify: ${check.mismatchCount === 0 ? "every rollup equals the raw wagers" : `${check.mismatchCount} MISMATCHES`} ` +
          `(${check.wagers} wagers, ${check.rows.hourly} hourly, ${check.rows.daily} daily, ${check.rows.halfmonthly} half-month, ${check.rows.monthly} monthly rows)`,
        `RecordWagers throughput: ${fmt(rate, 0)} wagers/s (target >= 40,000).`,
        "",
      ].join("\n"),
    );
    if (check.mismatchCount > 0 || result.recorded !== result.wagers) process.exitCode = 1;
  } finally {
    await server.stop();
  }
}
