/**
 * Configuration, read once from the environment at start-up into a frozen,
 * typed object. Every bad variable is reported at once, so an operator fixes
 * them all in one go instead of one per restart.
 */

import { readFileSync } from "node:fs";
import { parseTrustedProxies } from "./transport/client-address.js";
import { DAY } from "./values/calendar.js";

export interface Config {
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
  readonly port: number;
  readonly host: string;
  /** Prefix of the REST path only, e.g. "/api"; "" when unset. */
  readonly basePath: string;
  readonly internalPort: number;
  readonly internalHost: string;
  /** A listener that serves GET /metrics alone (METRICS_PORT); undefined: /metrics is on the internal listener. */
  readonly metrics: { readonly port: number; readonly host: string } | undefined;
  /** ACCESS_LOG=true: one info line per call (procedure or path, protocol, code, duration, key id, client). */
  readonly accessLog: boolean;
  /** Bearer token for the internal ingest service; undefined disables ingest. */
  readonly ingestToken: string | undefined;
  /** Bearer token of the ApiKeyService (partner portal); unset disables it. */
  readonly adminToken: string | undefined;
  readonly redisUrl: string | undefined;
  /**
   * The fleet this instance belongs to on REDIS_URL (FLEET_NAME): instances of one fleet share the work of computing
   * boards. Undefined: named after the database's host, port and name (server.ts).
   */
  readonly fleetName: string | undefined;
  readonly defaultAvatarUrl: string;
  readonly cacheTtlMs: number;
  /** How often the change feed is read (leaderboard/change-feed.ts). */
  readonly changeFeedPollMs: number;
  /** Cached answers are served only while the last good read of the change feed started less than this ago. */
  readonly changeFeedMaxLagMs: number;
  readonly rateLimit: { readonly points: number; readonly windowSeconds: number };
  /** Calls per RATE_LIMIT_WINDOW_S of a publishable key from one client address (default 30). */
  readonly publishableRatePoints: number;
  /** Proxies whose X-Forwarded-For / Forwarded is believed (addresses, CIDRs); empty: the TCP peer is the client. */
  readonly trustedProxies: readonly string[];
  /** Size of the MySQL read pool (the write pool gets half); see DATABASE_POOL_SIZE in docs/operations.md. */
  readonly databasePoolSize: number;
  /** Server-side limit for one read query (MariaDB max_statement_time / MySQL max_execution_time). */
  readonly queryTimeoutMs: number;
  /** How long opening a database connection may take before it fails (pools and start-up). */
  readonly databaseConnectTimeoutMs: number;
  /** How long a health probe of a database node, or a connection to a read replica, may take before that node counts as down. */
  readonly databaseProbeTimeoutMs: number;
  readonly logLevel: "debug" | "info" | "warn" | "error" | "silent";
  /** OpenTelemetry tracing: "none" (off, the default), "otlp" or "console". */
  readonly tracesExporter: TracesExporterName;
  /** The service name spans carry (OTEL_SERVICE_NAME, "topwagers" unless set). */
  readonly tracesServiceName: string;
  /** Outgoing webhooks (docs/webhooks.md). */
  readonly webhooks: WebhookSettings;
  /** What the retention job deletes, and how often (docs/operations.md, "Retention"). */
  readonly retention: RetentionSettings;
  /**
   * The operator's name (ISSUER), e.g. "https://casino.example": every signature carries it as `iss`
   * (docs/verify.md). Unset: "topwagers".
   */
  readonly issuer: string;
  /** How often the race clock runs (starts, ends, the freeze; src/races/races.ts tick), in ms. */
  readonly raceClockMs: number;
  /** Most scheduled and live races one affiliate may have (RACES_PER_AFFILIATE); a create beyond is refused. */
  readonly racesPerAffiliate: number;
  /** Live-board streams: heartbeat interval and the limits of open streams. */
  readonly streams: {
    readonly heartbeatSeconds: number;
    readonly perKey: number;
    readonly perAddress: number;
    readonly total: number;
  };
}

export type TracesExporterName = "none" | "otlp" | "console";

