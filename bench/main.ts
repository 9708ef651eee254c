/**
 * `npm run bench -- <scenario> [options]`: benchmarks, not tests. Each prints a
 * table with the command and the machine; results are recorded in
 * docs/benchmarks.md. Scenarios compare against a baseline in the same run,
 * because on these shared 2-core machines the ratio is what carries over.
 */
import { FLEET_USAGE, runFleetBench } from "./fleet.js";
import { runHttpBench } from "./http.js";
import { runIncrementalBench } from "./incremental.js";
import { runIngestBench } from "./ingest.js";
import { runInstructionProfile } from "./instruction-profile.js";
import { runKeysBench } from "./keys.js";
import { runVisibilityBench, runVoidsBench } from "./lifecycle.js";
import { runLiveBench } from "./live.js";
import { runLiveFramingBench } from "./live-framing.js";
import { runProfileSummary } from "./profile.js";
import { runProtocolsBench } from "./protocols.js";
import { runQueryBench } from "./query.js";
import { runQueryLayersBench } from "./query-layers.js";
import { runRacesBench } from "./races.js";
import { runResultsLogBench } from "./results-log.js";
import { runSignedBoardsBench } from "./signed-boards.js";
import { runStorageBench } from "./storage.js";
import { runPartitionsBench } from "./storage-partitions.js";
import { runVerifyPageBench } from "./verify-page.js";
import { runWebhooksBench } from "./webhooks.js";

const scenarios: Record<string, { run: (args: string[]) => Promise<void>; usage: string }> = {
  query: {
    run: runQueryBench,
    usage:
      "query [--wagers 50000000] [--compare-wagers 5000000] [--runs 20] [--naive-runs 5]   cold read latency vs naive GROUP BY",
  },
  "query-layers": {
    run: runQueryLayersBench,
    usage:
      "query-layers [--wagers 5000000] [--months 12] [--calls 5000] [--rounds 3]   a small affiliate's board: naive vs each layer of the service",
  },
  ingest: {
    run: runIngestBench,
    usage:
      "ingest [--wagers 400000] [--clients 2] [--batch 1000] [--protocol grpc|connect|grpc-web]   RecordWagers wagers/s",
  },
  voids: {
    run: runVoidsBench,
    usage: "voids [--wagers 200000] [--clients 2]   VoidWagers ids/s vs RecordWagers wagers/s in the same run",
  },
  visibility: {
    run: runVisibilityBench,
    usage:
      "visibility [--samples 100] [--redis <url>]   commit on instance A to visible on instance B, without and with Redis",
  },
  protocols: {
    run: runProtocolsBench,
    usage:
      "protocols [--duration 8] [--rounds 2] [--connections 16] [--streams 8] [--profile DIR] [--only PATH] [--no-pin] [--instructions] [--requests 2000] [--warmup 40000] [--instruction-rounds 3] [--instruction-profile DIR] [--server MAIN_JS]   every protocol vs bare baselines (wrk, h2load); instructions per request under callgrind",
  },
  profile: {
    run: runProfileSummary,
    usage:
      "profile <file.cpuprofile> [--top 25] [--own dist/src/]   self time by function, and our functions inclusive, of a node --cpu-prof profile",
  },
  live: {
    run: runLiveBench,
    usage:
      "live [--viewers 10000] [--boards 100] [--wagers 50] [--seconds 30] [--mix 40,30,30] [--num-users 10] [--modes both|polling|redis]   push latency, messages/s, RSS per viewer, CPU",
  },
  "live-framing": {
    run: runLiveFramingBench,
    usage:
      "live-framing [--viewers 2000,5000] [--entries 10,100] [--messages 20]   server CPU and RSS per stream: connect-es streaming vs the watch procedure's own framing",
  },
  keys: {
    run: runKeysBench,
    usage:
      "keys [--keys 100000] [--lookups 1000000]   the in-memory key set: load time, heap per key, lookup vs SHA-256 alone",
  },
  "instruction-profile": {
    run: runInstructionProfile,
    usage:
      "instruction-profile <callgrind dump> [--map /tmp/perf-<pid>.map] [--requests N] [--top 30] [--match TEXT]   instructions by group and function (JavaScript named from node --perf-basic-prof)",
  },
  races: {
    run: runRacesBench,
    usage:
      "races [--wagers 50000000] [--races 1000] [--affiliates 100] [--instances 1] [--runs 50] [--tick-concurrency N] [--signing on|off]   1,000 races ending in one second (signed at the freeze unless --signing off): time until all frozen, board p99 during the freeze, race read vs board, sign and verify cost",
  },
  "results-log": {
    run: runResultsLogBench,
    usage:
      "results-log [--entries 100000] [--writers 16] [--instances 2] [--proofs 200]   the results log at scale: appends/s under concurrent freezes, the wait for a checkpoint, bytes per entry, a proof's and a tile's read, log verify",
  },
  "verify-page": {
    run: runVerifyPageBench,
    usage:
      "verify-page [--entries 1000000] [--index 500000] [--runs 30] [--chromium /usr/bin/chromium]   the verify page in Chromium: a result's inclusion proof and log check in a log of 1,000,000 entries",
  },
  webhooks: {
    run: runWebhooksBench,
    usage:
      "webhooks [--events 10000] [--endpoints 100] [--instances 2] [--rate 1000] [--poll-ms 200] [--batch 10] [--preload] [--kill]   deliveries/s and commit→received to a local receiver; --kill SIGKILLs an instance mid-run (0 lost)",
  },
  fleet: { run: runFleetBench, usage: FLEET_USAGE },
  incremental: {
    run: runIncrementalBench,
    usage:
      "incremental [--database-url URL] [--batches 10,100,1000] [--changes 20] [--rank-by wagered|weighted]   a big affiliate's month board per change: full vs incremental statements and load time",
  },
  storage: {
    run: runStorageBench,
    usage:
      "storage [--wagers 5000000] [--deliveries 100000] [--wager-days 90] [--hourly-days 30]   bytes per wager in every table before and after pruning wagers and hourly rows and after OPTIMIZE; the webhook history per delivery before and after retention",
  },
  partitions: {
    run: runPartitionsBench,
    usage:
      "partitions [--wagers 5000000] [--chunk 250000]   removing the oldest month of wagers: DELETE in batches vs DROP PARTITION on a copy partitioned by month, with a concurrent query; insert speed and size of each",
  },
  "signed-boards": {
    run: runSignedBoardsBench,
    usage:
      "signed-boards [--seconds 8] [--rounds 2] [--connections 32] [--streams 32] [--instructions N] [--warmup 20000]   REST and SSE throughput with every caller asking for signed boards vs unsigned (or REST instructions per call under callgrind)",
  },
  http: {
    run: runHttpBench,
    usage: "http [--seconds 10] [--connections 64]   REST warm-cache req/s vs a node:http baseline; Connect and gRPC",
  },
};

const usage = () =>
  `usage: npm run bench -- <scenario> [options]\n\n${Object.values(scenarios)
    .map((s) => `  ${s.usage}`)
    .join("\n")}\n`;

const [name, ...args] = process.argv.slice(2);
const scenario = name === undefined ? undefined : scenarios[name];
if (scenario === undefined) {
  process.stderr.write(name === undefined ? usage() : `unknown scenario "${name}"\n\n${usage()}`);
  process.exit(2);
}
scenario.run(args).then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(
      `bench ${name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
