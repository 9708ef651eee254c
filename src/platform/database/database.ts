/**
 * Connection pools for MySQL 8 / MariaDB 10.11+.
 *
 * Money stays exact: mysql2 returns DECIMAL columns as strings (its default,
 * kept on purpose), and BIGINT as strings too, so nothing passes through a
 * JavaScript number that could round it.
 */

import type { Pool, PoolOptions } from "mysql2/promise";
import mysql from "mysql2/promise";
import { poolConnectionIds } from "../compat/mysql2.js";
import { classifyDatabaseError } from "./database-errors.js";
import { NodeSet, routedPool } from "./node-set.js";
import { ReplicaReads } from "./replicas.js";

export interface DatabaseOptions {
  /** One URL or several, comma-separated, in order of preference (see node-set.ts). */
  readonly url: string;
  readonly poolSize: number;
  /** Per-statement limit on the read pool, so a pathological query cannot pin the server. */
  readonly queryTimeoutMs?: number;
  /** Read replicas for leaderboard queries (replicas.ts). */
  readonly readUrls?: readonly string[];
  /** How long a leaderboard read waits for a replica to catch up; default 500 ms. */
  readonly replicaWaitMs?: number;
  /** PEM CA: connect with TLS and verify the server's certificate and name. */
  readonly tlsCa?: string | undefined;
  /** How long opening a connection may take; default 3 s. */
  readonly connectTimeoutMs?: number;
  /** How long a node probe or a replica connection may take before that node counts as down; default 1 s. */
  readonly probeTimeoutMs?: number;
  /** Told when the node in use changes or a replica is skipped. */
  readonly onEvent?: (event: string, details: Record<string, unknown>) => void;
}

export interface Database {
  /**
   * Short read queries of the public API on the primary side (keys, change feed, readiness);
   * statement timeout applied. With read replicas, a replica answers while the primary is down.
   */
  readonly read: Pool;
  /** Writes, migrations and maintenance; no statement timeout. */
  readonly write: Pool;
  /** Leaderboard queries: a caught-up read replica, or a pool of their own on the primary when there are none. */
  readonly leaderboard: Pool;
  readonly name: string;
  readonly flavour: "mariadb" | "mysql";
  /** Index (in DATABASE_URL) of the node in use. */
  currentNode(): number;
  /** Probes every node now (tests, and after a failure). */
  probeNodes(): Promise<void>;
  /** The server's ids of every connection this process holds, in every pool (what it registers: schema/instance-registry.ts). */
  connectionIds(): number[];
  close(): Promise<void>;
}

/** The URLs of a comma-separated DATABASE_URL / DATABASE_READ_URL, in order. */
export function splitUrls(urls: string): string[] {
  return urls
    .split(",")
    .map((url) => url.trim())
    .filter((url) => url !== "");
}

/** How long opening a connection may take by default (DATABASE_CONNECT_TIMEOUT_MS). */
export const DEFAULT_CONNECT_TIMEOUT_MS = 3_000;
/** How long a node probe or replica connection may take by default (DATABASE_PROBE_TIMEOUT_MS). */
export const DEFAULT_PROBE_TIMEOUT_MS = 1_000;

/**
 * Turns one database URL into mysql2 options; `?socketPath=/run/mysqld/mysqld.sock` selects a unix
 * socket. With a CA, the connection uses TLS and verifies the server's certificate and host name.
 */
