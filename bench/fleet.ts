/**
 * A casino's day on a fleet (issue 31, item 1: measure first):
 *
 *   npm run bench -- fleet [--wagers 50000000] [--instances 1,2,3] [--boards 300] [--viewers 2000]
 *                          [--wager-rate 300] [--batch 100-1000] [--post-rate 50] [--void-share 0.02]
 *                          [--seconds 30] [--redis redis://127.0.0.1:6379]
 *
 * On the seeded data set of `npm run bench -- query` (topwagers_bench_<size>, seeded once and reused), for each
 * instance count: that many server processes on the same database and Redis; distinct watched boards (week,
 * half-month or month containing now; 10, 20 or 50 entries; plain or weighted) over affiliates drawn heavy-tailed
 * by their rank in size; SSE viewers spread over the boards (viewer i watches board i mod boards) and over the
 * instances (the k-th viewer of a board on instance k mod instances, so every instance watches every board with
 * at least as many viewers as instances), in child processes with a raised file-descriptor limit;
 * RecordWagers batches of 100–1000 placed now on the watched affiliates' users (an affiliate chosen in proportion
 * to its users), sent round-robin to the instances' internal listeners as a casino's pipeline would; a share of
 * each batch voided right after it; and REST POST readers on the same boards.
 *
 * Each batch also adds 1 to the pacer user of every affiliate it touches (a user made by the bench, far above
 * every real user, so it is first on every board of its affiliate): a board's pacer total minus its total at the
 * start says how many batches it shows. Push latency is a viewer's first arrival of a count minus the commit (the
 * RecordWagers answer) of that batch for that affiliate. A delivery is lost when a viewer's last board still differs
 * from a fresh POST of that board 30 s after the load stops (checked every 3 s from 3 s on), or its stream ended.
 *
 * The servers connect with a MariaDB account of their own (fleet_bench@127.0.0.1, on the data set only, dropped at
 * the end) and per-account statistics are switched on for the run (`userstat`, restored at the end), so their CPU
 * and SELECTs are told apart from other users of a shared server; mariadbd's utime + stime from /proc and
 * `Com_select` are reported too, for the whole server. Each run first measures an idle window (same processes and
 * viewers, no load). The bench adds wagers (placed now) and one pacer user per watched affiliate to the data set;
 * its API keys are removed at the end.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import os from "node:os";
import { parseArgs } from "node:util";
import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import mysql from "mysql2/promise";
import { type IngestWager, WagerIngestService } from "../gen/topwagers/v1/wager_ingest_pb.js";
import { mulberry32 } from "../src/ingest/core/seed-data.js";
import { generateApiKey } from "../src/keys/core/api-key-secret.js";
import { insertApiKey } from "../src/keys/sql/api-keys.js";
import { connectionOptions } from "../src/platform/database/database.js";
import type { FleetBoardPlan, FleetViewersPlan, FleetViewersReport, FromFleetViewers } from "./fleet-viewers.js";
import { TOKEN } from "./ingest.js";
import { databaseUrl, describeDataset, ensureSeeded } from "./query.js";
import {
  fmt,
  logNormalUnits,
  machineDescription,
  percentile,
  type ServerInstance,
  startServerProcess,
  table,
} from "./support.js";

export const FLEET_USAGE =
  "fleet [--wagers 50000000] [--instances 1,2,3] [--boards 300] [--viewers 2000] [--wager-rate 300] [--batch 100-1000] [--post-rate 50] [--void-share 0.02] [--seconds 30] [--redis redis://127.0.0.1:6379]   instances x boards x viewers on the seeded data: database CPU and statements, recomputes, push and POST latency, deliveries lost";

/** The machine's hard limit on open files per process; viewers beyond what one process may hold go to another. */
const FD_HARD_LIMIT = 20_000;
const VIEWERS_PER_PROCESS = 15_000;
const PACER_BASE = "10000000000";
const KEY_LABEL = "fleet-bench";
const SETTLE_MS = 3_000;
/** After the load, a viewer whose board differs from a fresh POST is checked again until this long has passed. */
const CONVERGE_MS = 30_000;
/** The MariaDB account the bench's servers use, so USER_STATISTICS separates their work from other users'. */
const DB_USER = "fleet_bench";
const IDLE_MS = 5_000;
const MAX_BATCHES_IN_FLIGHT = 4;
const MAX_POSTS_IN_FLIGHT = 32;
/** No call of the bench waits longer than this (a server that hangs fails the run instead of holding it). */
const CALL_TIMEOUT_MS = 30_000;

const wallNow = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** utime + stime of a process in seconds, from /proc. */
function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100; // clock ticks (USER_HZ 100)
  } catch (error) {
    process.stderr.write(`cannot read the CPU time of ${pid}: ${String(error)}\n`);
    return Number.NaN;
  }
}

function residentMiB(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return Number(match?.[1] ?? Number.NaN) / 1024;
  } catch {
    return Number.NaN;
  }
}

