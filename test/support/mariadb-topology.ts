/**
 * Throwaway MariaDB topologies on loopback for the data-tier tests: single
 * nodes with extra flags (TLS), a GTID primary + replica pair, and a
 * three-node Galera cluster. Each lives in its own temporary folder that the
 * `mysql` user can enter (mariadbd runs as mysql: rsync SST breaks as root),
 * listens only on 127.0.0.1 at free ports, and is stopped by PID.
 * Each flag below is the minimum a throwaway replica or Galera node on loopback needs.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import mysql from "mysql2/promise";
import {
  freePort,
  installMariaDbDataDir,
  type ServerProcess,
  sleep,
  startServerProcess,
  stopChild,
} from "./processes.js";

const run = promisify(execFile);

export interface NodeProcess {
  readonly name: string;
  readonly port: number;
  readonly dataDir: string;
  readonly args: readonly string[];
  child: ChildProcess | undefined;
  readonly pid: number | undefined;
  /** A root connection (TCP, no TLS). */
  admin(): Promise<mysql.Connection>;
  url(user: string, database: string): string;
  /** SIGKILL (a crash) and wait until the process is gone. */
  kill(): Promise<void>;
  stop(): Promise<void>;
  /** Runs mariadbd again with the same flags (plus `extra`), resolves once it accepts logins. */
  start(extra?: readonly string[]): Promise<void>;
}

/** A folder under the temp dir that the mysql user can enter; removed by `removeRoot`. */
export function makeRoot(label: string): string {
  const root = mkdtempSync(path.join(tmpdir(), `topwagers-${label}-`));
  chmodSync(root, 0o755);
  return root;
}

export function removeRoot(root: string): void {
  rmSync(root, { recursive: true, force: true });
}

/** chown -R mysql:mysql */
export async function giveToMysql(dir: string): Promise<void> {
  await run("chown", ["-R", "mysql:mysql", dir]);
}

export async function installDataDir(dataDir: string): Promise<void> {
  mkdirSync(dataDir, { recursive: true });
  await installMariaDbDataDir(dataDir, "mysql", ["--innodb-log-file-size=16M"]);
}

async function acceptsLogin(port: number): Promise<boolean> {
  try {
    const connection = await mysql.createConnection({ host: "127.0.0.1", port, user: "root", connectTimeout: 1_000 });
    await connection.end();
    return true;
  } catch {
    return false;
  }
}

/**
 * Prepares (does not start) a mariadbd on `dataDir` with the common test flags plus `args`. The
 * folder must exist and be owned by mysql.
 */
export async function defineNode(name: string, dataDir: string, args: readonly string[]): Promise<NodeProcess> {
  const port = await freePort();
  const common = [
    "--no-defaults",
    "--user=mysql",
    `--datadir=${dataDir}`,
    `--socket=${path.join(dataDir, "sock")}`,
    `--pid-file=${path.join(dataDir, "mariadbd.pid")}`,
    `--log-error=${path.join(dataDir, "error.log")}`,
    "--bind-address=127.0.0.1",
    `--port=${port}`,
    "--innodb-buffer-pool-size=64M",
    "--innodb-log-file-size=16M",
    "--innodb-flush-log-at-trx-commit=2",
    "--innodb-doublewrite=0",
  ];
  const node: NodeProcess = {
    name,
    port,
    dataDir,
    args: [...common, ...args],
    child: undefined,
    get pid() {
      return node.child?.pid;
    },
    admin: () => mysql.createConnection({ host: "127.0.0.1", port, user: "root", multipleStatements: true }),
    url: (user, database) => `mysql://${user}@127.0.0.1:${port}/${database}`,
    async kill() {
      await stopChild(node.child, "SIGKILL", 10_000);
    },
    async stop() {
      await stopChild(node.child, "SIGTERM", 15_000);
    },
    async start(extra = []) {
      const child = spawn("mariadbd", [...node.args, ...extra], { stdio: "ignore" });
      node.child = child;
      const deadline = Date.now() + 60_000;
      while (!(await acceptsLogin(port))) {
        if (child.exitCode !== null || Date.now() > deadline) {
          await stopChild(child, "SIGKILL");
          let log = "";
          try {
            // Every error line (the SST script's own say why it failed), then the end of the log.
            const text = readFileSync(path.join(dataDir, "error.log"), "utf8");
            const errors = text.split("\n").filter((line) => line.includes("[ERROR]"));
            log = `${errors.slice(0, 30).join("\n")}\n...\n${text.slice(-3000)}`;
          } catch {}
          throw new Error(`mariadbd ${name} on port ${port} did not start:\n${log}`);
        }
        await sleep(100);
      }
    },
  };
  return node;
}

/**
 * One throwaway topology of a test file: its folder, the nodes defined in it and the server processes started
 * on them. `kill()` SIGKILLs the servers, then the nodes; `remove()` does that and deletes the folder.
 */
export class Topology {
  readonly root: string;
  readonly nodes: NodeProcess[] = [];
  readonly servers: ServerProcess[] = [];

  constructor(label: string) {
    this.root = makeRoot(label);
  }

  /** `<root>/<name>`: a node's data directory. */
  dir(name: string): string {
    return path.join(this.root, name);
  }

  /** Installs a fresh data directory at `<root>/<name>`. */
  install(name: string): Promise<void> {
    return installDataDir(this.dir(name));
  }

  /** Gives the folder to the mysql user; call it once every data directory is in place. */
  giveToMysql(): Promise<void> {
    return giveToMysql(this.root);
  }

  /** Prepares (does not start) node `name` on `<root>/<name>` with the common flags plus `args`. */
  async node(name: string, args: readonly string[]): Promise<NodeProcess> {
    const node = await defineNode(name, this.dir(name), args);
    this.nodes.push(node);
    return node;
  }

  /** Starts a server process (startServerProcess) that `kill()` stops. */
  async startServer(env: Record<string, string>): Promise<ServerProcess> {
    const server = await startServerProcess(env);
    this.servers.push(server);
    return server;
  }

  async kill(): Promise<void> {
    await Promise.all(this.servers.map((server) => server.stop("SIGKILL")));
    await Promise.all(this.nodes.map((node) => node.kill()));
  }

  async remove(): Promise<void> {
    await this.kill();
    removeRoot(this.root);
  }
}

/** Polls `check` every 100 ms until it is true, or fails after `timeoutMs` with `what`. */
export async function until(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {}
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

export async function queryOne(
  node: NodeProcess,
  sql: string,
  params: unknown[] = [],
): Promise<Record<string, unknown>> {
  const connection = await node.admin();
  try {
    const [rows] = await connection.query<mysql.RowDataPacket[]>(sql, params);
    return (rows[0] ?? {}) as Record<string, unknown>;
  } finally {
    await connection.end();
  }
}
