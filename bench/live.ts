/**
 * Live boards under load:
 *
 *   npm run bench -- live [--viewers 10000] [--boards 100] [--wagers 50] [--seconds 30] [--mix 40,30,30]
 *                         [--num-users 10] [--redis redis://127.0.0.1:6379] [--modes both|polling|redis]
 *
 * Two server processes on one database: A takes the wagers (internal ingest, gRPC), B holds the viewers, so a
 * change reaches B through the change feed: by its 200 ms poll, or at once with Redis wake-ups. The viewers
 * (SSE over HTTP/1.1, SSE over h2c, gRPC; `--mix` in percent) run in their own process; viewer i watches board
 * i % boards (one affiliate per board). W wagers a second go to random boards; each adds 1 to that board's pacer
 * user, so a board's pacer total says how many bench wagers it shows, and each arrival is timed against the
 * commit (the RecordWagers answer) of every wager it shows for the first time: push latency, commit to received.
 * Also: messages a second (B's own counter), B's RSS per viewer (RSS with the viewers minus RSS before them),
 * and CPU of B, A and the viewers' process. The file-descriptor limit of B and the viewers is raised here
 * (prlimit), not in the service's defaults.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import os from "node:os";
import { parseArgs } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { WagerIngestService } from "../gen/topwagers/v1/wager_ingest_pb.js";
import { generateApiKey } from "../src/keys/core/api-key-secret.js";
import { insertApiKey } from "../src/keys/sql/api-keys.js";
import { openDatabase } from "../src/platform/database/database.js";
import { recreateDatabase, TOKEN } from "./ingest.js";
import type { FromViewers, ViewerKind, ViewersPlan, ViewersReport } from "./live-viewers.js";
import { fmt, machineDescription, percentile, type ServerInstance, startServerProcess, table } from "./support.js";

const PACER_BASE = 1_000_000;
const KINDS: readonly ViewerKind[] = ["sse-h1", "sse-h2", "grpc"];

const wallNow = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** CPU seconds (user + system) a process has used, from /proc. */
function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function residentMiB(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(match?.[1] ?? Number.NaN) / 1024;
}

/** `prlimit --nofile=N:N` before a command: the file-descriptor limit of the bench's own processes. */
function raisedFdLimit(needed: number): string[] {
  try {
    execFileSync("prlimit", ["--version"], { stdio: "ignore" });
  } catch {
    return [];
  }
  return ["prlimit", `--nofile=${needed}:${needed}`];
}

async function metricOf(internalUrl: string, series: string): Promise<number> {
  const text = await (await fetch(`${internalUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return Number(line?.split(" ")[1] ?? Number.NaN);
}

async function sumOf(internalUrl: string, prefix: string): Promise<number> {
  const text = await (await fetch(`${internalUrl}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith(prefix))
    .reduce((sum, l) => sum + Number(l.split(" ")[1]), 0);
}

interface RunOptions {
  readonly viewers: number;
  readonly boards: number;
  readonly wagersPerSecond: number;
  readonly seconds: number;
  readonly mix: readonly number[];
  readonly numUsers: number;
  readonly redisUrl: string | undefined;
  readonly databaseUrl: string;
}

interface RunResult {
  readonly mode: string;
  readonly open: Record<ViewerKind, number>;
  readonly failed: number;
  readonly wagersPerSecond: number;
  readonly deliveries: number;
  readonly expected: number;
  readonly latencies: number[];
  readonly latenciesByKind: Record<ViewerKind, number[]>;
  readonly messagesPerSecond: number;
  readonly rssBeforeMiB: number;
  readonly rssAfterMiB: number;
  readonly kibPerViewer: number;
  readonly cpu: { b: number; a: number; viewers: number };
  readonly disconnects: { slow: number; limit: number };
  readonly ended: number;
}

function viewersProcess(plan: ViewersPlan, fdLimit: string[]): ChildProcess {
  const script = new URL("./live-viewers.js", import.meta.url).pathname;
  const [command, ...prefix] = fdLimit.length > 0 ? fdLimit : [process.execPath];
  const args = fdLimit.length > 0 ? [...prefix, process.execPath, script] : [script];
  return spawn(command as string, args, {
    env: { ...process.env, LIVE_VIEWERS_PLAN: JSON.stringify(plan) },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
}

function nextMessage<T extends FromViewers["type"]>(child: ChildProcess, type: T, timeoutMs: number) {
  return new Promise<Extract<FromViewers, { type: T }>>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`viewers sent no ${type} within ${timeoutMs} ms`)), timeoutMs);
    const onMessage = (message: FromViewers) => {
      if (message.type !== type) return;
      clearTimeout(timer);
      child.off("message", onMessage);
      resolve(message as Extract<FromViewers, { type: T }>);
    };
    child.on("message", onMessage);
    child.once("exit", (code) => reject(new Error(`viewers exited with ${code}`)));
  });
}