/** The pid of the MariaDB server the bench uses (other mariadbd processes may run on the machine). */
async function mariadbPid(admin: mysql.Connection): Promise<number | undefined> {
  try {
    const [rows] = await admin.query<mysql.RowDataPacket[]>("SELECT @@pid_file AS f");
    const pid = Number(readFileSync(String(rows[0]?.f), "utf8").trim());
    if (Number.isInteger(pid) && pid > 0) return pid;
  } catch {
    // Not readable here (another machine or user): reported as n/a.
  }
  process.stderr.write("cannot read the MariaDB server's pid file: its CPU is not measured\n");
  return undefined;
}

function prlimit(nofile: number): string[] {
  try {
    execFileSync("prlimit", ["--version"], { stdio: "ignore" });
  } catch {
    return [];
  }
  const n = Math.min(FD_HARD_LIMIT, nofile);
  return ["prlimit", `--nofile=${n}:${n}`];
}

/** Board answers by kind (NaN on a build without topwagers_board_computations_total). */
interface Computations {
  readonly full: number;
  readonly incremental: number;
  readonly remote: number;
  /** Asks of a leader that fell back to computing here (no answer in time, or an answer from behind). */
  readonly fallbacks: number;
  /** Reads of the change feed (each instance's polls, and the extra ones a leader makes to serve an ask). */
  readonly feedPolls: number;
}

/** An instance's live-board recomputes and board computations by kind, from its /metrics. */
async function boardCounts(internalUrl: string): Promise<{ recomputes: number; computations: Computations }> {
  const text = await (await fetch(`${internalUrl}/metrics`, { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) })).text();
  const value = (series: string) => {
    const line = text.split("\n").find((l) => l.startsWith(`${series} `));
    return Number(line?.split(" ")[1] ?? Number.NaN);
  };
  const kind = (k: string) => value(`topwagers_board_computations_total{kind="${k}"}`);
  return {
    recomputes: value("topwagers_board_recomputes_total"),
    computations: {
      full: kind("full"),
      incremental: kind("incremental"),
      remote: kind("remote"),
      fallbacks:
        value('topwagers_fleet_fallbacks_total{reason="no_answer"}') +
        value('topwagers_fleet_fallbacks_total{reason="behind"}'),
      feedPolls: value('topwagers_change_feed_polls_total{result="ok"}'),
    },
  };
}

function sumComputations(all: readonly Computations[]): Computations {
  const sum = (k: keyof Computations) => all.reduce((n, c) => n + c[k], 0);
  return {
    full: sum("full"),
    incremental: sum("incremental"),
    remote: sum("remote"),
    fallbacks: sum("fallbacks"),
    feedPolls: sum("feedPolls"),
  };
}

interface Board {
  readonly affiliate: Affiliate;
  readonly period: "week" | "half-month" | "month";
  readonly start: number;
  readonly end: number;
  readonly numUsers: 10 | 20 | 50;
  readonly rankBy: "wagered" | "weighted";
}

interface Affiliate {
  readonly id: number;
  readonly externalId: string;
  readonly users: number;
  /** Up to 2,000 of its users' external ids, in id order. */
  userIds: string[];
  key: string;
  readonly pacer: string;
}

/** The week (from Monday), half-month and month containing `now`, UTC, as inclusive Unix-second ranges. */
function periodsAt(now: number): Record<Board["period"], { start: number; end: number }> {
  const d = new Date(now * 1000);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  const day = d.getUTCDate();
  const at = (month: number, date: number) => Date.UTC(y, month, date) / 1000;
  const monday = at(m, day - ((d.getUTCDay() + 6) % 7));
  return {
    week: { start: monday, end: monday + 7 * 86_400 - 1 },
    "half-month": day <= 15 ? { start: at(m, 1), end: at(m, 16) - 1 } : { start: at(m, 16), end: at(m + 1, 1) - 1 },
    month: { start: at(m, 1), end: at(m + 1, 1) - 1 },
  };
}

/** Distinct boards over affiliates drawn by rank in size (rank = floor(A * u^3): the largest are watched most). */
function drawBoards(all: readonly Affiliate[], count: number, now: number): Board[] {
  const next = mulberry32(31);
  const periods = periodsAt(now);
  const boards = new Map<string, Board>();
  for (let attempt = 0; boards.size < count && attempt < count * 1_000; attempt++) {
    const affiliate = all[Math.min(all.length - 1, Math.floor(all.length * next() ** 3))] as Affiliate;
    const period = (["week", "half-month", "month"] as const)[Math.floor(next() * 3)] ?? "month";
    const numUsers = ([10, 20, 50] as const)[Math.floor(next() * 3)] ?? 10;
    const rankBy = next() < 0.5 ? "wagered" : "weighted";
    const key = `${affiliate.id}/${period}/${numUsers}/${rankBy}`;
    if (!boards.has(key)) boards.set(key, { affiliate, period, ...periods[period], numUsers, rankBy });
  }
  if (boards.size < count) throw new Error(`only ${boards.size} distinct boards could be drawn, not ${count}`);
  return [...boards.values()];
}

const streamPath = (b: Board) =>
  `/top-affiliate-wagers-by-period/stream?startTimestamp=${b.start}&endTimestamp=${b.end}&numUsers=${b.numUsers}&rankBy=${b.rankBy}`;