export function connectionOptions(
  url: string,
  tlsCa?: string,
  connectTimeoutMs = DEFAULT_CONNECT_TIMEOUT_MS,
): PoolOptions & { database: string } {
  const parsed = new URL(splitUrls(url)[0] ?? url);
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, ""));
  if (!/^[A-Za-z0-9_]{1,64}$/.test(database)) {
    throw new Error(`DATABASE_URL must name a database of letters, digits and "_", got "${database}"`);
  }
  const socketPath = parsed.searchParams.get("socketPath") ?? undefined;
  return {
    ...(socketPath === undefined
      ? { host: parsed.hostname || "127.0.0.1", port: parsed.port === "" ? 3306 : Number(parsed.port) }
      : { socketPath }),
    user: decodeURIComponent(parsed.username || "root"),
    password: decodeURIComponent(parsed.password),
    database,
    charset: "utf8mb4_bin",
    timezone: "Z",
    supportBigNumbers: true,
    bigNumberStrings: true,
    dateStrings: true,
    // Ids and usernames live in VARBINARY columns (exact, code point ordered);
    // read every variable-length string back as UTF-8 text. BINARY(n) columns
    // (key hashes) stay Buffers.
    typeCast: (field, next) => (field.type === "VAR_STRING" ? field.string("utf8") : next()),
    connectTimeout: connectTimeoutMs,
    enableKeepAlive: true,
    multipleStatements: false,
    ...(tlsCa === undefined ? {} : { ssl: { ca: tlsCa, rejectUnauthorized: true } }),
  };
}

/** Creates the database named in the URL when it does not exist yet (a newcomer's first run). */
export async function ensureDatabaseExists(
  url: string,
  tlsCa?: string,
  connectTimeoutMs = DEFAULT_CONNECT_TIMEOUT_MS,
): Promise<void> {
  // With several nodes, the first that answers creates it (Galera replicates it; a standby gets it from its primary).
  let lastError: unknown;
  for (const node of splitUrls(url)) {
    const { database, ...options } = connectionOptions(node, tlsCa, connectTimeoutMs);
    let connection: mysql.Connection | undefined;
    try {
      connection = await mysql.createConnection(options);
      // Identifiers cannot be bound as parameters; the name was checked against [A-Za-z0-9_] above.
      await connection.query(
        `CREATE DATABASE IF NOT EXISTS ${mysql.escapeId(database)} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`,
      );
      return;
    } catch (error) {
      lastError = error;
      if (classifyDatabaseError(error) !== "node_down") throw error;
    } finally {
      await connection?.end().catch(() => undefined);
    }
  }
  throw lastError;
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const probeTimeoutMs = options.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
  const nodeOptions = splitUrls(options.url).map((url) => connectionOptions(url, options.tlsCa, connectTimeoutMs));
  const base = nodeOptions[0] ?? connectionOptions(options.url, options.tlsCa, connectTimeoutMs);
  const pools = createPools(options, nodeOptions, probeTimeoutMs);
  const flavour = await flavourOf(pools.writes);
  prepareSessions(pools, flavour, options.queryTimeoutMs);
  const nodes = await startNodeSet(nodeOptions, probeTimeoutMs, options.onEvent);
  const primaryRead = routedPool(pools.reads, nodes);
  const write = routedPool(pools.writes, nodes);
  const replicas = replicaReads(pools.replicas, primaryRead, flavour, options);
  return {
    read: replicas?.primaryFirstPool() ?? primaryRead,
    write,
    leaderboard: replicas?.pool() ?? routedPool(pools.boards, nodes),
    name: base.database,
    flavour,
    currentNode: () => nodes.current,
    probeNodes: () => nodes.probeNow(),
    connectionIds: () =>
      [...pools.reads, ...pools.boards, ...pools.writes, ...pools.replicas].flatMap(poolConnectionIds),
    async close() {
      await nodes.close();
      const all = [...pools.reads, ...pools.boards, ...pools.writes, ...pools.replicas];
      await Promise.allSettled(all.map((pool) => pool.end()));
    },
  };
}

/**
 * Per node a write pool (half the pool size, at least 2) and a read pool, and a pool per replica. Without replicas,
 * board computations get a pool of their own per node, and the read pool keeps two connections for the short reads
 * (keys, the change feed, readiness), so these never wait behind boards.
 */
interface Pools {
  readonly writes: Pool[];
  readonly reads: Pool[];
  readonly boards: Pool[];
  readonly replicas: Pool[];
}

