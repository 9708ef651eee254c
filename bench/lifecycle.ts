/**
 * Wager lifecycle scenarios.
 *
 *   npm run bench -- voids [--wagers 200000] [--clients 2]
 *     VoidWagers ids/s against RecordWagers wagers/s in the same run, on the same server and data
 *     (batches of 1000, gRPC, concurrent clients); rollups verified afterwards.
 *
 *   npm run bench -- visibility [--samples 100] [--redis redis://127.0.0.1:6379]
 *     Time from a committed RecordWagers on instance A to the first answer on instance B that
 *     includes it (REST, B polled every 5 ms with a warm 60 s cache), without and with Redis
 *     wake-ups: p50/p95/p99/max.
 */
import { parseArgs } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { WagerIngestService } from "../gen/topwagers/v1/wager_ingest_pb.js";
import { verifyRollups } from "../src/ingest/sql/verify.js";
import { generateApiKey } from "../src/keys/core/api-key-secret.js";
import { insertApiKey } from "../src/keys/sql/api-keys.js";
import { openDatabase } from "../src/platform/database/database.js";
import { client, recreateDatabase, run, sendConcurrently, TOKEN, users, wagerBatches } from "./ingest.js";
import { fmt, machineDescription, percentile, startServerProcess, table } from "./support.js";

export async function runVoidsBench(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { wagers: { type: "string", default: "200000" }, clients: { type: "string", default: "2" } },
  });
  const count = Number(values.wagers);
  const clients = Number(values.clients);
  const databaseUrl = process.env.BENCH_INGEST_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/topwagers_bench_voids";
  await recreateDatabase(databaseUrl);
  const server = await startServerProcess(databaseUrl, { INGEST_TOKEN: TOKEN });
  try {
    const headers = { authorization: `Bearer ${TOKEN}` };
    const setup = client("grpc", server.internalUrl);
    const profiles = users();
    for (let i = 0; i < profiles.length; i += 1000) {
      await setup.client.upsertUsers({ users: profiles.slice(i, i + 1000) }, { headers });
    }
    setup.close();
    await run("grpc", server.internalUrl, wagerBatches(20_000, 1000, "warm"), clients);
    const batches = wagerBatches(count, 1000, "run");
    const recorded = await run("grpc", server.internalUrl, batches, clients);
    // Void every wager of the run, in batches of 1000 shuffled across the two days.
    const idBatches = batches.map((b) => b.map((w) => w.id));
    for (let i = idBatches.length - 1; i > 0; i--) {
      const j = (i * 7919) % (i + 1);
      [idBatches[i], idBatches[j]] = [idBatches[j] as string[], idBatches[i] as string[]];
    }
    const voids = await sendConcurrently(
      "grpc",
      server.internalUrl,
      idBatches,
      clients,
      async (c, wagerIds, headers) => (await c.voidWagers({ wagerIds }, { headers })).voided,
    );
    const { seconds, latencies, changed: voided } = voids;
    const db = await openDatabase({ url: databaseUrl, poolSize: 1 });
    const check = await verifyRollups(db.read);
    await db.close();
    process.stdout.write(
      [
        "",
        `command: npm run bench -- voids --wagers ${count} --clients ${clients}`,
        `machine: ${await machineDescription(databaseUrl)}`,
        `load: ${clients} concurrent gRPC clients, batches of 1000, server and MariaDB on the same cores`,
        "",
        table(
          ["what", "count", "seconds", "per second", "batch p50 ms", "batch p95 ms", "batch p99 ms"],
          [
            [
              "RecordWagers (baseline)",
              recorded.wagers,
              fmt(recorded.seconds, 1),
              fmt(recorded.wagers / recorded.seconds, 0),
              fmt(percentile(recorded.latencies, 50), 1),
              fmt(percentile(recorded.latencies, 95), 1),
              fmt(percentile(recorded.latencies, 99), 1),
            ],
            [
              "VoidWagers (the same wagers)",
              voided,
              fmt(seconds, 1),
              fmt(voided / seconds, 0),
              fmt(percentile(latencies, 50), 1),
              fmt(percentile(latencies, 95), 1),
              fmt(percentile(latencies, 99), 1),
            ],
          ],
        ),
        "",
        `void rate / record rate: ${fmt(voided / seconds / (recorded.wagers / recorded.seconds), 2)}; ` +
          `verify: ${check.mismatchCount === 0 ? "every rollup equals the counted raw wagers" : `${check.mismatchCount} MISMATCHES`} (${check.wagers} wagers still counted)`,
        "",
      ].join("\n"),
    );
    if (check.mismatchCount > 0 || voided !== count) process.exitCode = 1;
  } finally {
    await server.stop();
  }
}

