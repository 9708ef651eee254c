/**
 * Real processes for the fault and scale-out tests: the built server
 * (`dist/src/main.js`), a throwaway Redis and a throwaway MariaDB, each on a
 * free loopback port. Every helper waits until its process really serves, and
 * every `stop` waits until the process is gone.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { createClient } from "@connectrpc/connect";
import mysql from "mysql2/promise";
import { WagerIngestService } from "../../gen/topwagers/v1/wager_ingest_pb.js";
import { bearerConnect } from "./calls.js";
import { followKeys } from "./fixtures.js";
import { MOVED_CLOCK, withoutMovedClock } from "./moved-clock.js";

/** The contract: a key change reaches every running server within 1 second. */
export const KEY_CHANGE_WITHIN_MS = 1_000;

export const SERVER_ENTRY = path.resolve("dist/src/main.js");

/** Ports this process has handed out already: never the same one twice. */
const handedOut = new Set<number>();

/** The first port of the system's ephemeral range (outgoing connections take their local ports from it). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 2_048) return low;
  } catch {}
  return 32_768;
}

function listensOn(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

/**
 * A loopback port for a child process to listen on: nobody listens on it now, this process has not handed it out
 * before, and it lies below the ephemeral range, so no outgoing connection of the suite (thousands, in parallel
 * files) can take it in the seconds before the child binds it. Port 0 cannot promise that: a Galera joiner's
 * SST port is bound only when the node joins, and one CI run lost node 3 that way ("Failed to prepare for
 * 'rsync' SST").
 */