function createPools(options: DatabaseOptions, nodeOptions: readonly PoolOptions[], probeTimeoutMs: number): Pools {
  const writeSize = Math.max(2, Math.ceil(options.poolSize / 2));
  const ownBoards = (options.readUrls ?? []).length === 0;
  const readSize = ownBoards ? Math.min(2, options.poolSize) : options.poolSize;
  return {
    writes: nodeOptions.map((node) => mysql.createPool({ ...node, connectionLimit: writeSize })),
    reads: nodeOptions.map((node) => mysql.createPool({ ...node, connectionLimit: readSize })),
    boards: ownBoards
      ? nodeOptions.map((node) => mysql.createPool({ ...node, connectionLimit: options.poolSize }))
      : [],
    replicas: (options.readUrls ?? []).map((url) =>
      mysql.createPool({
        ...connectionOptions(url, options.tlsCa, probeTimeoutMs),
        connectionLimit: options.poolSize,
      }),
    ),
  };
}

/** MariaDB or MySQL, asked of the first node that answers; MariaDB when none does. */
async function flavourOf(writes: readonly Pool[]): Promise<Database["flavour"]> {
  for (const pool of writes) {
    try {
      const [rows] = await pool.query<mysql.RowDataPacket[]>("SELECT VERSION() AS version");
      return String(rows[0]?.version ?? "").includes("MariaDB") ? "mariadb" : "mysql";
    } catch {
      // Unreachable at start-up: try the next node; serve anyway (503 until one is back), assume MariaDB.
    }
  }
  return "mariadb";
}

/**
 * Sets every new connection's session: UTC, and on the read pools the statement time limit. No statement
 * depends on the session time zone (buckets are whole-day arithmetic, ../../ingest/sql/rollups.ts; UNIX_TIMESTAMP() without
 * an argument is zone-free). Sessions are pinned to UTC all the same, so a date function in a later statement
 * or a diagnostic query reads UTC like the rest of the service.
 */
function prepareSessions(pools: Pools, flavour: Database["flavour"], queryTimeoutMs: number | undefined): void {
  for (const pool of [...pools.reads, ...pools.boards, ...pools.writes, ...pools.replicas])
    pool.pool.on("connection", (connection) => connection.query("SET time_zone = '+00:00'"));
  if (queryTimeoutMs === undefined) return;
  for (const pool of [...pools.reads, ...pools.boards, ...pools.replicas])
    pool.pool.on("connection", (connection) => {
      // MariaDB counts in seconds (max_statement_time); MySQL in milliseconds (max_execution_time, SELECT only).
      if (flavour === "mariadb") connection.query("SET SESSION max_statement_time = ?", [queryTimeoutMs / 1000]);
      else connection.query("SET SESSION max_execution_time = ?", [queryTimeoutMs]);
    });
}

/**
 * The nodes' health, probed from now on. With several nodes, one probe round first (at most about one probe
 * timeout), so the pools start on a healthy node when the first one is down.
 */
async function startNodeSet(
  nodeOptions: readonly PoolOptions[],
  probeTimeoutMs: number,
  onEvent: DatabaseOptions["onEvent"],
): Promise<NodeSet> {
  const nodes = new NodeSet({
    nodes: nodeOptions,
    probeTimeoutMs,
    onSwitch: (from, to) => onEvent?.("database node changed", { from, to }),
  });
  if (nodeOptions.length > 1) await nodes.probeNow();
  nodes.start();
  return nodes;
}

/** Leaderboard reads over the caught-up replicas; undefined when there are none. */
function replicaReads(
  replicas: readonly Pool[],
  primary: Pool,
  flavour: Database["flavour"],
  options: DatabaseOptions,
): ReplicaReads | undefined {
  if (replicas.length === 0) return undefined;
  return new ReplicaReads({
    primary,
    replicas: [...replicas],
    waitMs: options.replicaWaitMs ?? 500,
    flavour,
    onSkip: (replica, reason) => options.onEvent?.("read replica skipped", { replica, reason }),
  });
}
