/** Shared pieces of the benchmarks: machine description, child servers and their environment, percentiles, tables. */
import { type ChildProcess, spawn } from "node:child_process";
import os from "node:os";
import mysql from "mysql2/promise";
import { connectionOptions } from "../src/platform/database/database.js";

export async function machineDescription(databaseUrl: string): Promise<string> {
  let server = "unknown";
  try {
    const { database: _database, ...options } = connectionOptions(databaseUrl);
    const connection = await mysql.createConnection(options);
    const [rows] = await connection.query<mysql.RowDataPacket[]>(
      "SELECT VERSION() AS v, @@innodb_buffer_pool_size AS pool, @@innodb_flush_log_at_trx_commit AS flush",
    );
    const pool = Number(rows[0]?.pool ?? 0) / 2 ** 20;
    server = `${String(rows[0]?.v ?? "unknown")} (innodb_buffer_pool_size ${pool} MiB, innodb_flush_log_at_trx_commit ${String(rows[0]?.flush)})`;
    await connection.end();
  } catch {
    // Reported as unknown.
  }
  const cpu = os.cpus()[0]?.model ?? "unknown CPU";
  return `${os.cpus().length} cores (${cpu}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${server}`;
}

/**
 * The environment of a topwagers server a benchmark measures: any free port (the "listening" lines, logged at
 * info, say which), the bench database, answers cached for the whole run and a rate limit no run reaches.
 */
export function measuredServerEnv(databaseUrl: string, more: Record<string, string> = {}): Record<string, string> {
  return {
    PORT: "0",
    HOST: "127.0.0.1",
    DATABASE_URL: databaseUrl,
    CACHE_TTL_MS: "600000",
    RATE_LIMIT_POINTS: "1000000000",
    INTERNAL_PORT: "0",
    LOG_LEVEL: "info",
    ...more,
  };
}

export interface ChildOptions {
  /** Which JSON line carries the port to use (default: the first with a port). */
  readonly isListening?: (line: { port?: number; msg?: string }) => boolean;
  /** Options for Node itself, e.g. --cpu-prof. */
  readonly nodeArgs?: readonly string[];
  /** A command that runs Node, e.g. ["valgrind", "--tool=callgrind"]; the child's pid is then that command's. */
  readonly wrapper?: readonly string[];
  /** Sees every JSON line the child prints (stdout or stderr). */
  readonly onLine?: (line: Record<string, unknown>) => void;
}

export interface Child {
  readonly child: ChildProcess;
  readonly port: number;
  stop(): Promise<void>;
}

/** Children started by startChild and still running: stopped if the bench itself is interrupted. */
const running = new Set<ChildProcess>();
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    for (const child of running) child.kill("SIGTERM");
    process.exit(128 + (signal === "SIGINT" ? 2 : 15));
  });
}

/** Starts `node <script>` and resolves once it prints a JSON line with a port (or the topwagers listen log). */
export function startChild(script: string, env: Record<string, string>, options: ChildOptions = {}): Promise<Child> {
  const { isListening = () => true, nodeArgs = [], wrapper = [], onLine } = options;
  const command = [...wrapper, process.execPath, ...nodeArgs, script];
  return new Promise((resolve, reject) => {
    const child = spawn(command[0] as string, command.slice(1), {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    running.add(child);
    child.once("exit", () => running.delete(child));
    let settled = false;
    const said = new LastLines();
    const onData = (chunk: Buffer) => {
      for (const line of chunk.toString("utf8").split("\n")) {
        said.add(line);
        if (!line.startsWith("{")) continue;
        let parsed: { port?: number; msg?: string };
        try {
          parsed = JSON.parse(line) as { port?: number; msg?: string };
        } catch {
          continue; // Not a JSON line.
        }
        onLine?.(parsed);
        if (settled || typeof parsed.port !== "number" || !isListening(parsed)) continue;
        settled = true;
        resolve({
          child,
          port: parsed.port,
          stop: () =>
            new Promise<void>((done) => {
              if (child.exitCode !== null || child.signalCode !== null) return done();
              child.once("exit", () => done());
              child.kill("SIGTERM");
            }),
        });
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => {
      if (!settled) reject(new Error(`${script} exited with ${code} before listening${said.shown()}`));
    });
  });
}

/** Nearest-rank percentile of already sorted numbers. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}

export function table(headers: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const line = (cells: readonly (string | number)[]) => `| ${cells.join(" | ")} |`;
  return [line(headers), line(headers.map(() => "---")), ...rows.map(line)].join("\n");
}

export const fmt = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");

/** A topwagers server process (`dist/src/main.js`) on free ports, with both listeners' addresses. */
export interface ServerInstance {
  readonly child: ChildProcess;
  readonly publicUrl: string;
  readonly internalUrl: string;
  stop(): Promise<void>;
}

export function startServerProcess(
  databaseUrl: string,
  env: Record<string, string> = {},
  /** A command that runs node, e.g. ["prlimit", "--nofile=20000:20000"]. */
  prefix: readonly string[] = [],
): Promise<ServerInstance> {
  const script = new URL("../src/main.js", import.meta.url).pathname;
  const [command, ...args] = [...prefix, process.execPath, script];
  const child = spawn(command as string, args, {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: "0",
      HOST: "127.0.0.1",
      INTERNAL_PORT: "0",
      INTERNAL_HOST: "127.0.0.1",
      RATE_LIMIT_POINTS: "10000000",
      LOG_LEVEL: "info",
      ...env,
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  return new Promise((resolve, reject) => {
    let buffered = "";
    const said = new LastLines();
    let publicPort: number | undefined;
    let internalPort: number | undefined;
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      buffered += chunk;
      for (let newline = buffered.indexOf("\n"); newline >= 0; newline = buffered.indexOf("\n")) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        said.add(line);
        try {
          const parsed = JSON.parse(line) as { msg?: string; port?: number };
          if (parsed.msg?.startsWith("internal listener")) internalPort = parsed.port;
          if (parsed.msg?.startsWith("topwagers listening")) publicPort = parsed.port;
        } catch {
          continue;
        }
        if (publicPort !== undefined && internalPort !== undefined) {
          resolve({
            child,
            publicUrl: `http://127.0.0.1:${publicPort}`,
            internalUrl: `http://127.0.0.1:${internalPort}`,
            stop: () =>
              new Promise<void>((done) => {
                child.once("exit", () => done());
                child.kill("SIGTERM");
              }),
          });
        }
      }
    });
    child.once("exit", (code) =>
      reject(new Error(`server exited with ${code} before listening${said.shown(buffered)}`)),
    );
  });
}

/**
 * The last lines a child process wrote, to say why it exited before listening (a prlimit that refused a limit above
 * the machine's hard limit, a port in use, a bad setting) instead of only its exit code.
 */
class LastLines {
  private readonly lines: string[] = [];

  constructor(private readonly keep = 20) {}

  add(line: string): void {
    if (line.trim() === "") return;
    this.lines.push(line);
    if (this.lines.length > this.keep) this.lines.shift();
  }

  /** The lines as the tail of an error message ("" when it said nothing). */
  shown(unfinished = ""): string {
    const lines = unfinished.trim() === "" ? this.lines : [...this.lines, unfinished];
    return lines.length === 0 ? "" : `; it said:\n${lines.join("\n")}`;
  }
}

/** A wager's amount in 10^-8 units: log-normal around $3 (σ 1.2), at least $0.01, from two draws of `next`. */
export function logNormalUnits(next: () => number): number {
  return Math.max(
    1_000_000,
    Math.round(3e8 * Math.exp(1.2 * Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next()))),
  );
}