export async function runVisibilityBench(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      samples: { type: "string", default: "100" },
      redis: { type: "string", default: process.env.REDIS_URL ?? "redis://127.0.0.1:6379" },
    },
  });
  const samples = Number(values.samples);
  const databaseUrl = process.env.BENCH_INGEST_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/topwagers_bench_visibility";
  const rows: (string | number)[][] = [];
  for (const [mode, env] of [
    ["without Redis (polling every 200 ms)", {}],
    ["with Redis wake-ups", { REDIS_URL: values.redis }],
  ] as const) {
    await recreateDatabase(databaseUrl);
    const db = await openDatabase({ url: databaseUrl, poolSize: 1 });
    const key = generateApiKey();
    await insertApiKey(db.write, {
      id: key.id,
      hash: key.hash,
      affiliateExternalId: "vis-aff",
      label: "bench",
      rateLimit: null,
    });
    const secret = key.secret;
    await db.close();
    const a = await startServerProcess(databaseUrl, { INGEST_TOKEN: TOKEN, CACHE_TTL_MS: "60000", ...env });
    const b = await startServerProcess(databaseUrl, { INGEST_TOKEN: TOKEN, CACHE_TTL_MS: "60000", ...env });
    const session = new Http2SessionManager(a.internalUrl);
    try {
      const ingest = createClient(
        WagerIngestService,
        createGrpcTransport({ baseUrl: a.internalUrl, sessionManager: session }),
      );
      const headers = { authorization: `Bearer ${TOKEN}` };
      await ingest.upsertUsers(
        { users: [{ id: "vis-u", affiliateId: "vis-aff", username: "watcher", avatar: "" }] },
        { headers },
      );
      const now = Math.floor(Date.now() / 1000);
      const period = { startTimestamp: now - 86_400, endTimestamp: now + 86_400, numUsers: 1 };
      const ask = async (): Promise<string> => {
        const response = await fetch(`${b.publicUrl}/top-affiliate-wagers-by-period`, {
          method: "POST",
          headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
          body: JSON.stringify(period),
        });
        return response.text();
      };
      const times: number[] = [];
      for (let i = 0; i < samples; i++) {
        const before = await ask(); // warm: B answers from its cache from here on
        await ask();
        await ingest.recordWagers(
          { wagers: [{ id: `vis-${i}`, userId: "vis-u", amount: "1", placedAt: BigInt(now - 60) }] },
          { headers },
        );
        const committed = performance.now();
        for (;;) {
          if ((await ask()) !== before) break;
          if (performance.now() - committed > 5000) throw new Error("a change was not visible within 5 s");
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
        times.push(performance.now() - committed);
        // Spread the samples over the poll period.
        await new Promise((resolve) => setTimeout(resolve, 37 + ((i * 53) % 150)));
      }
      times.sort((x, y) => x - y);
      rows.push([
        mode,
        samples,
        fmt(percentile(times, 50), 0),
        fmt(percentile(times, 95), 0),
        fmt(percentile(times, 99), 0),
        fmt(times.at(-1) ?? Number.NaN, 0),
      ]);
    } finally {
      session.abort();
      await Promise.all([a.stop(), b.stop()]);
    }
  }
  process.stdout.write(
    [
      "",
      `command: npm run bench -- visibility --samples ${samples}`,
      `machine: ${await machineDescription(databaseUrl)}`,
      "what: RecordWagers through instance A commits; instance B (60 s result cache, warm) is asked over REST every 5 ms until its answer changes",
      "",
      table(["mode", "samples", "p50 ms", "p95 ms", "p99 ms", "max ms"], rows),
      "",
    ].join("\n"),
  );
}