async function post(baseUrl: string, board: Board): Promise<string> {
  const response = await fetch(`${baseUrl}/top-affiliate-wagers-by-period`, {
    method: "POST",
    headers: { authorization: `Bearer ${board.affiliate.key}`, "content-type": "application/json" },
    signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
    body: JSON.stringify({
      startTimestamp: board.start,
      endTimestamp: board.end,
      numUsers: board.numUsers,
      rankBy: board.rankBy,
    }),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`POST answered ${response.status}: ${text.slice(0, 300)}`);
  return text;
}

function pacerTotal(body: string, pacer: string): number {
  const at = body.indexOf(`"username":"${pacer}"`);
  const total = at < 0 ? null : /"totalWagered":(\d+)/.exec(body.slice(at));
  if (total === null) throw new Error(`the pacer ${pacer} is not on the board: ${body.slice(0, 300)}`);
  return Number(total[1]);
}

/** The data set's URL with the bench servers' own account. */
function serversUrl(url: string): string {
  const own = new URL(url);
  own.username = DB_USER;
  own.password = "";
  return own.toString();
}

/**
 * A passwordless account for the bench's servers, on the data set only and from 127.0.0.1 only, and per-account
 * statistics on; returns the undo (drop the account, statistics as they were).
 */
async function ownAccount(admin: mysql.Connection, database: string): Promise<() => Promise<void>> {
  const [rows] = await admin.query<mysql.RowDataPacket[]>("SELECT @@userstat AS on_");
  const before = Number(rows[0]?.on_ ?? 0);
  await admin.query("CREATE USER IF NOT EXISTS ?@'127.0.0.1'", [DB_USER]);
  await admin.query(`GRANT ALL PRIVILEGES ON ${mysql.escapeId(database)}.* TO ?@'127.0.0.1'`, [DB_USER]);
  await admin.query("SET GLOBAL userstat = 1");
  return async () => {
    await admin.query("SET GLOBAL userstat = ?", [before]);
    await admin.query("DROP USER IF EXISTS ?@'127.0.0.1'", [DB_USER]);
  };
}

function viewersProcess(plan: FleetViewersPlan, limit: string[]): ChildProcess {
  const script = new URL("./fleet-viewers.js", import.meta.url).pathname;
  const command = [...limit, process.execPath, script];
  const child = spawn(command[0] as string, command.slice(1), { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  child.send({ type: "plan", plan });
  return child;
}

function nextMessage<T extends FromFleetViewers["type"]>(child: ChildProcess, type: T, timeoutMs: number) {
  return new Promise<Extract<FromFleetViewers, { type: T }>>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`viewers sent no ${type} within ${timeoutMs} ms`)), timeoutMs);
    const onMessage = (message: FromFleetViewers) => {
      if (message.type !== type) return;
      clearTimeout(timer);
      child.off("message", onMessage);
      resolve(message as Extract<FromFleetViewers, { type: T }>);
    };
    child.on("message", onMessage);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`viewers exited with ${code}`));
    });
  });
}

interface Settings {
  readonly wagers: number;
  readonly boards: number;
  readonly viewers: number;
  readonly wagerRate: number;
  readonly batchMin: number;
  readonly batchMax: number;
  readonly postRate: number;
  readonly voidShare: number;
  readonly seconds: number;
  readonly redisUrl: string;
}

/** Database and instance readings at one moment. */
interface Reading {
  readonly at: number;
  readonly dbCpu: number;
  readonly selects: number;
  /** USER_STATISTICS of the servers' own account: CPU seconds, busy seconds and SELECTs. */
  readonly ours: { readonly cpu: number; readonly busy: number; readonly selects: number };
  readonly recomputes: number;
  readonly computations: Computations;
  readonly instanceCpu: number[];
  readonly viewersCpu: number;
}

interface Rates {
  readonly dbCpu: number;
  readonly selects: number;
  readonly ourCpu: number;
  readonly ourBusy: number;
  readonly ourSelects: number;
  readonly recomputes: number;
  readonly computations: Computations;
}

interface RunResult {
  readonly instances: number;
  readonly open: number;
  readonly failed: number;
  readonly idle: Rates;
  readonly load: Rates;
  readonly wagersPerSecond: number;
  readonly windowSeconds: number;
  readonly batches: number;
  readonly voided: number;
  readonly postsPerSecond: number;
  readonly postErrors: number;
  readonly postLatencies: number[];
  readonly latencies: number[];
  readonly expected: number;
  readonly instanceCpu: number[];
  readonly instanceRss: number[];
  readonly viewersCpu: number;
  readonly lost: number;
  readonly lostEnded: number;
  readonly lostStale: number;
  /** Viewers whose board differed from a fresh POST 3 s after the load (late or lost). */
  readonly staleAtSettle: number;
  /** From the end of the load to the last check. */
  readonly convergedMs: number;
}