async function runOnce(mode: string, options: RunOptions): Promise<RunResult> {
  const { viewers, boards, databaseUrl } = options;
  await recreateDatabase(databaseUrl);
  const db = await openDatabase({ url: databaseUrl, poolSize: 2 });
  const keys: string[] = [];
  for (let b = 0; b < boards; b++) {
    const key = generateApiKey();
    await insertApiKey(db.write, {
      id: key.id,
      hash: key.hash,
      affiliateExternalId: `live-${b}`,
      label: "bench",
      rateLimit: null,
    });
    keys.push(key.secret);
  }
  await db.close();
  const redis = options.redisUrl === undefined ? {} : { REDIS_URL: options.redisUrl };
  const fdLimit = raisedFdLimit(viewers + 4_096);
  const a = await startServerProcess(databaseUrl, { INGEST_TOKEN: TOKEN, ...redis });
  let b: ServerInstance | undefined;
  let child: ChildProcess | undefined;
  const session = new Http2SessionManager(a.internalUrl);
  try {
    b = await startServerProcess(
      databaseUrl,
      {
        ...redis,
        STREAM_LIMIT: String(viewers * 2),
        STREAM_LIMIT_PER_KEY: String(viewers * 2),
        STREAM_LIMIT_PER_ADDRESS: String(viewers * 2),
      },
      fdLimit,
    );
    const ingest = createClient(
      WagerIngestService,
      createGrpcTransport({ baseUrl: a.internalUrl, sessionManager: session }),
    );
    const headers = { authorization: `Bearer ${TOKEN}` };
    const now = Math.floor(Date.now() / 1000);
    const placedAt = BigInt(now - 60);
    for (let start = 0; start < boards; start += 50) {
      const range = Array.from({ length: Math.min(50, boards - start) }, (_, i) => start + i);
      await ingest.upsertUsers(
        {
          users: range.flatMap((board) => [
            { id: `pacer-${board}`, affiliateId: `live-${board}`, username: `pacer-${board}`, avatar: "" },
            ...Array.from({ length: 11 }, (_, i) => ({
              id: `u-${board}-${i}`,
              affiliateId: `live-${board}`,
              username: `player ${board}.${i}`,
              avatar: `https://img.example/${board}/${i}.png`,
            })),
          ]),
        },
        { headers },
      );
      await ingest.recordWagers(
        {
          wagers: range.flatMap((board) => [
            { id: `pacer-${board}-base`, userId: `pacer-${board}`, amount: String(PACER_BASE), placedAt },
            ...Array.from({ length: 11 }, (_, i) => ({
              id: `w-${board}-${i}`,
              userId: `u-${board}-${i}`,
              amount: `${1000 * (i + 1)}.${String(i * 7).padStart(2, "0")}`,
              placedAt,
            })),
          ]),
        },
        { headers },
      );
    }
    await sleep(1_000);
    const rssBeforeMiB = residentMiB(b.child.pid);
    const total = options.mix.reduce((x, y) => x + y, 0);
    const counts = { "sse-h1": 0, "sse-h2": 0, grpc: 0 } as Record<ViewerKind, number>;
    KINDS.forEach((kind, i) => {
      counts[kind] = Math.round((viewers * (options.mix[i] ?? 0)) / total);
    });
    counts.grpc = viewers - counts["sse-h1"] - counts["sse-h2"];
    const plan: ViewersPlan = {
      baseUrl: b.publicUrl,
      keys,
      startTimestamp: now - 86_400,
      endTimestamp: now + 86_400,
      numUsers: options.numUsers,
      counts,
      pacerBase: PACER_BASE,
      openPerSecond: 2_000,
    };
    child = viewersProcess(plan, fdLimit);
    const ready = await nextMessage(child, "ready", 180_000);
    await sleep(2_000);
    const rssAfterMiB = residentMiB(b.child.pid);

    // The measured window: wagers at a fixed rate, at most 16 in flight.
    const messagesBefore = await sumOf(b.internalUrl, "topwagers_stream_messages_total");
    const cpuBefore = { b: cpuSeconds(b.child.pid), a: cpuSeconds(a.child.pid), viewers: cpuSeconds(child.pid) };
    const started = wallNow();
    const commits = new Map<number, number[]>();
    const interval = 1000 / options.wagersPerSecond;
    let sent = 0;
    let inFlight = 0;
    const writes: Promise<void>[] = [];
    for (let i = 0; wallNow() - started < options.seconds * 1000; i++) {
      const due = started + i * interval;
      if (due > wallNow()) await sleep(due - wallNow());
      if (inFlight >= 16) continue;
      const board = Math.floor(Math.random() * boards);
      sent += 1;
      inFlight += 1;
      writes.push(
        ingest
          .recordWagers(
            { wagers: [{ id: `bench-${i}`, userId: `pacer-${board}`, amount: "1", placedAt }] },
            { headers },
          )
          .then(() => {
            const at = wallNow();
            const list = commits.get(board);
            if (list === undefined) commits.set(board, [at]);
            else list.push(at);
          })
          .finally(() => {
            inFlight -= 1;
          }),
      );
    }
    await Promise.all(writes);
    const windowSeconds = (wallNow() - started) / 1000;
    const cpuAfter = { b: cpuSeconds(b.child.pid), a: cpuSeconds(a.child.pid), viewers: cpuSeconds(child.pid) };
    const messagesAfter = await sumOf(b.internalUrl, "topwagers_stream_messages_total");
    await sleep(3_000);
    child.send({ type: "report" });
    const { report } = await nextMessage(child, "report", 60_000);
    const { latencies, latenciesByKind, deliveries, expected } = latenciesOf(commits, report, boards, viewers);
    return {
      mode,
      open: ready.open,
      failed: ready.failed,
      wagersPerSecond: sent / windowSeconds,
      deliveries,
      expected,
      latencies,
      latenciesByKind,
      messagesPerSecond: (messagesAfter - messagesBefore) / windowSeconds,
      rssBeforeMiB,
      rssAfterMiB,
      kibPerViewer: ((rssAfterMiB - rssBeforeMiB) * 1024) / viewers,
      cpu: {
        b: ((cpuAfter.b - cpuBefore.b) / windowSeconds) * 100,
        a: ((cpuAfter.a - cpuBefore.a) / windowSeconds) * 100,
        viewers: ((cpuAfter.viewers - cpuBefore.viewers) / windowSeconds) * 100,
      },
      disconnects: {
        slow: await metricOf(b.internalUrl, 'topwagers_stream_disconnects_total{reason="slow"}'),
        limit: await metricOf(b.internalUrl, 'topwagers_stream_disconnects_total{reason="limit"}'),
      },
      ended: KINDS.reduce((sum, kind) => sum + report.ended[kind], 0),
    };
  } finally {
    child?.kill("SIGKILL");
    session.abort();
    await Promise.all([a.stop(), b?.stop()]);
  }
}

