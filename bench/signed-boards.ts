/**
 * Signed boards scenario (issue 36 item 3): REST and SSE throughput when every caller asks for a signed board,
 * against the same calls unsigned, in the same run and alternating rounds, on one server process with an active
 * signing key. A board version is signed once (topwagers_board_signatures_total is read at the end), so asking
 * for signatures should cost callers almost nothing.
 *
 * Each run also reads the server's CPU time (utime + stime of its process, /proc) and divides it by the calls it
 * answered: CPU per call does not depend on how much of the shared machine the server got in those seconds, so
 * its ratio (unsigned / signed: the share of unsigned throughput the server can give signed calls) is the steady
 * measure on a loaded machine, beside the raw throughput's ratio.
 *
 * `--instructions N` instead runs the server under callgrind (./instructions.ts) and counts the instructions of
 * N REST calls of each kind, `rounds` times alternating, after `warmup` uncounted calls of each: a count that
 * does not depend on what else runs on the machine.
 *
 *   npm run bench -- signed-boards [--seconds 8] [--rounds 2] [--connections 32] [--streams 32]
 *                                  [--instructions 2000] [--warmup 20000]
 *
 * REST: autocannon POSTs of one board (warm cache). SSE: a loop of `streams` concurrent viewers that each open
 * the board's stream, read its first event and close, again and again (opens per second).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:http";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { openDatabase } from "../src/platform/database/database.js";
import { SecretBox } from "../src/platform/database/secret-box.js";
import { makeSigningKey } from "../src/signing/core/keys.js";
import { mariadbSigningKeys } from "../src/signing/sql/signing-keys.js";
import { OCT_1, prepareDatabase } from "./http.js";
import { callgrindWrapper, countInstructions, UNDER_CALLGRIND } from "./instructions.js";
import { fmt, machineDescription, measuredServerEnv, startChild, table } from "./support.js";

interface Options {
  readonly seconds: number;
  readonly rounds: number;
  readonly connections: number;
  readonly streams: number;
}

const REQUEST = { startTimestamp: OCT_1, endTimestamp: OCT_1 + 15 * 86_400 - 1, numUsers: 10 };

async function activateKey(databaseUrl: string): Promise<void> {
  const db = await openDatabase({ url: databaseUrl, poolSize: 1 });
  try {
    const store = mariadbSigningKeys(db.write, new SecretBox(undefined));
    const key = await makeSigningKey();
    const now = Math.floor(Date.now() / 1000);
    await store.insert(key, now);
    await store.activate(key.kid, now);
  } finally {
    await db.close();
  }
}

/** One run's calls answered per second, and the server's CPU time per call (µs). */
interface Run {
  readonly perSecond: number;
  readonly cpuMicrosPerCall: number;
}

/** The process's CPU time (user + system) in ms, from /proc (clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // Fields 14 and 15 of stat (utime, stime) are the 12th and 13th after the command's closing parenthesis.
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Runs `load` (which answers how many calls it made) and reads the server's CPU time around it. */
async function measured(pid: number, seconds: number, load: () => Promise<number>): Promise<Run> {
  const cpuBefore = cpuMs(pid);
  const calls = await load();
  return { perSecond: calls / seconds, cpuMicrosPerCall: ((cpuMs(pid) - cpuBefore) * 1000) / calls };
}

async function restRun(url: string, key: string, body: string, options: Options): Promise<number> {
  const result = await autocannon({
    url,
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body,
    connections: options.connections,
    duration: options.seconds,
  });
  if (result.non2xx + result.errors > 0) throw new Error(`${result.non2xx + result.errors} REST calls failed`);
  return result.requests.total;
}

/** Opens the stream, reads up to its first board event, closes; resolves when the event came. */
function firstBoard(port: number, path: string, key: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, headers: { authorization: `Bearer ${key}` } }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`stream answered ${res.statusCode}`));
        return;
      }
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        text += chunk;
        if (text.includes("event: board") && text.includes("\n\n", text.indexOf("event: board"))) {
          resolve();
          req.destroy();
        }
      });
    });
    req.on("error", (error) => reject(error));
    req.end();
  });
}

async function sseRun(port: number, key: string, signed: boolean, options: Options): Promise<number> {
  const query = new URLSearchParams({
    startTimestamp: String(REQUEST.startTimestamp),
    endTimestamp: String(REQUEST.endTimestamp),
    numUsers: String(REQUEST.numUsers),
    ...(signed ? { signed: "true" } : {}),
  });
  const path = `/top-affiliate-wagers-by-period/stream?${query}`;
  let opened = 0;
  const until = performance.now() + options.seconds * 1000;
  await Promise.all(
    Array.from({ length: options.streams }, async () => {
      while (performance.now() < until) {
        await firstBoard(port, path, key);
        opened += 1;
      }
    }),
  );
  return opened;
}