export interface WebhookSettings {
  /** WEBHOOK_DELIVERY=false: this instance sends no webhooks (the others do); default true. */
  readonly delivery: boolean;
  /** true: receivers on private, loopback and link-local addresses, and plain http, are allowed (development, tests). */
  readonly allowPrivateUrls: boolean;
  /** The 32-byte AES-256-GCM key that encrypts signing secrets at rest; undefined: stored unencrypted. */
  readonly secretKey: Buffer | undefined;
  /** WEBHOOK_SECRET_KEY_PREVIOUS: keys that sealed secrets before the current one (they open, never seal). */
  readonly previousSecretKeys?: readonly Buffer[];
  /** Multiplies the retry schedule (5 s … 24 h) and the 5-day disable rule; 1 in production. */
  readonly retryScale: number;
  /** Deadline of one delivery attempt, milliseconds. */
  readonly timeoutMs: number;
  /** How often an idle instance looks for due deliveries, milliseconds. */
  readonly pollMs: number;
  /**
   * Most endpoints one affiliate may have (WEBHOOK_ENDPOINTS_PER_AFFILIATE); a create beyond is refused. It also
   * bounds what one event (a race's state change) fans out to: one delivery per endpoint.
   */
  readonly endpointsPerAffiliate: number;
  /** SendTestEvent and RedeliverWebhook calls per endpoint per minute (WEBHOOK_MANUAL_SENDS_PER_MINUTE). */
  readonly manualSendsPerMinute: number;
}

export interface RetentionSettings {
  /** WEBHOOK_DELIVERED_RETENTION_DAYS: delivered webhook deliveries (and attempts, events) kept this long; 0 forever. */
  readonly deliveredDays: number;
  /** WEBHOOK_FAILED_RETENTION_DAYS: failed deliveries kept this long, for redelivery; 0 forever. */
  readonly failedDays: number;
  /** RETENTION_EVERY_S: how often this instance runs the job (one instance at a time runs it); 0: never here. */
  readonly everySeconds: number;
}

/**
 * The exporter OTEL_TRACES_EXPORTER asks for ("none" when unset or OTEL_SDK_DISABLED=true), or the
 * problem with its value.
 */
export function readTracesExporter(env: Env): TracesExporterName | { readonly problem: string } {
  if ((env.OTEL_SDK_DISABLED ?? "").toLowerCase() === "true") return "none";
  const value = (env.OTEL_TRACES_EXPORTER ?? "").trim().toLowerCase();
  if (value === "" || value === "none") return "none";
  if (value === "otlp" || value === "console") return value;
  return { problem: `OTEL_TRACES_EXPORTER must be none, otlp or console, got "${env.OTEL_TRACES_EXPORTER}"` };
}

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

export const DEFAULT_DATABASE_URL = "mysql://root@127.0.0.1:3306/topwagers";
export const DEFAULT_AVATAR_URL = "https://www.gravatar.com/avatar/?d=mp&s=256";

type Env = Readonly<Record<string, string | undefined>>;

/**
 * The settings from the environment. Each one is read in turn and its problem, if any, is listed in that
 * order; all of them are thrown together as a ConfigError.
 */
export function loadConfig(env: Env = process.env): Config {
  const read = new EnvReader(env);
  const basePath = readBasePath(read);
  const tokens = readTokens(read);
  const logLevel = readLogLevel(read);
  const database = readDatabaseLocation(read);
  const tracing = readTracing(read, env);
  const trustedProxies = readTrustedProxies(read);
  const migrateOnStart = read.boolean("MIGRATE_ON_START", true);
  const webhooks = readWebhookSettings(read);
  const accessLog = read.boolean("ACCESS_LOG", false);
  const replicaWaitMs = read.integer("DATABASE_REPLICA_WAIT_MS", 500, 0, 60_000);
  const config: Config = {
    ...database,
    replicaWaitMs,
    migrateOnStart,
    ...readListeners(read),
    basePath,
    accessLog,
    ...tokens,
    redisUrl: read.url("REDIS_URL", undefined, ["redis:", "rediss:"]),
    fleetName: read.optional("FLEET_NAME"),
    defaultAvatarUrl: read.url("DEFAULT_AVATAR_URL", DEFAULT_AVATAR_URL, ["http:", "https:"]) ?? DEFAULT_AVATAR_URL,
    ...readCaching(read),
    ...readRateLimits(read),
    trustedProxies,
    ...readDatabaseLimits(read),
    logLevel,
    ...tracing,
    webhooks,
    retention: readRetention(read),
    issuer: read.text("ISSUER", "topwagers").trim(),
    raceClockMs: read.integer("RACE_CLOCK_MS", 1_000, 100, 60_000),
    racesPerAffiliate: read.integer("RACES_PER_AFFILIATE", 50, 1, 100_000),
    streams: readStreamLimits(read),
  };
  checkChangeFeedLag(read, config);
  if (read.problems.length > 0) throw new ConfigError(read.problems);
  return Object.freeze(config);
}

