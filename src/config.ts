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
  /** Size of the MySQL connection pool; 2–4 measured best on 2 cores. */
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
  /** How often the race clock runs (starts, ends, the freeze; src/races/races.ts tick), in ms. */
  readonly raceClockMs: number;
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
  /** Multiplies the retry schedule (5 s … 24 h) and the 5-day disable rule; 1 in production. */
  readonly retryScale: number;
  /** Deadline of one delivery attempt, milliseconds. */
  readonly timeoutMs: number;
  /** How often an idle instance looks for due deliveries, milliseconds. */
  readonly pollMs: number;
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

export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const text = (name: string, fallback: string): string => {
    const value = env[name];
    return value === undefined || value === "" ? fallback : value;
  };
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === "") return fallback;
    if (!/^\d+$/.test(raw.trim()) || Number(raw) < min || Number(raw) > max) {
      problems.push(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
      return fallback;
    }
    return Number(raw);
  };
  const url = (name: string, fallback: string | undefined, protocols: readonly string[]): string | undefined => {
    const raw = text(name, fallback ?? "");
    if (raw === "") return undefined;
    try {
      const parsed = new URL(raw);
      if (!protocols.includes(parsed.protocol)) {
        problems.push(`${name} must be a ${protocols.join(" or ")} URL, got "${redact(raw)}"`);
      }
    } catch {
      problems.push(`${name} is not a valid URL: "${redact(raw)}"`);
    }
    return raw;
  };

  const basePath = text("BASE_PATH", "").replace(/\/+$/, "");
  if (basePath !== "" && !/^\/[A-Za-z0-9._~\-/]*$/.test(basePath)) {
    problems.push(`BASE_PATH must start with "/" and hold only URL path characters, got "${basePath}"`);
  }
  const ingestToken = env.INGEST_TOKEN === undefined || env.INGEST_TOKEN === "" ? undefined : env.INGEST_TOKEN;
  if (ingestToken !== undefined && ingestToken.length < 16) {
    problems.push("INGEST_TOKEN must be at least 16 characters (use: openssl rand -hex 32)");
  }
  const adminToken = env.ADMIN_TOKEN === undefined || env.ADMIN_TOKEN === "" ? undefined : env.ADMIN_TOKEN;
  if (adminToken !== undefined && adminToken.length < 16) {
    problems.push("ADMIN_TOKEN must be at least 16 characters (use: openssl rand -hex 32)");
  }
  if (adminToken !== undefined && adminToken === ingestToken) {
    problems.push("ADMIN_TOKEN must differ from INGEST_TOKEN (the ingest platform must not be able to issue keys)");
  }
  const logLevel = text("LOG_LEVEL", "info");
  if (!["debug", "info", "warn", "error", "silent"].includes(logLevel)) {
    problems.push(`LOG_LEVEL must be one of debug, info, warn, error, silent, got "${logLevel}"`);
  }

  const databaseUrl = text("DATABASE_URL", DEFAULT_DATABASE_URL);
  const databaseUrls = urlList("DATABASE_URL", databaseUrl, problems);
  const databaseReadUrls = urlList("DATABASE_READ_URL", text("DATABASE_READ_URL", ""), problems);
  const databaseNames = new Set([...databaseUrls, ...databaseReadUrls].map(databaseNameOf).filter((n) => n !== ""));
  if (databaseNames.size > 1) {
    problems.push(
      `DATABASE_URL and DATABASE_READ_URL must all name the same database, got ${[...databaseNames].join(", ")}`,
    );
  }
  const databaseTlsCaPath = text("DATABASE_TLS_CA", "") || undefined;
  let databaseTlsCa: string | undefined;
  if (databaseTlsCaPath !== undefined) {
    try {
      databaseTlsCa = readFileSync(databaseTlsCaPath, "utf8");
      if (!databaseTlsCa.includes("-----BEGIN CERTIFICATE-----")) {
        problems.push(`DATABASE_TLS_CA must be a PEM file of CA certificates, "${databaseTlsCaPath}" holds none`);
      }
    } catch (error) {
      problems.push(`DATABASE_TLS_CA cannot be read: ${(error as Error).message}`);
    }
  }
  const tracesExporter = readTracesExporter(env);
  if (typeof tracesExporter !== "string") problems.push(tracesExporter.problem);
  const trustedProxiesText = text("TRUSTED_PROXIES", "");
  problems.push(...parseTrustedProxies(trustedProxiesText).problems);
  const boolean = (name: string, fallback: boolean): boolean => {
    const raw = text(name, String(fallback));
    if (raw !== "true" && raw !== "false") problems.push(`${name} must be true or false, got "${raw}"`);
    return raw === "true" || (raw !== "false" && fallback);
  };
  const migrateOnStart = boolean("MIGRATE_ON_START", true);
  const webhooks: WebhookSettings = {
    delivery: boolean("WEBHOOK_DELIVERY", true),
    allowPrivateUrls: boolean("WEBHOOK_ALLOW_PRIVATE_URLS", false),
    secretKey: webhookSecretKey(text("WEBHOOK_SECRET_KEY", ""), problems),
    retryScale: positiveFactor("WEBHOOK_RETRY_SCALE", text("WEBHOOK_RETRY_SCALE", "1"), problems),
    timeoutMs: integer("WEBHOOK_TIMEOUT_MS", 15_000, 100, 60_000),
    pollMs: integer("WEBHOOK_POLL_MS", 1_000, 10, 60_000),
  };
  const accessLog = boolean("ACCESS_LOG", false);

  const config: Config = {
    databaseUrl,
    databaseReadUrls,
    replicaWaitMs: integer("DATABASE_REPLICA_WAIT_MS", 500, 0, 60_000),
    databaseTlsCa,
    databaseTlsCaPath,
    migrateOnStart,
    port: integer("PORT", 8080, 0, 65535),
    host: text("HOST", "0.0.0.0"),
    basePath,
    internalPort: integer("INTERNAL_PORT", 9090, 0, 65535),
    internalHost: text("INTERNAL_HOST", "127.0.0.1"),
    metrics:
      text("METRICS_PORT", "") === ""
        ? undefined
        : {
            port: integer("METRICS_PORT", 0, 0, 65535),
            host: text("METRICS_HOST", text("INTERNAL_HOST", "127.0.0.1")),
          },
    accessLog,
    ingestToken,
    adminToken,
    redisUrl: url("REDIS_URL", undefined, ["redis:", "rediss:"]),
    defaultAvatarUrl: url("DEFAULT_AVATAR_URL", DEFAULT_AVATAR_URL, ["http:", "https:"]) ?? DEFAULT_AVATAR_URL,
    cacheTtlMs: integer("CACHE_TTL_MS", 10_000, 0, 3_600_000),
    changeFeedPollMs: integer("CHANGE_FEED_POLL_MS", 200, 10, 60_000),
    changeFeedMaxLagMs: integer("CHANGE_FEED_MAX_LAG_MS", 900, 100, 600_000),
    rateLimit: {
      points: integer("RATE_LIMIT_POINTS", 60, 1, 1_000_000_000),
      windowSeconds: integer("RATE_LIMIT_WINDOW_S", 60, 1, DAY),
    },
    publishableRatePoints: integer("PUBLISHABLE_RATE_LIMIT_POINTS", 30, 1, 1_000_000_000),
    trustedProxies: trustedProxiesText
      .split(",")
      .map((entry) => entry.trim())
      .filter((entry) => entry !== ""),
    databasePoolSize: integer("DATABASE_POOL_SIZE", 4, 1, 64),
    queryTimeoutMs: integer("QUERY_TIMEOUT_MS", 5_000, 100, 600_000),
    databaseConnectTimeoutMs: integer("DATABASE_CONNECT_TIMEOUT_MS", 3_000, 100, 600_000),
    databaseProbeTimeoutMs: integer("DATABASE_PROBE_TIMEOUT_MS", 1_000, 100, 600_000),
    logLevel: logLevel as Config["logLevel"],
    tracesExporter: typeof tracesExporter === "string" ? tracesExporter : "none",
    tracesServiceName: text("OTEL_SERVICE_NAME", "topwagers"),
    webhooks,
    raceClockMs: integer("RACE_CLOCK_MS", 1_000, 100, 60_000),
    streams: {
      heartbeatSeconds: integer("STREAM_HEARTBEAT_S", 15, 1, 3600),
      perKey: integer("STREAM_LIMIT_PER_KEY", 10_000, 0, 10_000_000),
      perAddress: integer("STREAM_LIMIT_PER_ADDRESS", 20, 0, 10_000_000),
      total: integer("STREAM_LIMIT", 20_000, 0, 10_000_000),
    },
  };
  if (config.changeFeedMaxLagMs <= config.changeFeedPollMs) {
    problems.push(
      `CHANGE_FEED_MAX_LAG_MS (${config.changeFeedMaxLagMs}) must be greater than CHANGE_FEED_POLL_MS (${config.changeFeedPollMs}), or cached answers are never served`,
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

/** WEBHOOK_SECRET_KEY: 32 bytes as 64 hex digits or base64; "" is no key. Never echoed in a problem. */
function webhookSecretKey(raw: string, problems: string[]): Buffer | undefined {
  const value = raw.trim();
  if (value === "") return undefined;
  const key = /^[0-9a-fA-F]{64}$/.test(value)
    ? Buffer.from(value, "hex")
    : /^[A-Za-z0-9+/]{43}=?$/.test(value)
      ? Buffer.from(value, "base64")
      : undefined;
  if (key === undefined || key.length !== 32) {
    problems.push("WEBHOOK_SECRET_KEY must be 32 bytes as 64 hex digits or base64 (use: openssl rand -hex 32)");
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