async function signatureCount(metricsPort: number): Promise<string> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  return text.split("\n").find((line) => line.startsWith("topwagers_board_signatures_total ")) ?? "(absent)";
}

export async function runSignedBoardsBench(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      seconds: { type: "string", default: "8" },
      rounds: { type: "string", default: "2" },
      connections: { type: "string", default: "32" },
      streams: { type: "string", default: "32" },
      instructions: { type: "string" },
      warmup: { type: "string", default: "20000" },
    },
  });
  const options: Options = {
    seconds: Number(values.seconds),
    rounds: Number(values.rounds),
    connections: Number(values.connections),
    streams: Number(values.streams),
  };
  const databaseUrl = process.env.BENCH_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/topwagers_bench_signed";
  const key = await prepareDatabase(databaseUrl);
  await activateKey(databaseUrl);
  const distDir = new URL(".", import.meta.url).pathname;
  if (values.instructions !== undefined) {
    const counted = { requests: Number(values.instructions), warmup: Number(values.warmup) };
    process.stdout.write(await instructionsReport(distDir, databaseUrl, key, options, counted));
    return;
  }
  const metricsPort = 20_000 + (process.pid % 20_000);
  const service = await startChild(
    join(distDir, "../src/main.js"),
    {
      PORT: "0",
      HOST: "127.0.0.1",
      DATABASE_URL: databaseUrl,
      CACHE_TTL_MS: "600000",
      RATE_LIMIT_POINTS: "1000000000",
      STREAM_LIMIT_PER_ADDRESS: "100000",
      INTERNAL_PORT: "0",
      METRICS_PORT: String(metricsPort),
      ISSUER: "https://casino.example",
      LOG_LEVEL: "info",
    },
    { isListening: (line) => line.msg?.startsWith("topwagers listening") === true },
  );
  try {
    const rows = await measure(service.port, service.child.pid as number, key, options);
    const signatures = await signatureCount(metricsPort);
    process.stdout.write(report(rows, options, await machineDescription(databaseUrl), signatures));
  } finally {
    await service.stop();
  }
}

type Row = { readonly round: number; readonly what: "REST" | "SSE"; readonly plain: Run; readonly signed: Run };

async function measure(port: number, pid: number, key: string, options: Options): Promise<Row[]> {
  const url = `http://127.0.0.1:${port}/top-affiliate-wagers-by-period`;
  const plainBody = JSON.stringify(REQUEST);
  const signedBody = JSON.stringify({ ...REQUEST, signed: true });
  const warm = { ...options, seconds: 2 };
  // Warm up (JIT, pools, the cache, the first signature) before measuring.
  await restRun(url, key, plainBody, warm);
  await restRun(url, key, signedBody, warm);
  await sseRun(port, key, false, warm);
  await sseRun(port, key, true, warm);
  const rows: Row[] = [];
  for (let round = 1; round <= options.rounds; round++) {
    // Alternate which goes first, so a drift of the shared machine does not favour one side.
    const signedFirst = round % 2 === 0;
    const rest = await pair(signedFirst, (signed) =>
      measured(pid, options.seconds, () => restRun(url, key, signed ? signedBody : plainBody, options)),
    );
    rows.push({ round, what: "REST", ...rest });
    const sse = await pair(signedFirst, (signed) =>
      measured(pid, options.seconds, () => sseRun(port, key, signed, options)),
    );
    rows.push({ round, what: "SSE", ...sse });
  }
  return rows;
}

/** One unsigned and one signed run back to back, in the order given. */
async function pair(
  signedFirst: boolean,
  run: (signed: boolean) => Promise<Run>,
): Promise<{ plain: Run; signed: Run }> {
  if (signedFirst) {
    const signed = await run(true);
    return { signed, plain: await run(false) };
  }
  const plain = await run(false);
  return { plain, signed: await run(true) };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? Number.NaN) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

