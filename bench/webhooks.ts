/**
 * Webhook delivery at volume.
 *
 *   npm run bench -- webhooks [--events 10000] [--endpoints 100] [--instances 2] [--rate 1000] [--poll-ms 200] [--batch 10] [--preload] [--kill]
 *
 * 100 affiliates with one endpoint each on a local receiver (127.0.0.1, answering 200 at once);
 * `--events` race.finalized-sized events are committed through the outbox (enqueueWebhookEvent in
 * transactions of `--batch`, default 10) at `--rate` per second, spread over the affiliates; `--instances` server
 * processes deliver them. Reports deliveries per second (first commit to last arrival), the time from
 * each event's commit to its arrival (p50, p99, max), and how many arrived twice or never. With
 * `--preload`, every event is committed before the instances start (delivery alone; its latency then
 * counts from the instances' start, not the commit). With `--kill`, one instance is SIGKILLed when half the events are committed: its claimed deliveries are
 * sent by the others after their lease (2 × WEBHOOK_TIMEOUT_MS + 5 s), and none may be lost.
 */
import { randomBytes } from "node:crypto";
import http from "node:http";
import { parseArgs } from "node:util";
import { openDatabase } from "../src/platform/database/database.js";
import { SecretBox } from "../src/platform/database/secret-box.js";
import { inTransaction } from "../src/platform/database/transactions.js";
import { newWebhookSecret } from "../src/webhooks/core/signature.js";
import { enqueueWebhookEvent } from "../src/webhooks/sql/webhook-outbox.js";
import { MariadbWebhookStore } from "../src/webhooks/sql/webhooks.js";
import { recreateDatabase } from "./ingest.js";
import { fmt, machineDescription, percentile, type ServerInstance, startServerProcess, table } from "./support.js";

/** A finalized race's data with 10 paid ranks: about 2 KB of body, like the real event. */
function raceData(seq: number): Record<string, unknown> {
  return {
    seq,
    id: `race_${seq}`,
    slug: "monthly",
    title: "$10,000 monthly race",
    state: "final",
    digest: randomBytes(32).toString("hex"),
    entries: Array.from({ length: 10 }, (_, i) => ({
      rank: i + 1,
      userId: `user-${i}`,
      username: `player_${i}`,
      totalWageredDecimal: `${(10 - i) * 1234}.5`,
      prize: `${(10 - i) * 100}.00`,
    })),
  };
}