/** Commit-to-received latency of every delivery: board b's c-th commit (in completion order) against each arrival of pacer count c on b. */
function latenciesOf(commits: Map<number, number[]>, report: ViewersReport, boards: number, viewers: number) {
  const latencies: number[] = [];
  const latenciesByKind = { "sse-h1": [], "sse-h2": [], grpc: [] } as Record<ViewerKind, number[]>;
  let expected = 0;
  for (const [board, times] of commits) {
    times.sort((x, y) => x - y);
    // Viewer i watches board i % boards.
    expected += times.length * (Math.floor((viewers - board - 1) / boards) + 1);
    for (const kind of KINDS) {
      const byCount = report.arrivals[kind][String(board)] ?? {};
      times.forEach((committedAt, index) => {
        for (const at of byCount[String(index + 1)] ?? []) latenciesByKind[kind].push(at - committedAt);
      });
    }
  }
  for (const kind of KINDS) {
    latenciesByKind[kind].sort((x, y) => x - y);
    for (const latency of latenciesByKind[kind]) latencies.push(latency);
  }
  latencies.sort((x, y) => x - y);
  return { latencies, latenciesByKind, deliveries: latencies.length, expected };
}

export async function runLiveBench(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      viewers: { type: "string", default: "10000" },
      boards: { type: "string", default: "100" },
      wagers: { type: "string", default: "50" },
      seconds: { type: "string", default: "30" },
      mix: { type: "string", default: "40,30,30" },
      "num-users": { type: "string", default: "10" },
      redis: { type: "string", default: process.env.REDIS_URL ?? "redis://127.0.0.1:6379" },
      modes: { type: "string", default: "both" },
    },
  });
  const options: RunOptions = {
    viewers: Number(values.viewers),
    boards: Number(values.boards),
    wagersPerSecond: Number(values.wagers),
    seconds: Number(values.seconds),
    mix: String(values.mix).split(",").map(Number),
    numUsers: Number(values["num-users"]),
    redisUrl: undefined,
    databaseUrl: process.env.BENCH_LIVE_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/topwagers_bench_live",
  };
  const loadBefore = os.loadavg();
  const results: RunResult[] = [];
  if (values.modes !== "redis") results.push(await runOnce("polling (200 ms)", options));
  if (values.modes !== "polling") {
    results.push(await runOnce("Redis wake-ups", { ...options, redisUrl: values.redis }));
  }
  const loadAfter = os.loadavg();
  const ms = (list: readonly number[], p: number) => fmt(percentile(list, p), 0);
  process.stdout.write(
    [
      "",
      `command: npm run bench -- live --viewers ${options.viewers} --boards ${options.boards} --wagers ${options.wagersPerSecond} --seconds ${options.seconds} --mix ${values.mix} --num-users ${options.numUsers}`,
      `machine: ${await machineDescription(options.databaseUrl)}`,
      `load average (1, 5, 15 min) before: ${loadBefore.map((l) => l.toFixed(2)).join(", ")}; after: ${loadAfter.map((l) => l.toFixed(2)).join(", ")}`,
      "setup: instance A takes the wagers (gRPC ingest), instance B holds every viewer; viewers in one more process on the same 2 cores; MariaDB on the same machine",
      "",
      table(
        [
          "mode",
          "viewers (SSE h1 / SSE h2c / gRPC)",
          "boards",
          "wagers/s",
          "deliveries",
          "p50 ms",
          "p99 ms",
          "max ms",
          "p99 ms SSE h1 / SSE h2c / gRPC",
          "messages/s",
          "B RSS MiB (before → with viewers)",
          "KiB per viewer",
          "CPU % B / A / viewers",
          "slow / refused",
        ],
        results.map((r) => [
          r.mode,
          `${KINDS.reduce((s, k) => s + r.open[k], 0)} (${r.open["sse-h1"]} / ${r.open["sse-h2"]} / ${r.open.grpc})${r.failed > 0 ? `, ${r.failed} failed` : ""}`,
          options.boards,
          fmt(r.wagersPerSecond, 1),
          `${r.deliveries} of ${r.expected}`,
          ms(r.latencies, 50),
          ms(r.latencies, 99),
          fmt(r.latencies.at(-1) ?? Number.NaN, 0),
          KINDS.map((k) => ms(r.latenciesByKind[k], 99)).join(" / "),
          fmt(r.messagesPerSecond, 0),
          `${fmt(r.rssBeforeMiB, 0)} → ${fmt(r.rssAfterMiB, 0)}`,
          fmt(r.kibPerViewer, 1),
          `${fmt(r.cpu.b, 0)} / ${fmt(r.cpu.a, 0)} / ${fmt(r.cpu.viewers, 0)}`,
          `${r.disconnects.slow} / ${r.disconnects.limit}`,
        ]),
      ),
      "",
    ].join("\n"),
  );
}