/** Reads variables of one environment, each with its fallback, and collects what is wrong with them. */
class EnvReader {
  readonly problems: string[] = [];

  constructor(private readonly env: Env) {}

  problem(message: string): void {
    this.problems.push(message);
  }

  /** The variable's value; the fallback when it is unset or "". */
  text(name: string, fallback: string): string {
    const value = this.env[name];
    return value === undefined || value === "" ? fallback : value;
  }

  /** The variable's value; undefined when it is unset or "". */
  optional(name: string): string | undefined {
    return this.text(name, "") || undefined;
  }

  integer(name: string, fallback: number, min: number, max: number): number {
    const raw = this.env[name];
    if (raw === undefined || raw === "") return fallback;
    if (!/^\d+$/.test(raw.trim()) || Number(raw) < min || Number(raw) > max) {
      this.problem(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
      return fallback;
    }
    return Number(raw);
  }

  boolean(name: string, fallback: boolean): boolean {
    const raw = this.text(name, String(fallback));
    if (raw !== "true" && raw !== "false") this.problem(`${name} must be true or false, got "${raw}"`);
    return raw === "true" || (raw !== "false" && fallback);
  }

  /** A URL of one of the protocols (written "redis:"); undefined when unset and without fallback. */
  url(name: string, fallback: string | undefined, protocols: readonly string[]): string | undefined {
    const raw = this.text(name, fallback ?? "");
    if (raw === "") return undefined;
    try {
      const parsed = new URL(raw);
      if (!protocols.includes(parsed.protocol)) {
        this.problem(`${name} must be a ${protocols.join(" or ")} URL, got "${redact(raw)}"`);
      }
    } catch {
      this.problem(`${name} is not a valid URL: "${redact(raw)}"`);
    }
    return raw;
  }
}

/** BASE_PATH without its trailing slashes. */
function readBasePath(read: EnvReader): string {
  const basePath = read.text("BASE_PATH", "").replace(/\/+$/, "");
  if (basePath !== "" && !/^\/[A-Za-z0-9._~\-/]*$/.test(basePath)) {
    read.problem(`BASE_PATH must start with "/" and hold only URL path characters, got "${basePath}"`);
  }
  return basePath;
}

/** The bearer tokens of the ingest service and the ApiKeyService: long enough, and not the same. */
function readTokens(read: EnvReader): Pick<Config, "ingestToken" | "adminToken"> {
  const ingestToken = read.optional("INGEST_TOKEN");
  if (ingestToken !== undefined && ingestToken.length < 16) {
    read.problem("INGEST_TOKEN must be at least 16 characters (use: openssl rand -hex 32)");
  }
  const adminToken = read.optional("ADMIN_TOKEN");
  if (adminToken !== undefined && adminToken.length < 16) {
    read.problem("ADMIN_TOKEN must be at least 16 characters (use: openssl rand -hex 32)");
  }
  if (adminToken !== undefined && adminToken === ingestToken) {
    read.problem("ADMIN_TOKEN must differ from INGEST_TOKEN (the ingest platform must not be able to issue keys)");
  }
  return { ingestToken, adminToken };
}

const LOG_LEVELS: readonly string[] = ["debug", "info", "warn", "error", "silent"];

function readLogLevel(read: EnvReader): Config["logLevel"] {
  const logLevel = read.text("LOG_LEVEL", "info");
  if (!LOG_LEVELS.includes(logLevel)) {
    read.problem(`LOG_LEVEL must be one of debug, info, warn, error, silent, got "${logLevel}"`);
  }
  return logLevel as Config["logLevel"];
}

/** Where the database is: the primary's URLs, the replicas' (all naming one database), and the CA to trust. */
function readDatabaseLocation(
  read: EnvReader,
): Pick<Config, "databaseUrl" | "databaseReadUrls" | "databaseTlsCa" | "databaseTlsCaPath"> {
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
function readCaFile(read: EnvReader, path: string): string | undefined {
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

function readTracing(read: EnvReader, env: Env): Pick<Config, "tracesExporter" | "tracesServiceName"> {
  const exporter = readTracesExporter(env);
  if (typeof exporter !== "string") read.problem(exporter.problem);
  return {
    tracesExporter: typeof exporter === "string" ? exporter : "none",
    tracesServiceName: read.text("OTEL_SERVICE_NAME", "topwagers"),
  };
}

function readTrustedProxies(read: EnvReader): readonly string[] {
  const text = read.text("TRUSTED_PROXIES", "");
  for (const problem of parseTrustedProxies(text).problems) read.problem(problem);
  return text
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
}

function readRetention(read: EnvReader): RetentionSettings {
  return {
    deliveredDays: read.integer("WEBHOOK_DELIVERED_RETENTION_DAYS", 30, 0, 36_500),
    failedDays: read.integer("WEBHOOK_FAILED_RETENTION_DAYS", 90, 0, 36_500),
    everySeconds: read.integer("RETENTION_EVERY_S", 600, 0, 86_400),
  };
}

function readWebhookSettings(read: EnvReader): WebhookSettings {
  return {
    delivery: read.boolean("WEBHOOK_DELIVERY", true),
    allowPrivateUrls: read.boolean("WEBHOOK_ALLOW_PRIVATE_URLS", false),
    secretKey: webhookSecretKey(read.text("WEBHOOK_SECRET_KEY", ""), read.problems),
    previousSecretKeys: read
      .text("WEBHOOK_SECRET_KEY_PREVIOUS", "")
      .split(",")
      .filter((one) => one.trim() !== "")
      .map((one) => webhookSecretKey(one, read.problems, "each of WEBHOOK_SECRET_KEY_PREVIOUS"))
      .filter((key): key is Buffer => key !== undefined),
    retryScale: positiveFactor("WEBHOOK_RETRY_SCALE", read.text("WEBHOOK_RETRY_SCALE", "1"), read.problems),
    timeoutMs: read.integer("WEBHOOK_TIMEOUT_MS", 15_000, 100, 60_000),
    pollMs: read.integer("WEBHOOK_POLL_MS", 1_000, 10, 60_000),
    endpointsPerAffiliate: read.integer("WEBHOOK_ENDPOINTS_PER_AFFILIATE", 20, 1, 10_000),
    manualSendsPerMinute: read.integer("WEBHOOK_MANUAL_SENDS_PER_MINUTE", 10, 1, 100_000),
  };
}

/** The public and internal listeners, and the metrics listener when METRICS_PORT is set. */
function readListeners(read: EnvReader): Pick<Config, "port" | "host" | "internalPort" | "internalHost" | "metrics"> {
  return {
    port: read.integer("PORT", 8080, 0, 65535),
    host: read.text("HOST", "0.0.0.0"),
    internalPort: read.integer("INTERNAL_PORT", 9090, 0, 65535),
    internalHost: read.text("INTERNAL_HOST", "127.0.0.1"),
    metrics:
      read.text("METRICS_PORT", "") === ""
        ? undefined
        : {
            port: read.integer("METRICS_PORT", 0, 0, 65535),
            host: read.text("METRICS_HOST", read.text("INTERNAL_HOST", "127.0.0.1")),
          },
  };
}

function readCaching(read: EnvReader): Pick<Config, "cacheTtlMs" | "changeFeedPollMs" | "changeFeedMaxLagMs"> {
  return {
    cacheTtlMs: read.integer("CACHE_TTL_MS", 10_000, 0, 3_600_000),
    changeFeedPollMs: read.integer("CHANGE_FEED_POLL_MS", 200, 10, 60_000),
    changeFeedMaxLagMs: read.integer("CHANGE_FEED_MAX_LAG_MS", 900, 100, 600_000),
  };
}

/** Cached answers are served only while the change feed lags less than its limit, so it must exceed a poll. */
function checkChangeFeedLag(read: EnvReader, config: Config): void {
  if (config.changeFeedMaxLagMs <= config.changeFeedPollMs) {
    read.problem(
      `CHANGE_FEED_MAX_LAG_MS (${config.changeFeedMaxLagMs}) must be greater than CHANGE_FEED_POLL_MS (${config.changeFeedPollMs}), or cached answers are never served`,
    );
  }
}

function readRateLimits(read: EnvReader): Pick<Config, "rateLimit" | "publishableRatePoints"> {
  return {
    rateLimit: {
      points: read.integer("RATE_LIMIT_POINTS", 60, 1, 1_000_000_000),
      windowSeconds: read.integer("RATE_LIMIT_WINDOW_S", 60, 1, DAY),
    },
    publishableRatePoints: read.integer("PUBLISHABLE_RATE_LIMIT_POINTS", 30, 1, 1_000_000_000),
  };
}

function readDatabaseLimits(
  read: EnvReader,
): Pick<Config, "databasePoolSize" | "queryTimeoutMs" | "databaseConnectTimeoutMs" | "databaseProbeTimeoutMs"> {
  return {
    databasePoolSize: read.integer("DATABASE_POOL_SIZE", 4, 1, 64),
    queryTimeoutMs: read.integer("QUERY_TIMEOUT_MS", 5_000, 100, 600_000),
    databaseConnectTimeoutMs: read.integer("DATABASE_CONNECT_TIMEOUT_MS", 3_000, 100, 600_000),
    databaseProbeTimeoutMs: read.integer("DATABASE_PROBE_TIMEOUT_MS", 1_000, 100, 600_000),
  };
}

function readStreamLimits(read: EnvReader): Config["streams"] {
  return {
    heartbeatSeconds: read.integer("STREAM_HEARTBEAT_S", 15, 1, 3600),
    perKey: read.integer("STREAM_LIMIT_PER_KEY", 10_000, 0, 10_000_000),
    perAddress: read.integer("STREAM_LIMIT_PER_ADDRESS", 20, 0, 10_000_000),
    total: read.integer("STREAM_LIMIT", 20_000, 0, 10_000_000),
  };
}

/** WEBHOOK_SECRET_KEY: 32 bytes as 64 hex digits or base64; "" is no key. Never echoed in a problem. */
function webhookSecretKey(raw: string, problems: string[], name = "WEBHOOK_SECRET_KEY"): Buffer | undefined {
  const value = raw.trim();
  if (value === "") return undefined;
  const key = /^[0-9a-fA-F]{64}$/.test(value)
    ? Buffer.from(value, "hex")
    : /^[A-Za-z0-9+/]{43}=?$/.test(value)
      ? Buffer.from(value, "base64")
      : undefined;
  if (key === undefined || key.length !== 32) {
    problems.push(`${name} must be 32 bytes as 64 hex digits or base64 (use: openssl rand -hex 32)`);
    return undefined;
  }
  return key;
}

/** A factor above 0 and at most 1000, written as a decimal number ("1", "0.001"). */
function positiveFactor(name: string, raw: string, problems: string[]): number {
  const value = Number(raw.trim());
  if (!/^\d+(\.\d+)?$/.test(raw.trim()) || !(value > 0) || value > 1000) {
    problems.push(`${name} must be a number above 0 and at most 1000, got "${raw}"`);
    return 1;
  }
  return value;
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

function databaseNameOf(rawUrl: string): string {
  try {
    return decodeURIComponent(new URL(rawUrl).pathname.replace(/^\//, ""));
  } catch {
    return "";
  }
}

/** Hides a password in a URL before it is printed. */
export function redact(rawUrl: string): string {
  if (rawUrl.includes(",")) return rawUrl.split(",").map(redact).join(",");
  try {
    const parsed = new URL(rawUrl);
    if (parsed.password !== "") parsed.password = "***";
    return parsed.toString();
  } catch {
    return rawUrl.replace(/\/\/([^:/@]+):[^@]*@/, "//$1:***@");
  }
}