export async function runWebhooksBench(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      events: { type: "string", default: "10000" },
      endpoints: { type: "string", default: "100" },
      instances: { type: "string", default: "2" },
      rate: { type: "string", default: "1000" },
      "poll-ms": { type: "string", default: "200" },
      batch: { type: "string", default: "10" },
      kill: { type: "boolean", default: false },
      preload: { type: "boolean", default: false },
    },
  });
  const events = Number(values.events);
  const endpoints = Number(values.endpoints);
  const instances = Number(values.instances);
  const rate = Number(values.rate);
  const databaseUrl = process.env.BENCH_WEBHOOKS_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/topwagers_bench_webhooks";
  await recreateDatabase(databaseUrl);

  const committedAt = new Float64Array(events);
  const arrivals = new Uint32Array(events);
  const latencies: number[] = [];
  let lastArrival = 0;
  let allArrived: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    allArrived = resolve;
  });
  let distinct = 0;
  const receiver = http.createServer({ keepAlive: true }, (request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const now = performance.timeOrigin + performance.now();
      const seq = (JSON.parse(Buffer.concat(chunks).toString("utf8")) as { data: { seq: number } }).data.seq;
      arrivals[seq] = (arrivals[seq] ?? 0) + 1;
      if (arrivals[seq] === 1) {
        latencies.push(now - (committedAt[seq] ?? now));
        distinct += 1;
        lastArrival = now;
        if (distinct === events) allArrived();
      }
      response.writeHead(200, { "content-length": "2" });
      response.end("ok");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const port = (receiver.address() as { port: number }).port;

  const db = await openDatabase({ url: databaseUrl, poolSize: 4 });
  const store = new MariadbWebhookStore(db.write, new SecretBox(undefined));
  const affiliates: number[] = [];
  for (let i = 0; i < endpoints; i++) {
    const endpoint = await store.insertEndpoint({
      id: `ep_bench_${i}`,
      affiliateExternalId: `bench-aff-${i}`,
      url: `http://127.0.0.1:${port}/hook/${i}`,
      description: "",
      eventTypes: ["race.finalized"],
      secret: newWebhookSecret(),
    });
    const [rows] = await db.read.query("SELECT id FROM affiliates WHERE external_id = ?", [
      endpoint.affiliateExternalId,
    ]);
    affiliates.push(Number((rows as { id: number }[])[0]?.id));
  }

  const env = {
    WEBHOOK_ALLOW_PRIVATE_URLS: "true",
    WEBHOOK_POLL_MS: String(values["poll-ms"]),
    WEBHOOK_TIMEOUT_MS: "2000",
    LOG_LEVEL: "info",
    // A setting of the run passes through (DATABASE_POOL_SIZE, WEBHOOK_TIMEOUT_MS, …).
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => /^(WEBHOOK_|DATABASE_POOL_SIZE$)/.test(name))),
  };
  const servers: ServerInstance[] = [];
  const startServers = async () => {
    for (let i = 0; i < instances; i++) servers.push(await startServerProcess(databaseUrl, env));
  };
  // --preload: every event is committed before any instance runs, so the delivery rate is measured alone.
  if (!values.preload) await startServers();

  let started = performance.timeOrigin + performance.now();
  const batch = Number(values.batch);
  let killedAt: number | undefined;
  for (let seq = 0; seq < events; seq += batch) {
    const due = started + (seq / rate) * 1000;
    const wait = due - (performance.timeOrigin + performance.now());
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const last = Math.min(events, seq + batch);
    await inTransaction(db.write, async (connection) => {
      for (let n = seq; n < last; n++) {
        await enqueueWebhookEvent(connection, {
          affiliateId: affiliates[n % endpoints] as number,
          type: "race.finalized",
          data: raceData(n),
          at: Math.floor(Date.now() / 1000),
        });
      }
    });
    const committed = performance.timeOrigin + performance.now();
    for (let n = seq; n < last; n++) committedAt[n] = committed;
    if (values.kill && killedAt === undefined && last >= events / 2 && servers.length > 1) {
      const victim = servers.shift() as ServerInstance;
      victim.child.kill("SIGKILL");
      killedAt = committed;
    }
  }
  const allCommitted = performance.timeOrigin + performance.now();
  const commitSeconds = (allCommitted - started) / 1000;
  if (values.preload) {
    started = performance.timeOrigin + performance.now();
    committedAt.fill(started);
    await startServers();
  }
  const timeout = setTimeout(() => allArrived(), 120_000);
  await done;
  clearTimeout(timeout);
  // Stragglers sent twice arrive a little later; give them a moment before counting.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const seconds = (lastArrival - started) / 1000;
  latencies.sort((a, b) => a - b);
  let twice = 0;
  let lost = 0;
  for (const count of arrivals) {
    if (count === 0) lost += 1;
    if (count > 1) twice += 1;
  }
  await Promise.all(servers.map((s) => s.stop()));
  await db.close();
  receiver.closeAllConnections();
  receiver.close();

  process.stdout.write(`${await machineDescription(databaseUrl)}\n`);
  process.stdout.write(
    `npm run bench -- webhooks --events ${events} --endpoints ${endpoints} --instances ${instances} --rate ${rate} --poll-ms ${values["poll-ms"]} --batch ${batch}${values.kill ? " --kill" : ""}${values.preload ? " --preload" : ""}\n\n`,
  );
  process.stdout.write(
    `${table(
      [
        "events",
        "instances",
        "committed in (s)",
        "delivered in (s)",
        "deliveries/s",
        "p50 commit→received (ms)",
        "p99 (ms)",
        "max (ms)",
        "sent twice",
        "lost",
      ],
      [
        [
          events,
          values.kill
            ? `${instances}, one SIGKILLed at ${fmt(((killedAt ?? started) - started) / 1000, 1)} s`
            : instances,
          fmt(commitSeconds, 1),
          fmt(seconds, 1),
          fmt(distinct / seconds, 0),
          fmt(percentile(latencies, 50), 0),
          fmt(percentile(latencies, 99), 0),
          fmt(latencies.at(-1) ?? Number.NaN, 0),
          twice,
          lost,
        ],
      ],
    )}\n`,
  );
}
