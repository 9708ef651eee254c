/**
 * Results log scenario: what the log costs at scale, on a database of its own (topwagers_bench_log, recreated).
 *
 *   npm run bench -- results-log [--entries 100000] [--writers 16] [--instances 2] [--proofs 200]
 *
 * `writers` loops over `instances` pools append `entries` entries, each in its own transaction as a freeze appends
 * its result (the head row's lock held to the commit), while each instance runs the log's sequencer as the server
 * does; then: appends per second and their latency, how long each entry waited for a checkpoint, the bytes the
 * log's tables hold per entry (InnoDB, after ANALYZE) beside the entry's own bytes, an inclusion proof's and a
 * tile's read at that size, and `log verify`'s whole read.
 */
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import type mysql from "mysql2/promise";
import { type Database, openDatabase } from "../src/platform/database/database.js";
import { SecretBox } from "../src/platform/database/secret-box.js";
import { inTransaction } from "../src/platform/database/transactions.js";
import type { LoggableRace, LoggedEvent } from "../src/ports/results-log.js";
import { auditLog } from "../src/results-log/core/log-audit.js";
import { LogReader } from "../src/results-log/core/log-reader.js";
import { appendToLog } from "../src/results-log/sql/log-append.js";
import { mariadbLog } from "../src/results-log/sql/log-store.js";
import { recreateDatabase } from "./ingest.js";
import { logTableBytes, watchLog } from "./log-watch.js";
import { databaseUrl } from "./query.js";
import { fmt, machineDescription, percentile, table } from "./support.js";

/** Entry `i` as a freeze of a signed result would log it (ids as long as real ones). */
function eventOf(i: number): LoggedEvent {
  const hex = (n: number) => n.toString(16).padStart(8, "0").repeat(8);
  return {
    kind: "final",
    affiliateId: `affiliate-${String(i % 2000).padStart(4, "0")}`,
    raceId: `race_${String(i).padStart(20, "0")}`,
    at: 1_800_000_000 + i,
    digest: hex(i),
    sha256: hex(i + 1),
  };
}

async function appendAll(dbs: readonly Database[], entries: number, writers: number): Promise<number[]> {
  const latencies: number[] = [];
  let next = 0;
  const writer = async (w: number) => {
    const db = dbs[w % dbs.length] as Database;
    for (let i = next++; i < entries; i = next++) {
      const started = performance.now();
      await inTransaction(db.write, (connection) => appendToLog(connection, eventOf(i)));
      latencies.push(performance.now() - started);
    }
  };
  await Promise.all(Array.from({ length: writers }, (_, w) => writer(w)));
  return latencies.sort((a, b) => a - b);
}

async function timedSamples(count: number, call: (i: number) => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    await call(i);
    out.push(performance.now() - started);
  }
  return out.sort((a, b) => a - b);
}

export async function runResultsLogBench(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      entries: { type: "string", default: "100000" },
      writers: { type: "string", default: "16" },
      instances: { type: "string", default: "2" },
      proofs: { type: "string", default: "200" },
    },
  });
  const [entries, writers, instances, proofs] = [values.entries, values.writers, values.instances, values.proofs].map(
    Number,
  ) as [number, number, number, number];
  const url = databaseUrl(0).replace(/topwagers_bench_0$/, "topwagers_bench_log");
  await recreateDatabase(url);
  const machine = await machineDescription(url);
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(", ");
  const poolSize = Math.max(2, Math.ceil(writers / instances) + 1);
  const dbs = await Promise.all(
    Array.from({ length: instances }, () => openDatabase({ url, poolSize, queryTimeoutMs: 600_000 })),
  );
  const first = dbs[0] as Database;
  try {
    const watch = await watchLog(dbs);
    const started = performance.now();
    const latencies = await appendAll(dbs, entries, writers);
    const appendSeconds = (performance.now() - started) / 1000;
    const logged = await watch.stop();
    const bytes = await logTableBytes(first);
    const [sizes] = await first.read.query<mysql.RowDataPacket[]>(
      "SELECT AVG(LENGTH(entry)) AS entry, COUNT(*) AS n FROM log_entries",
    );
    const store = mariadbLog(first.read, new SecretBox(undefined));
    const reader = new LogReader(store);
    const proofMs = await timedSamples(proofs, (i) =>
      reader.inclusionOf(eventOf(Math.floor((i * 7919) % entries)).raceId),
    );
    const tileMs = await timedSamples(50, (i) =>
      reader.tile({ level: 0, index: i % Math.floor(entries / 256), width: 256 }),
    );
    const auditStarted = performance.now();
    const races = async (after: number, limit: number): Promise<LoggableRace[]> =>
      Array.from({ length: Math.max(0, Math.min(limit, entries - after)) }, (_, k) => ({
        key: after + k + 1,
        event: eventOf(after + k),
      }));
    const audit = await auditLog(store, races);
    const auditSeconds = (performance.now() - auditStarted) / 1000;
    const command = `npm run bench -- results-log --entries ${entries} --writers ${writers} --instances ${instances} --proofs ${proofs}`;
    process.stdout.write(
      [
        "",
        `command: ${command}`,
        `machine: ${machine}; load average before: ${load}`,
        "",
        table(
          ["entries", "writers", "instances", "appends/s", "append p50 ms", "append p99 ms", "checkpoints"],
          [
            [
              Number(sizes[0]?.n),
              writers,
              instances,
              fmt(entries / appendSeconds, 0),
              fmt(percentile(latencies, 50), 1),
              fmt(percentile(latencies, 99), 1),
              logged.checkpoints,
            ],
          ],
        ),
        `from an entry's commit to the first checkpoint holding it: p50 ${fmt(logged.p50, 0)} ms, p99 ${fmt(logged.p99, 0)} ms, max ${fmt(logged.max, 0)} ms`,
        `the log's tables: ${fmt(bytes / 2 ** 20, 1)} MiB, ${fmt(bytes / entries, 0)} bytes per entry (an entry itself: ${fmt(Number(sizes[0]?.entry), 0)} bytes)`,
        `an inclusion proof at ${entries} entries (entry, first checkpoint holding it, proof from the stored hashes): p50 ${fmt(percentile(proofMs, 50), 2)} ms, p99 ${fmt(percentile(proofMs, 99), 2)} ms`,
        `a full level-0 tile: p50 ${fmt(percentile(tileMs, 50), 2)} ms (the first read of each; later reads are memory)`,
        `log verify (the whole log read and checked, ${audit.problemCount} problems): ${fmt(auditSeconds, 1)} s`,
        "",
      ].join("\n"),
    );
  } finally {
    for (const db of dbs) await db.close();
  }
}