async function runOnce(
  instances: number,
  settings: Settings,
  url: string,
  boards: readonly Board[],
  affiliates: readonly Affiliate[],
  admin: mysql.Connection,
): Promise<RunResult> {
  const servers: ServerInstance[] = [];
  const viewerChildren: ChildProcess[] = [];
  const sessions: Http2SessionManager[] = [];
  const perInstance = Math.ceil(settings.viewers / instances);
  const processes = Math.max(1, Math.ceil(settings.viewers / VIEWERS_PER_PROCESS));
  const tag = `${Date.now().toString(36)}-${instances}`;
  try {
    for (let i = 0; i < instances; i++) {
      servers.push(
        await startServerProcess(
          serversUrl(url),
          {
            INGEST_TOKEN: TOKEN,
            REDIS_URL: settings.redisUrl,
            RATE_LIMIT_POINTS: "1000000000",
            STREAM_LIMIT: String(perInstance * 2 + 100),
            STREAM_LIMIT_PER_KEY: String(perInstance * 2 + 100),
            STREAM_LIMIT_PER_ADDRESS: String(perInstance * 2 + 100),
          },
          prlimit(perInstance + 4_096),
        ),
      );
    }
    const headers = { authorization: `Bearer ${TOKEN}` };
    const callOptions = { headers, timeoutMs: CALL_TIMEOUT_MS };
    const ingests: Client<typeof WagerIngestService>[] = servers.map((server) => {
      const session = new Http2SessionManager(server.internalUrl);
      sessions.push(session);
      return createClient(
        WagerIngestService,
        createGrpcTransport({ baseUrl: server.internalUrl, sessionManager: session }),
      );
    });
    const first = ingests[0] as Client<typeof WagerIngestService>;
    const now = Math.floor(Date.now() / 1000);
    // The pacers: one user per watched affiliate, far above every real user from this run's base wager.
    for (let i = 0; i < affiliates.length; i += 500) {
      const slice = affiliates.slice(i, i + 500);
      await first.upsertUsers(
        { users: slice.map((a) => ({ id: a.pacer, affiliateId: a.externalId, username: a.pacer, avatar: "" })) },
        callOptions,
      );
      await first.recordWagers(
        {
          wagers: slice.map((a) => ({
            id: `fleet-${tag}-base-${a.id}`,
            userId: a.pacer,
            amount: PACER_BASE,
            placedAt: BigInt(now - 60),
          })),
        },
        callOptions,
      );
    }
    await sleep(1_500);
    // Each board's pacer total before the load (and every board computed once, on instance 0).
    const bases: number[] = [];
    for (const board of boards)
      bases.push(pacerTotal(await post(servers[0]?.publicUrl ?? "", board), board.affiliate.pacer));

    // Viewers: viewer i watches board i mod boards; processes of up to 15,000 viewers each.
    const planBoards: FleetBoardPlan[] = boards.map((board, i) => ({
      streamPath: streamPath(board),
      key: board.affiliate.key,
      pacer: board.affiliate.pacer,
      base: bases[i] as number,
    }));
    const viewerBoard = (v: number) => v % boards.length;
    for (let p = 0; p < processes; p++) {
      const mine: { board: number; baseUrl: string }[] = [];
      for (let v = p; v < settings.viewers; v += processes) {
        // Board b's viewers are b, b + boards, b + 2 * boards, ...: the k-th of them on instance k mod instances.
        mine.push({
          board: viewerBoard(v),
          baseUrl: servers[Math.floor(v / boards.length) % instances]?.publicUrl ?? "",
        });
      }
      viewerChildren.push(
        viewersProcess({ boards: planBoards, viewers: mine, openPerSecond: 1_000 }, prlimit(mine.length + 1_024)),
      );
    }
    const ready = await Promise.all(viewerChildren.map((child) => nextMessage(child, "ready", 300_000)));
    const open = ready.reduce((n, r) => n + r.open, 0);
    const failed = ready.reduce((n, r) => n + r.failed, 0);
    await sleep(2_000);

    const dbPid = await mariadbPid(admin);
    const read = async (): Promise<Reading> => {
      const [rows] = await admin.query<mysql.RowDataPacket[]>("SHOW GLOBAL STATUS LIKE 'Com_select'");
      const [mine] = await admin.query<mysql.RowDataPacket[]>(
        "SELECT CPU_TIME, BUSY_TIME, SELECT_COMMANDS FROM information_schema.USER_STATISTICS WHERE USER = ?",
        [DB_USER],
      );
      const counts = await Promise.all(servers.map((s) => boardCounts(s.internalUrl)));
      return {
        at: wallNow(),
        dbCpu: cpuSeconds(dbPid),
        selects: Number(rows[0]?.Value ?? Number.NaN),
        ours: {
          cpu: Number(mine[0]?.CPU_TIME ?? Number.NaN),
          busy: Number(mine[0]?.BUSY_TIME ?? Number.NaN),
          selects: Number(mine[0]?.SELECT_COMMANDS ?? Number.NaN),
        },
        recomputes: counts.reduce((x, y) => x + y.recomputes, 0),
        computations: sumComputations(counts.map((c) => c.computations)),
        instanceCpu: servers.map((s) => cpuSeconds(s.child.pid)),
        viewersCpu: viewerChildren.reduce((n, c) => n + cpuSeconds(c.pid), 0),
      };
    };
    const rates = (a: Reading, b: Reading) => {
      const seconds = (b.at - a.at) / 1000;
      return {
        dbCpu: (b.dbCpu - a.dbCpu) / seconds,
        selects: (b.selects - a.selects) / seconds,
        ourCpu: (b.ours.cpu - a.ours.cpu) / seconds,
        ourBusy: (b.ours.busy - a.ours.busy) / seconds,
        ourSelects: (b.ours.selects - a.ours.selects) / seconds,
        recomputes: (b.recomputes - a.recomputes) / seconds,
        computations: {
          full: (b.computations.full - a.computations.full) / seconds,
          incremental: (b.computations.incremental - a.computations.incremental) / seconds,
          remote: (b.computations.remote - a.computations.remote) / seconds,
          fallbacks: (b.computations.fallbacks - a.computations.fallbacks) / seconds,
          feedPolls: (b.computations.feedPolls - a.computations.feedPolls) / seconds,
        },
      };
    };

    // Idle window: the same processes and viewers, no wagers and no POSTs.
    const idleStart = await read();
    await sleep(IDLE_MS);
    const idleEnd = await read();

    // The load window: wagers in batches, voids right after their batch, POST readers; all bounded in time.
    const next = mulberry32(instances * 1_000 + 7);
    const totalUsers = affiliates.reduce((n, a) => n + a.users, 0);
    const cumulative: number[] = [];
    affiliates.reduce((n, a) => {
      cumulative.push(n + a.users);
      return n + a.users;
    }, 0);
    const pickAffiliate = () => {
      const u = next() * totalUsers;
      let lo = 0;
      let hi = cumulative.length - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if ((cumulative[mid] as number) > u) hi = mid;
        else lo = mid + 1;
      }
      return affiliates[lo] as Affiliate;
    };
    const commits = new Map<number, number[]>();
    let wagersSent = 0;
    let batches = 0;
    let voided = 0;
    let postsSent = 0;
    let postErrors = 0;
    const postLatencies: number[] = [];
    const started = wallNow();
    const endsAt = started + settings.seconds * 1000;

    const wagerLoop = async () => {
      const inFlight = new Set<Promise<void>>();
      let due = started;
      for (let n = 0; wallNow() < endsAt && n < 1_000_000; n++) {
        // A batch leaves at the end of its share of time, so the rate never runs ahead of --wager-rate.
        const size = settings.batchMin + Math.floor(next() * (settings.batchMax - settings.batchMin + 1));
        due += (size / settings.wagerRate) * 1000;
        if (due >= endsAt) break;
        if (due > wallNow()) await sleep(due - wallNow());
        while (inFlight.size >= MAX_BATCHES_IN_FLIGHT) await Promise.race(inFlight);
        const placedAt = BigInt(Math.floor(Date.now() / 1000) - Math.floor(next() * 5));
        const touched = new Set<Affiliate>();
        const wagers: IngestWager[] = [];
        // The call holds `size` wagers in all: the batch and one pacer wager per affiliate it touches.
        for (let w = 0; wagers.length + touched.size < size && w < 10 * size; w++) {
          const affiliate = pickAffiliate();
          if (!touched.has(affiliate) && wagers.length + touched.size + 2 > size) continue;
          touched.add(affiliate);
          const user = affiliate.userIds[Math.floor(affiliate.userIds.length * next() ** 2)] as string;
          const units = logNormalUnits(next);
          const whole = Math.floor(units / 1e8);
          const u = next();
          wagers.push({
            $typeName: "topwagers.v1.IngestWager",
            id: `fleet-${tag}-${n}-${wagers.length}`,
            userId: user,
            amount: `${whole}.${String(units - whole * 1e8).padStart(8, "0")}`,
            placedAt,
            weightBps: u < 0.7 ? 10_000 : u < 0.9 ? 5_000 : 1_000,
          });
        }
        const voids = wagers.filter(() => next() < settings.voidShare).map((w) => w.id);
        for (const affiliate of touched) {
          wagers.push({
            $typeName: "topwagers.v1.IngestWager",
            id: `fleet-${tag}-${n}-pacer-${affiliate.id}`,
            userId: affiliate.pacer,
            amount: "1",
            placedAt,
          });
        }
        const ingest = ingests[n % ingests.length] as Client<typeof WagerIngestService>;
        wagersSent += wagers.length;
        batches += 1;
        const call: Promise<void> = (async () => {
          await ingest.recordWagers({ wagers }, callOptions);
          const at = wallNow();
          for (const affiliate of touched) {
            const list = commits.get(affiliate.id);
            if (list === undefined) commits.set(affiliate.id, [at]);
            else list.push(at);
          }
          if (voids.length > 0) voided += (await ingest.voidWagers({ wagerIds: voids }, callOptions)).voided;
        })().finally(() => inFlight.delete(call));
        inFlight.add(call);
      }
      await Promise.all(inFlight);
    };

    const postLoop = async () => {
      if (settings.postRate <= 0) return;
      const inFlight = new Set<Promise<void>>();
      const interval = 1000 / settings.postRate;
      for (let n = 0; n < settings.postRate * settings.seconds * 2; n++) {
        const due = started + n * interval;
        if (due >= endsAt) break;
        if (due > wallNow()) await sleep(due - wallNow());
        if (inFlight.size >= MAX_POSTS_IN_FLIGHT) continue;
        const board = boards[Math.floor(next() * boards.length)] as Board;
        const server = servers[n % servers.length] as ServerInstance;
        postsSent += 1;
        const call: Promise<void> = (async () => {
          const t = performance.now();
          try {
            await post(server.publicUrl, board);
            postLatencies.push(performance.now() - t);
          } catch {
            postErrors += 1;
          }
        })().finally(() => inFlight.delete(call));
        inFlight.add(call);
      }
      await Promise.all(inFlight);
    };

    const loadStart = await read();
    await Promise.all([wagerLoop(), postLoop()]);
    const loadEnd = await read();
    const windowSeconds = (loadEnd.at - loadStart.at) / 1000;
    const rss = servers.map((s) => residentMiB(s.child.pid));
    await sleep(SETTLE_MS);

    // Latency and losses: every viewer's arrivals against the commits; its last board against a fresh POST.
    const reports: FleetViewersReport[] = [];
    for (const child of viewerChildren) {
      child.send({ type: "report" });
      reports.push((await nextMessage(child, "report", 120_000)).report);
    }
    const latencies: number[] = [];
    let expected = 0;
    const viewersOf = boards.map((_, b) => Math.floor((settings.viewers - b - 1) / boards.length) + 1);
    boards.forEach((board, b) => {
      const times = [...(commits.get(board.affiliate.id) ?? [])].sort((x, y) => x - y);
      expected += times.length * (viewersOf[b] ?? 0);
      for (const report of reports) {
        const byCount = report.arrivals[String(b)] ?? {};
        times.forEach((committedAt, index) => {
          for (const at of byCount[String(index + 1)] ?? []) latencies.push(at - committedAt);
        });
      }
    });
    latencies.sort((x, y) => x - y);
    // A viewer is stale when its last board differs from a fresh POST of that board; stale ones are checked
    // again (fresh finals, fresh POSTs) until CONVERGE_MS after the load, so a slow delivery is late, not lost.
    const staleBoards = async (only: readonly number[]) => {
      const finals = [];
      for (const child of viewerChildren) {
        child.send({ type: "finals" });
        finals.push((await nextMessage(child, "finals", 60_000)).finals);
      }
      const stale = new Map<number, number>();
      let shown = 0;
      for (const b of only) {
        const fresh = await post(servers[0]?.publicUrl ?? "", boards[b] as Board);
        for (const byData of finals) {
          for (const [data, viewers] of Object.entries(byData[String(b)] ?? {})) {
            shown += viewers;
            if (data !== fresh) stale.set(b, (stale.get(b) ?? 0) + viewers);
          }
        }
      }
      return { stale, shown };
    };
    const checkStarted = wallNow();
    const firstCheck = await staleBoards(boards.map((_, b) => b));
    const onFinal = firstCheck.shown;
    const staleAtSettle = [...firstCheck.stale.values()].reduce((x, y) => x + y, 0);
    let stale = firstCheck.stale;
    for (let round = 0; stale.size > 0 && round < 10 && wallNow() - checkStarted < CONVERGE_MS; round++) {
      await sleep(3_000);
      stale = (await staleBoards([...stale.keys()])).stale;
    }
    const lostStale = [...stale.values()].reduce((x, y) => x + y, 0);
    const convergedMs = wallNow() - loadEnd.at;
    const lostEnded = reports.reduce((n, r) => n + r.ended, 0);
    postLatencies.sort((x, y) => x - y);
    return {
      instances,
      open,
      failed,
      idle: rates(idleStart, idleEnd),
      load: rates(loadStart, loadEnd),
      wagersPerSecond: wagersSent / windowSeconds,
      windowSeconds,
      batches,
      voided,
      postsPerSecond: postsSent / windowSeconds,
      postErrors,
      postLatencies,
      latencies,
      expected,
      instanceCpu: servers.map(
        (_, i) => ((loadEnd.instanceCpu[i] ?? 0) - (loadStart.instanceCpu[i] ?? 0)) / windowSeconds,
      ),
      instanceRss: rss,
      viewersCpu: (loadEnd.viewersCpu - loadStart.viewersCpu) / windowSeconds,
      // A viewer that never showed a board counts too (open + failed = viewers).
      lost: lostStale + lostEnded + (open - Math.min(open, onFinal)),
      lostEnded,
      lostStale,
      staleAtSettle,
      convergedMs,
    };
  } finally {
    for (const child of viewerChildren) child.kill("SIGKILL");
    for (const session of sessions) session.abort();
    await Promise.all(servers.map((s) => s.stop()));
  }
}

