/**
 * Connection pools for MySQL 8 / MariaDB 10.11+.
 *
 * Money stays exact: mysql2 returns DECIMAL columns as strings (its default,
 * kept on purpose), and BIGINT as strings too, so nothing passes through a
 * JavaScript number that could round it.
 */

import type { Pool, PoolOptions } from "mysql2/promise";
import mysql from "mysql2/promise";

export interface DatabaseOptions {
  readonly url: string;
  readonly poolSize: number;
  /** Per-statement limit on the read pool, so a pathological query cannot pin the server. */
  readonly queryTimeoutMs?: number;
}

export interface Database {
  /** Short read queries of the public API; statement timeout applied. */
  readonly read: Pool;
  /** Writes, migrations and maintenance; no statement timeout. */
  readonly write: Pool;
  readonly name: string;
  readonly flavour: "mariadb" | "mysql";
  close(): Promise<void>;
}

/** Turns a DATABASE_URL into mysql2 options; `?socketPath=/run/mysqld/mysqld.sock` selects a unix socket. */
export function connectionOptions(url: string): PoolOptions & { database: string } {
  const parsed = new URL(url);
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
    connectTimeout: 3_000,
    enableKeepAlive: true,
    multipleStatements: false,
  };
}

/** Creates the database named in the URL when it does not exist yet (a newcomer's first run). */
export async function ensureDatabaseExists(url: string): Promise<void> {
  const { database, ...options } = connectionOptions(url);
  const connection = await mysql.createConnection(options);
  try {
    // Identifiers cannot be bound as parameters; the name was checked against [A-Za-z0-9_] above.
    await connection.query(
      `CREATE DATABASE IF NOT EXISTS ${mysql.escapeId(database)} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`,
    );
  } finally {
    await connection.end();
  }
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const base = connectionOptions(options.url);
  const write = mysql.createPool({ ...base, connectionLimit: Math.max(2, Math.ceil(options.poolSize / 2)) });
  const read = mysql.createPool({ ...base, connectionLimit: options.poolSize });
  let flavour: Database["flavour"] = "mysql";
  try {
    const [rows] = await write.query<mysql.RowDataPacket[]>("SELECT VERSION() AS version");
    flavour = String(rows[0]?.version ?? "").includes("MariaDB") ? "mariadb" : "mysql";
  } catch {
    // Unreachable at start-up: serve anyway (answers 503 until it is back); assume MariaDB's dialect.
    flavour = "mariadb";
  }
  // Month buckets are computed with FROM_UNIXTIME / UNIX_TIMESTAMP: pin every session to UTC.
  for (const pool of [read, write])
    pool.pool.on("connection", (connection) => connection.query("SET time_zone = '+00:00'"));
  if (options.queryTimeoutMs !== undefined) {
    const timeoutMs = options.queryTimeoutMs;
    read.pool.on("connection", (connection) => {
      // MariaDB counts in seconds (max_statement_time); MySQL in milliseconds (max_execution_time, SELECT only).
      if (flavour === "mariadb") connection.query("SET SESSION max_statement_time = ?", [timeoutMs / 1000]);
      else connection.query("SET SESSION max_execution_time = ?", [timeoutMs]);
    });
  }
  return {
    read,
    write,
    name: base.database,
    flavour,
    async close() {
      await Promise.allSettled([read.end(), write.end()]);
    },
  };
}