function report(rows: readonly Row[], options: Options, machine: string, signatures: string): string {
  const of = (what: Row["what"]) => rows.filter((row) => row.what === what);
  // Throughput: the sum over rounds of each side (each round's two runs are back to back), and the median of the
  // rounds' ratios. CPU: unsigned CPU per call over signed, the median of the rounds.
  const summed = (what: Row["what"]) =>
    of(what).reduce((sum, row) => sum + row.signed.perSecond, 0) /
    of(what).reduce((sum, row) => sum + row.plain.perSecond, 0);
  const throughput = (what: Row["what"]) => median(of(what).map((row) => row.signed.perSecond / row.plain.perSecond));
  const cpu = (what: Row["what"]) =>
    median(of(what).map((row) => row.plain.cpuMicrosPerCall / row.signed.cpuMicrosPerCall));
  const pct = (ratio: number) => `${fmt(100 * ratio, 1)}%`;
  return [
    "",
    `command: npm run bench -- signed-boards --seconds ${options.seconds} --rounds ${options.rounds} --connections ${options.connections} --streams ${options.streams}`,
    `machine: ${machine}; load average at the end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(", ")}`,
    `load: REST autocannon ${options.connections} connections (HTTP/1.1, one board, warm cache); SSE ${options.streams} concurrent viewers each opening the stream, reading its first board and closing, in a loop`,
    "",
    table(
      [
        "round",
        "path",
        "unsigned /s",
        "signed /s",
        "signed vs unsigned",
        "server CPU µs/call unsigned",
        "signed",
        "unsigned / signed CPU",
      ],
      rows.map((row) => [
        row.round,
        row.what === "REST" ? "REST POST (req/s)" : "SSE opens to first board (/s)",
        fmt(row.plain.perSecond, 0),
        fmt(row.signed.perSecond, 0),
        pct(row.signed.perSecond / row.plain.perSecond),
        fmt(row.plain.cpuMicrosPerCall, 0),
        fmt(row.signed.cpuMicrosPerCall, 0),
        pct(row.plain.cpuMicrosPerCall / row.signed.cpuMicrosPerCall),
      ]),
    ),
    "",
    `throughput, signed / unsigned: all rounds summed REST ${pct(summed("REST"))}, SSE ${pct(summed("SSE"))}; ` +
      `median of the rounds REST ${pct(throughput("REST"))}, SSE ${pct(throughput("SSE"))} (target >= 90%).`,
    `server CPU per call, unsigned / signed (median of the rounds): REST ${pct(cpu("REST"))}, SSE ${pct(cpu("SSE"))}.`,
    `signatures made by the server in the whole run: ${signatures}`,
    "",
  ].join("\n");
}

/** REST calls of each kind counted under callgrind: instructions per call, unsigned and signed, each round. */
async function instructionsReport(
  distDir: string,
  databaseUrl: string,
  key: string,
  options: Options,
  counted: { readonly requests: number; readonly warmup: number },
): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "signed-boards-callgrind-"));
  const service = await startChild(
    join(distDir, "../src/main.js"),
    // As the protocols scenario runs a server under valgrind (bench/protocols.ts).
    measuredServerEnv(databaseUrl, { ISSUER: "https://casino.example", ...UNDER_CALLGRIND }),
    {
      isListening: (line) => line.msg?.startsWith("topwagers listening") === true,
      nodeArgs: ["--no-flush-bytecode", "--no-memory-reducer"],
      wrapper: callgrindWrapper(dir),
    },
  );
  const url = `http://127.0.0.1:${service.port}/top-affiliate-wagers-by-period`;
  const bodies = { unsigned: JSON.stringify(REQUEST), signed: JSON.stringify({ ...REQUEST, signed: true }) };
  const calls = async (body: string, amount: number) => {
    const result = await autocannon({
      url,
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body,
      connections: 8,
      amount,
      // Under valgrind a call may take seconds.
      timeout: 120,
    });
    if (result.non2xx + result.errors > 0)
      throw new Error(
        `${result.non2xx} REST calls answered non-2xx, ${result.errors} failed (${result.timeouts} timed out)`,
      );
  };
  const rows: (string | number)[][] = [];
  const perCall: Record<"unsigned" | "signed", number[]> = { unsigned: [], signed: [] };
  try {
    await calls(bodies.unsigned, counted.warmup);
    await calls(bodies.signed, counted.warmup);
    for (let round = 1; round <= options.rounds; round++) {
      const order = round % 2 === 0 ? (["signed", "unsigned"] as const) : (["unsigned", "signed"] as const);
      for (const kind of order) {
        const { instructions, dumpFile } = await countInstructions(service.child.pid ?? 0, dir, () =>
          calls(bodies[kind], counted.requests),
        );
        rmSync(dumpFile);
        perCall[kind].push(instructions / counted.requests);
        rows.push([round, kind, fmt(instructions / counted.requests, 0)]);
      }
    }
  } finally {
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const ratio = median(perCall.unsigned) / median(perCall.signed);
  return [
    "",
    `command: npm run bench -- signed-boards --instructions ${counted.requests} --warmup ${counted.warmup} --rounds ${options.rounds}`,
    `machine: ${await machineDescription(databaseUrl)}; the server under valgrind --tool=callgrind (every thread counted)`,
    "",
    table(["round", "REST POST", "instructions per call"], rows),
    "",
    `median instructions per call: unsigned ${fmt(median(perCall.unsigned), 0)}, signed ${fmt(median(perCall.signed), 0)}; unsigned / signed ${fmt(100 * ratio, 1)}% (the share of unsigned throughput signed calls can have when the server's CPU is the bottleneck).`,
    "",
  ].join("\n");
}