function parseSettings(args: string[]): (Settings & { instances: number[] }) | undefined {
  const { values } = parseArgs({
    args,
    options: {
      wagers: { type: "string", default: "50000000" },
      instances: { type: "string", default: "1,2,3" },
      boards: { type: "string", default: "300" },
      viewers: { type: "string", default: "2000" },
      "wager-rate": { type: "string", default: "300" },
      batch: { type: "string", default: "100-1000" },
      "post-rate": { type: "string", default: "50" },
      "void-share": { type: "string", default: "0.02" },
      seconds: { type: "string", default: "30" },
      redis: { type: "string", default: "redis://127.0.0.1:6379" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help === true) return undefined;
  const [batchMin, batchMax = batchMin] = String(values.batch).split("-").map(Number);
  const settings = {
    wagers: Number(values.wagers),
    instances: String(values.instances).split(",").map(Number),
    boards: Number(values.boards),
    viewers: Number(values.viewers),
    wagerRate: Number(values["wager-rate"]),
    batchMin: Number(batchMin),
    batchMax: Number(batchMax),
    postRate: Number(values["post-rate"]),
    voidShare: Number(values["void-share"]),
    seconds: Number(values.seconds),
    redisUrl: String(values.redis),
  };
  const whole = (n: number, min: number, max: number) => Number.isInteger(n) && n >= min && n <= max;
  if (!settings.instances.every((n) => whole(n, 1, 10))) throw new Error("--instances must be counts from 1 to 10");
  if (!whole(settings.boards, 1, 100_000)) throw new Error("--boards must be a whole number from 1");
  if (!whole(settings.viewers, 0, 200_000)) throw new Error("--viewers must be a whole number from 0");
  if (!(settings.wagerRate > 0)) throw new Error("--wager-rate must be above 0");
  if (!whole(settings.batchMin, 2, 1000) || !whole(settings.batchMax, settings.batchMin, 1000)) {
    // One RecordWagers call holds 1,000 wagers at most, the pacer wagers included.
    throw new Error("--batch must be MIN-MAX from 2 to 1000 wagers per call");
  }
  if (!(settings.postRate >= 0)) throw new Error("--post-rate must be 0 or more");
  if (!(settings.voidShare >= 0 && settings.voidShare <= 1)) throw new Error("--void-share must be from 0 to 1");
  if (!whole(settings.seconds, 1, 600)) throw new Error("--seconds must be a whole number from 1 to 600");
  const redis = new URL(settings.redisUrl);
  if (redis.hostname !== "127.0.0.1" && redis.hostname !== "localhost") throw new Error("--redis must be local");
  return settings;
}

export async function runFleetBench(args: string[]): Promise<void> {
  const settings = parseSettings(args);
  if (settings === undefined) {
    process.stdout.write(`usage: npm run bench -- ${FLEET_USAGE}\n`);
    return;
  }
  const url = databaseUrl(settings.wagers);
  if (!["127.0.0.1", "localhost"].includes(new URL(url).hostname)) throw new Error("the bench database must be local");
  await ensureSeeded(url, settings.wagers);
  const data = await describeDataset(url);
  const { database, ...server } = connectionOptions(url);
  const admin = await mysql.createConnection(server);
  let undoAccount: (() => Promise<void>) | undefined;
  try {
    undoAccount = await ownAccount(admin, database);
    const [rows] = await data.db.read.query<mysql.RowDataPacket[]>(
      `SELECT a.id, a.external_id, COUNT(*) AS n FROM users u JOIN affiliates a ON a.id = u.affiliate_id
        WHERE u.external_id NOT LIKE 'fleet-%' GROUP BY a.id, a.external_id ORDER BY n DESC, a.id`,
    );
    const all: Affiliate[] = rows.map((r) => ({
      id: Number(r.id),
      externalId: String(r.external_id),
      users: Number(r.n),
      userIds: [],
      key: "",
      pacer: `fleet-pacer-${Number(r.id)}`,
    }));
    const boards = drawBoards(all, settings.boards, Math.floor(Date.now() / 1000));
    const affiliates = [...new Set(boards.map((b) => b.affiliate))];
    for (const affiliate of affiliates) {
      const [users] = await data.db.read.query<mysql.RowDataPacket[]>(
        "SELECT external_id FROM users WHERE affiliate_id = ? AND external_id NOT LIKE 'fleet-%' ORDER BY id LIMIT 2000",
        [affiliate.id],
      );
      affiliate.userIds = users.map((u) => String(u.external_id));
      const key = generateApiKey();
      await insertApiKey(data.db.write, {
        id: key.id,
        hash: key.hash,
        affiliateExternalId: affiliate.externalId,
        label: KEY_LABEL,
        rateLimit: null,
      });
      affiliate.key = key.secret;
    }
    const loadBefore = os.loadavg();
    const results: RunResult[] = [];
    for (const instances of settings.instances) {
      results.push(await runOnce(instances, settings, url, boards, affiliates, admin));
    }
    const loadAfter = os.loadavg();
    const sizes = affiliates.map((a) => a.users).sort((x, y) => y - x);
    const count = (p: Board["period"] | number | string) =>
      boards.filter((b) => b.period === p || b.numUsers === p || b.rankBy === p).length;
    const ms = (list: readonly number[], p: number) => fmt(percentile(list, p), 0);
    const loads = (l: number[]) => l.map((x) => x.toFixed(2)).join(", ");
    process.stdout.write(
      [
        "",
        `command: npm run bench -- fleet --wagers ${settings.wagers} --instances ${settings.instances.join(",")} --boards ${settings.boards} --viewers ${settings.viewers} --wager-rate ${settings.wagerRate} --batch ${settings.batchMin}-${settings.batchMax} --post-rate ${settings.postRate} --void-share ${settings.voidShare} --seconds ${settings.seconds}`,
        `machine: ${await machineDescription(url)}`,
        `load average (1, 5, 15 min) before: ${loads(loadBefore)}; after: ${loads(loadAfter)}`,
        `boards: ${boards.length} over ${affiliates.length} affiliates (users: largest ${sizes[0]}, median ${sizes[Math.floor(sizes.length / 2)]}, smallest ${sizes.at(-1)}); week / half-month / month ${count("week")} / ${count("half-month")} / ${count("month")}; top 10 / 20 / 50 ${count(10)} / ${count(20)} / ${count(50)}; weighted ${count("weighted")}`,
        `setup: every instance with REDIS_URL=${settings.redisUrl} (wake-ups), viewers SSE over HTTP/1.1 in ${Math.max(1, Math.ceil(settings.viewers / VIEWERS_PER_PROCESS))} process(es), wagers round-robin over the instances' internal listeners (gRPC), at most ${MAX_BATCHES_IN_FLIGHT} batches and ${MAX_POSTS_IN_FLIGHT} POSTs in flight; all on the same cores as MariaDB`,
        "servers' DB CPU and SELECTs: information_schema.USER_STATISTICS (CPU_TIME, SELECT_COMMANDS) of the account only the bench's servers use; whole mariadbd = utime+stime from /proc and Com_select, other users of the server included; idle = the same processes and viewers for 5 s with no load",
        "lost = viewers whose last board still differs from a fresh POST of it up to 30 s after the load (checked every 3 s), plus streams that ended",
        "",
        table(
          [
            "instances",
            "viewers open",
            "wagers/s (batches, voided)",
            "POST/s",
            "servers' DB CPU s/s idle → load",
            "servers' SELECT/s idle → load",
            "servers' SELECTs per batch",
            "whole mariadbd CPU s/s idle → load",
            "whole Com_select/s idle → load",
            "recomputes/s idle → load",
            "computations/s under load: full / incremental / remote (fallbacks)",
            "feed reads/s idle → load",
            "push p50 / p99 / max ms",
            "deliveries",
            "POST p50 / p99 ms (errors)",
            "instance CPU %",
            "instance RSS MiB",
            "viewers CPU %",
            "stale 3 s after the load",
            "lost (stale / ended)",
          ],
          results.map((r) => [
            r.instances,
            `${r.open}${r.failed > 0 ? ` (${r.failed} failed)` : ""}`,
            `${fmt(r.wagersPerSecond, 0)} (${r.batches}, ${r.voided})`,
            fmt(r.postsPerSecond, 1),
            `${fmt(r.idle.ourCpu)} → ${fmt(r.load.ourCpu)}`,
            `${fmt(r.idle.ourSelects, 0)} → ${fmt(r.load.ourSelects, 0)}`,
            fmt(((r.load.ourSelects - r.idle.ourSelects) * r.windowSeconds) / r.batches, 0),
            `${fmt(r.idle.dbCpu)} → ${fmt(r.load.dbCpu)}`,
            `${fmt(r.idle.selects, 0)} → ${fmt(r.load.selects, 0)}`,
            `${fmt(r.idle.recomputes, 1)} → ${fmt(r.load.recomputes, 1)}`,
            `${[r.load.computations.full, r.load.computations.incremental, r.load.computations.remote]
              .map((n) => (Number.isNaN(n) ? "–" : fmt(n, 1)))
              .join(
                " / ",
              )} (${Number.isNaN(r.load.computations.fallbacks) ? "–" : fmt(r.load.computations.fallbacks, 1)})`,
            `${fmt(r.idle.computations.feedPolls, 1)} → ${fmt(r.load.computations.feedPolls, 1)}`,
            `${ms(r.latencies, 50)} / ${ms(r.latencies, 99)} / ${fmt(r.latencies.at(-1) ?? Number.NaN, 0)}`,
            `${r.latencies.length} of ${r.expected}`,
            `${ms(r.postLatencies, 50)} / ${ms(r.postLatencies, 99)} (${r.postErrors})`,
            r.instanceCpu.map((c) => fmt(c * 100, 0)).join(" / "),
            r.instanceRss.map((m) => fmt(m, 0)).join(" / "),
            fmt(r.viewersCpu * 100, 0),
            r.staleAtSettle,
            `${r.lost} (${r.lostStale} / ${r.lostEnded}) at ${fmt(r.convergedMs / 1000, 0)} s`,
          ]),
        ),
        "",
      ].join("\n"),
    );
  } finally {
    await data.db.write.query("DELETE FROM api_keys WHERE label = ?", [KEY_LABEL]).catch(() => undefined);
    await undoAccount?.().catch((error: unknown) =>
      process.stderr.write(`cannot undo the bench account: ${String(error)}\n`),
    );
    await admin.end();
    await data.db.close();
  }
}
