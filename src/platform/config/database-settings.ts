/**
 * The database settings: where the database is (the primary's URLs, the replicas', the CA to trust), whether the
 * server migrates it, and the pools' size and time limits.
 */

import { readFileSync } from "node:fs";
import { type EnvReader, redact } from "./env-reader.js";

export interface DatabaseSettings {
  /** One URL, or several separated by commas in order of preference (Galera nodes, a primary and its standbys). */
  readonly databaseUrl: string;
  /** Read replicas for leaderboard queries (comma-separated URLs); empty when unset. */
  readonly databaseReadUrls: readonly string[];
  /** How long a leaderboard read waits for a replica to catch up with the primary before skipping it. */
  readonly replicaWaitMs: number;
  /** PEM text of the CA that signed the database servers' certificates; TLS with verification when set. */
  readonly databaseTlsCa: string | undefined;
  /** Path of that CA file, for messages. */
  readonly databaseTlsCaPath: string | undefined;
  /** false: the server never creates the database nor runs DDL (migrate with `npm run cli -- migrate`). */
  readonly migrateOnStart: boolean;
  /** Size of the MySQL read pool (the write pool gets half); see DATABASE_POOL_SIZE in docs/operations.md. */
  readonly databasePoolSize: number;
  /** Server-side limit for one read query (MariaDB max_statement_time / MySQL max_execution_time). */
  readonly queryTimeoutMs: number;
  /** How long opening a database connection may take before it fails (pools and start-up). */
  readonly databaseConnectTimeoutMs: number;
  /** How long a health probe of a database node, or a connection to a read replica, may take before that node counts as down. */
  readonly databaseProbeTimeoutMs: number;
}

export const DEFAULT_DATABASE_URL = "mysql://root@127.0.0.1:3306/topwagers";

/** Where the database is: the primary's URLs, the replicas' (all naming one database), and the CA to trust. */
export function readDatabaseLocation(
  read: EnvReader,
): Pick<DatabaseSettings, "databaseUrl" | "databaseReadUrls" | "databaseTlsCa" | "databaseTlsCaPath"> {
  const databaseUrl = read.text("DATABASE_URL", DEFAULT_DATABASE_URL);
  const databaseUrls = urlList("DATABASE_URL", databaseUrl, read.problems);
  const databaseReadUrls = urlList("DATABASE_READ_URL", read.text("DATABASE_READ_URL", ""), read.problems);
  const databaseNames = new Set([...databaseUrls, ...databaseReadUrls].map(databaseNameOf).filter((n) => n !== ""));
  if (databaseNames.size > 1) {
    read.problem(
      `DATABASE_URL and DATABASE_READ_URL must all name the same database, got ${[...databaseNames].join(", ")}`,
    );
  }
  const databaseTlsCaPath = read.optional("DATABASE_TLS_CA");
  const databaseTlsCa = databaseTlsCaPath === undefined ? undefined : readCaFile(read, databaseTlsCaPath);
  return { databaseUrl, databaseReadUrls, databaseTlsCa, databaseTlsCaPath };
}

/** The PEM text of DATABASE_TLS_CA's file; undefined when it cannot be read. */
export function readCaFile(read: EnvReader, path: string): string | undefined {
  try {
    const pem = readFileSync(path, "utf8");
    if (!pem.includes("-----BEGIN CERTIFICATE-----")) {
      read.problem(`DATABASE_TLS_CA must be a PEM file of CA certificates, "${path}" holds none`);
    }
    return pem;
  } catch (error) {
    read.problem(`DATABASE_TLS_CA cannot be read: ${(error as Error).message}`);
    return undefined;
  }
}

export function readDatabaseLimits(
  read: EnvReader,
): Pick<
  DatabaseSettings,
  "databasePoolSize" | "queryTimeoutMs" | "databaseConnectTimeoutMs" | "databaseProbeTimeoutMs"
> {
  return {
    databasePoolSize: read.integer("DATABASE_POOL_SIZE", 4, 1, 64),
    queryTimeoutMs: read.integer("QUERY_TIMEOUT_MS", 5_000, 100, 600_000),
    databaseConnectTimeoutMs: read.integer("DATABASE_CONNECT_TIMEOUT_MS", 3_000, 100, 600_000),
    databaseProbeTimeoutMs: read.integer("DATABASE_PROBE_TIMEOUT_MS", 1_000, 100, 600_000),
  };
}

/**
 * Splits a comma-separated list of MySQL URLs (a comma inside a password is written %2C) and
 * checks each one; "" gives an empty list.
 */
export function urlList(name: string, raw: string, problems: string[]): string[] {
  if (raw.trim() === "") return [];
  const urls = raw.split(",").map((part) => part.trim());
  for (const [index, item] of urls.entries()) {
    const where = urls.length > 1 ? `${name} (URL ${index + 1})` : name;
    if (item === "") {
      problems.push(`${where} is empty; separate URLs with single commas`);
      continue;
    }
    try {
      const parsed = new URL(item);
      if (parsed.protocol !== "mysql:" && parsed.protocol !== "mariadb:") {
        problems.push(`${where} must be a mysql: or mariadb: URL, got "${redact(item)}"`);
      } else if (!/^[A-Za-z0-9_]{1,64}$/.test(databaseNameOf(item))) {
        problems.push(`${where} must name a database of letters, digits and "_", got "${redact(item)}"`);
      }
    } catch {
      problems.push(`${where} is not a valid URL: "${redact(item)}"`);
    }
  }
  return urls;
}

export function databaseNameOf(rawUrl: string): string {
  try {
    return decodeURIComponent(new URL(rawUrl).pathname.replace(/^\//, ""));
  } catch {
    return "";
  }
}