export async function freePort(): Promise<number> {
  const high = ephemeralLow() - 1;
  const low = Math.max(1_024, high - 12_000);
  for (let attempt = 0; attempt < 1_000; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (handedOut.has(port)) continue;
    if (!(await listensOn(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free loopback port between ${low} and ${high}`);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Waits for a child to exit; resolves with its exit code (or the signal name), or undefined after `timeoutMs`. */
export function exited(child: ChildProcess, timeoutMs: number): Promise<number | string | undefined> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  if (child.signalCode !== null) return Promise.resolve(child.signalCode);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), timeoutMs);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      resolve(code ?? signal ?? undefined);
    });
  });
}

/** Sends `signal`, waits up to `timeoutMs`, then SIGKILLs whatever is left. Safe to call twice. */
export async function stopChild(
  child: ChildProcess | undefined,
  signal: NodeJS.Signals = "SIGTERM",
  timeoutMs = 10_000,
) {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  child.kill(signal);
  if ((await exited(child, timeoutMs)) === undefined) {
    child.kill("SIGKILL");
    await exited(child, 5_000);
  }
}

/** Resident set size of a live process in KiB, from /proc/<pid>/status. */
export function residentKiB(pid: number): number {
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (match === null) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(match[1]);
}

// ---------------------------------------------------------------- the server

export interface LogLine {
  readonly level: number | string;
  readonly msg: string;
  readonly [field: string]: unknown;
}

export interface ServerProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly port: number;
  readonly baseUrl: string;
  /** Every JSON log line written so far (stderr), in order. */
  readonly logs: LogLine[];
  /** Lines of stderr that were not JSON (should stay empty). */
  readonly otherOutput: string[];
  /** Resolves with the first log line (already written or future) that matches, or rejects after `timeoutMs`. */
  waitForLog(match: (line: LogLine) => boolean, timeoutMs?: number, from?: number): Promise<LogLine>;
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<void>;
}

/** The port of a server process's internal listener, from the log line that announces it. */
export async function internalPortOf(server: ServerProcess): Promise<number> {
  const internal = await server.waitForLog((line) => line.msg.startsWith("internal listener"));
  return Number(internal.port);
}

/** A WagerIngestService client over Connect (HTTP/1.1) on an internal port, sending `Bearer <token>`. */
export function ingestClientOn(internalPort: number, token: string) {
  return createClient(WagerIngestService, bearerConnect(`http://127.0.0.1:${internalPort}`, token));
}

/**
 * Starts `node [nodeArgs] dist/src/main.js` (the Node running the tests, i.e.
 * the project's Node 24) on PORT=0 and resolves once it logs "topwagers
 * listening on …" with the port it got.
 */
export async function startServerProcess(
  env: Record<string, string>,
  options: {
    readonly nodeArgs?: readonly string[];
    readonly startTimeoutMs?: number;
    /** The path Node is given (default: dist/src/main.js), e.g. one through a symlink. */
    readonly entry?: string;
    /** The Node binary (default: the one running the tests). */
    readonly node?: string;
    /** Arguments after the entry, e.g. ["serve"] for the CLI. */
    readonly args?: readonly string[];
  } = {},
): Promise<ServerProcess> {
  const startTimeoutMs = options.startTimeoutMs ?? 20_000;
  if (!existsSync(SERVER_ENTRY)) throw new Error(`${SERVER_ENTRY} is missing: run npm run -s build first`);
  const nodeArgs = [...(options.nodeArgs ?? []), options.entry ?? SERVER_ENTRY, ...(options.args ?? [])];
  const child = spawn(options.node ?? process.execPath, nodeArgs, {
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      ...MOVED_CLOCK,
      HOST: "127.0.0.1",
      PORT: "0",
      INTERNAL_HOST: "127.0.0.1",
      INTERNAL_PORT: "0",
      LOG_LEVEL: "info",
      ...env,
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const logs: LogLine[] = [];
  const otherOutput: string[] = [];
  const waiters = new Set<{ match: (line: LogLine) => boolean; from: number; resolve: (line: LogLine) => void }>();
  let pending = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (chunk: string) => {
    pending += chunk;
    let newline = pending.indexOf("\n");
    while (newline >= 0) {
      const text = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      newline = pending.indexOf("\n");
      if (text.trim() === "") continue;
      let line: LogLine;
      try {
        line = JSON.parse(text) as LogLine;
      } catch {
        otherOutput.push(text);
        continue;
      }
      logs.push(line);
      for (const waiter of waiters) {
        if (logs.length - 1 >= waiter.from && waiter.match(line)) {
          waiters.delete(waiter);
          waiter.resolve(line);
        }
      }
    }
  });
  const waitForLog = (match: (line: LogLine) => boolean, timeoutMs = 10_000, from = 0) => {
    const earlier = logs.slice(from).find(match);
    if (earlier !== undefined) return Promise.resolve(earlier);
    return new Promise<LogLine>((resolve, reject) => {
      const waiter = { match, from, resolve };
      const timer = setTimeout(() => {
        waiters.delete(waiter);
        reject(
          new Error(
            `no matching log line within ${timeoutMs} ms (pid ${child.pid}, exit ${child.exitCode ?? child.signalCode}); log so far:\n${logs.map((l) => JSON.stringify(l)).join("\n")}\n${otherOutput.join("\n")}`,
          ),
        );
      }, timeoutMs);
      waiter.resolve = (line) => {
        clearTimeout(timer);
        resolve(line);
      };
      waiters.add(waiter);
    });
  };
  try {
    const listening = await Promise.race([
      waitForLog((line) => line.msg.startsWith("topwagers listening on"), startTimeoutMs),
      exited(child, startTimeoutMs + 1_000).then((code) => {
        throw new Error(`server exited (${code}) before listening:\n${logs.map((l) => JSON.stringify(l)).join("\n")}`);
      }),
    ]);
    const port = Number(listening.port);
    if (!Number.isInteger(port) || port <= 0) throw new Error(`no port in ${JSON.stringify(listening)}`);
    // A key made by a test reaches this process through its change feed within the contract's second.
    const unfollow = followKeys({ caughtUp: () => sleep(KEY_CHANGE_WITHIN_MS) });
    child.once("exit", unfollow);
    return {
      child,
      pid: child.pid ?? 0,
      port,
      baseUrl: `http://127.0.0.1:${port}`,
      logs,
      otherOutput,
      waitForLog,
      stop: (signal = "SIGTERM", timeoutMs = 12_000) => stopChild(child, signal, timeoutMs),
    };
  } catch (error) {
    await stopChild(child, "SIGKILL");
    throw error;
  }
}

// ---------------------------------------------------------------- Redis

export interface RedisProcess {
  readonly port: number;
  readonly url: string;
  child: ChildProcess;
  /** Kills the server (SIGKILL: no goodbye to clients) and waits until it is gone. */
  kill(): Promise<void>;
  /** Starts a fresh, empty server on the same port. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

async function redisAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    let reply = "";
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once("error", () => done(false));
    socket.on("connect", () => socket.write("PING\r\n"));
    socket.on("data", (data) => {
      reply += data.toString("latin1");
      if (reply.includes("\r\n")) done(reply.startsWith("+PONG"));
    });
  });
}

/** `redis-server --port <free port> --save "" --appendonly no`, bound to 127.0.0.1, ready when it answers PING. */
export async function startRedis(): Promise<RedisProcess> {
  const port = await freePort();
  const launch = async () => {
    const child = spawn(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "no"],
      { stdio: "ignore", env: withoutMovedClock() },
    );
    const deadline = Date.now() + 10_000;
    while (!(await redisAnswers(port))) {
      if (child.exitCode !== null || Date.now() > deadline) {
        await stopChild(child, "SIGKILL");
        throw new Error(`redis-server on port ${port} did not start`);
      }
      await sleep(50);
    }
    return child;
  };
  const redis: RedisProcess = {
    port,
    url: `redis://127.0.0.1:${port}`,
    child: await launch(),
    async kill() {
      await stopChild(redis.child, "SIGKILL");
    },
    async restart() {
      redis.child = await launch();
    },
    async stop() {
      await stopChild(redis.child, "SIGKILL");
    },
  };
  return redis;
}

// ---------------------------------------------------------------- MariaDB

export interface MariaDbProcess {
  readonly port: number;
  readonly dataDir: string;
  /** `mysql://root@127.0.0.1:<port>/<database>` */
  url(database: string): string;
  readonly pid: number | undefined;
  /** SIGTERM mariadbd and wait until the process is gone. */
  stop(): Promise<void>;
  /** Starts mariadbd again on the same data directory and port; resolves when it accepts a login. */
  start(): Promise<void>;
  /** Stops the server and deletes the data directory. */
  destroy(): Promise<void>;
}

/** True when the MariaDB server binaries needed for a throwaway instance are installed. */
export function mariaDbAvailable(): boolean {
  const paths = (process.env.PATH ?? "")
    .split(":")
    .concat(["/usr/sbin", "/usr/bin", "/usr/local/bin", "/usr/local/sbin"]);
  const has = (name: string) => paths.some((dir) => existsSync(path.join(dir, name)));
  return has("mariadb-install-db") && has("mariadbd");
}

/** The status of one GET of `path` on a started server, which is then stopped with SIGTERM (also when the GET fails). */
export async function statusThenStop(server: ServerProcess, path: string): Promise<number> {
  try {
    return (await fetch(`${server.baseUrl}${path}`)).status;
  } finally {
    await server.stop();
  }
}

/** A fresh data directory for mariadbd, owned by `user`, root logging in without a password. */
export function installMariaDbDataDir(dataDir: string, user: string, extra: readonly string[] = []): Promise<void> {
  return run("mariadb-install-db", [
    "--no-defaults",
    `--datadir=${dataDir}`,
    `--user=${user}`,
    "--auth-root-authentication-method=normal",
    "--skip-test-db",
    ...extra,
  ]);
}

function run(command: string, args: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr?.on("data", (data: Buffer) => {
      stderr += data.toString();
    });
    child.once("error", reject);
    child.once("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} exited ${code}: ${stderr.slice(-2000)}`)),
    );
  });
}

/**
 * A throwaway MariaDB on a temporary data directory and a free port:
 * `mariadb-install-db` once, then `mariadbd`.
 */
export async function startMariaDb(): Promise<MariaDbProcess> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "topwagers-mariadb-"));
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    await mkdir(dataDir, { recursive: true });
    const started = spawn(
      "mariadbd",
      [
        "--no-defaults",
        `--datadir=${dataDir}`,
        `--port=${port}`,
        `--socket=${path.join(dataDir, "sock")}`,
        "--bind-address=127.0.0.1",
        "--user=root",
        "--skip-log-bin",
        "--innodb-buffer-pool-size=32M",
        "--innodb-log-file-size=16M",
        `--pid-file=${path.join(dataDir, "mariadbd.pid")}`,
      ],
      { stdio: "ignore" },
    );
    child = started;
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        const connection = await mysql.createConnection({
          host: "127.0.0.1",
          port,
          user: "root",
          connectTimeout: 1_000,
        });
        await connection.end();
        return;
      } catch (error) {
        if (started.exitCode !== null || Date.now() > deadline) {
          await stopChild(started, "SIGKILL");
          throw new Error(`mariadbd on port ${port} did not start: ${String(error)}`);
        }
        await sleep(100);
      }
    }
  };
  try {
    await installMariaDbDataDir(dataDir, "root");
    await start();
  } catch (error) {
    await stopChild(child, "SIGKILL");
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
  const instance: MariaDbProcess = {
    port,
    dataDir,
    url: (database) => `mysql://root@127.0.0.1:${port}/${database}`,
    get pid() {
      return child?.pid;
    },
    async stop() {
      await stopChild(child, "SIGTERM", 30_000);
    },
    start,
    async destroy() {
      await stopChild(child, "SIGKILL");
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  return instance;
}

/**
 * The built server over its own throwaway MariaDB (`startMariaDb`), on database `database` (which the server's
 * migrations create), with `env`. The MariaDB is destroyed again if the server does not start.
 */
export async function startServerOnOwnMariaDb(
  database: string,
  env: Record<string, string>,
): Promise<{ mariadb: MariaDbProcess; server: ServerProcess }> {
  const mariadb = await startMariaDb();
  try {
    return { mariadb, server: await startServerProcess({ DATABASE_URL: mariadb.url(database), ...env }) };
  } catch (error) {
    await mariadb.destroy();
    throw error;
  }
}
