/**
 * Configuration, read once from the environment at start-up into a frozen,
 * typed object. Every bad variable is reported at once, so an operator fixes
 * them all in one go instead of one per restart.
 *
 * This file: the settings that are the whole service's (Redis and the fleet, logs, tracing, the issuer, races), and
 * loadConfig, which reads every area in one order. Each area's settings are read in ./config/ (database, serving,
 * webhooks, retention), through ./config/env-reader.ts.
 */

import { type DatabaseSettings, readDatabaseLimits, readDatabaseLocation } from "./config/database-settings.js";
import { type Env, EnvReader, redact } from "./config/env-reader.js";
import { type RetentionSettings, readRetention } from "./config/retention-settings.js";
import {
  checkChangeFeedLag,
  readBasePath,
  readCaching,
  readListeners,
  readRateLimits,
  readStreamLimits,
  readTokens,
  readTrustedProxies,
  type ServingSettings,
} from "./config/serving-settings.js";
import { readSigning, readSigningKeyFile, type SigningKeyFile } from "./config/signing-settings.js";
import { readWebhookSettings, type WebhookSettings } from "./config/webhook-settings.js";

export { DEFAULT_DATABASE_URL, urlList } from "./config/database-settings.js";
export type { Env, RetentionSettings, SigningKeyFile, WebhookSettings };
export { redact };

export interface Config extends DatabaseSettings, ServingSettings {
  readonly redisUrl: string | undefined;
  /**
   * The fleet this instance belongs to on REDIS_URL (FLEET_NAME): instances of one fleet share the work of computing
   * boards. Undefined: named after the database's host, port and name (server.ts).
   */
  readonly fleetName: string | undefined;
  readonly defaultAvatarUrl: string;
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
  /**
   * SIGNING_KEY_FILE: an Ed25519 private key the operator mounts; when set, every instance signs with it instead of
   * the database's active key (signing/core/key-file.ts). Undefined: the database's keys (the default).
   */
  readonly signingKeyFile: SigningKeyFile | undefined;
  /**
   * SIGNING: "on" (the default): results and live versions are signed, and the first server to start with no active
   * result key (and no SIGNING_KEY_FILE) makes and activates one for the fleet; "off": nothing is signed and no key
   * is made (docs/verify.md).
   */
  readonly signing: "on" | "off";
  /** How often the race clock runs (starts, ends, the freeze; src/races/core/races.ts tick), in ms. */
  readonly raceClockMs: number;
  /**
   * LOG_ORIGIN: the results log's origin (its checkpoints' first line and its key's name, docs/verify.md); unset:
   * derived from ISSUER (`https://casino.example` → `casino.example/topwagers`). Fixed once the log's key is made.
   */
  readonly logOrigin: string | undefined;
  /** How often each instance looks for new log entries to integrate and sign a checkpoint for, in ms. */
  readonly logSequenceMs: number;
  /** Most scheduled and live races one affiliate may have (RACES_PER_AFFILIATE); a create beyond is refused. */
  readonly racesPerAffiliate: number;
}

export type TracesExporterName = "none" | "otlp" | "console";

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

/**
 * Every environment variable loadConfig reads, in the order of the settings tables (README.md "Configuration",
 * docs/operations.md "Settings"); test/unit/settings-tables.test.ts holds both tables and loadConfig to this list.
 */
export const SETTINGS: readonly string[] = [
  "DATABASE_URL",
  "PORT",
  "HOST",
  "BASE_PATH",
  "INTERNAL_PORT",
  "INTERNAL_HOST",
  "INGEST_TOKEN",
  "ADMIN_TOKEN",
  "REDIS_URL",
  "FLEET_NAME",
  "RATE_LIMIT_POINTS",
  "RATE_LIMIT_WINDOW_S",
  "PUBLISHABLE_RATE_LIMIT_POINTS",
  "TRUSTED_PROXIES",
  "DEFAULT_AVATAR_URL",
  "CACHE_TTL_MS",
  "CHANGE_FEED_POLL_MS",
  "CHANGE_FEED_MAX_LAG_MS",
  "DATABASE_POOL_SIZE",
  "QUERY_TIMEOUT_MS",
  "DATABASE_CONNECT_TIMEOUT_MS",
  "DATABASE_PROBE_TIMEOUT_MS",
  "DATABASE_READ_URL",
  "DATABASE_REPLICA_WAIT_MS",
  "DATABASE_TLS_CA",
  "MIGRATE_ON_START",
  "LOG_LEVEL",
  "METRICS_PORT",
  "METRICS_HOST",
  "ACCESS_LOG",
  "OTEL_TRACES_EXPORTER",
  "OTEL_SERVICE_NAME",
  "OTEL_SDK_DISABLED",
  "WEBHOOK_DELIVERY",
  "WEBHOOK_ALLOW_PRIVATE_URLS",
  "WEBHOOK_SECRET_KEY",
  "WEBHOOK_SECRET_KEY_PREVIOUS",
  "WEBHOOK_RETRY_SCALE",
  "WEBHOOK_TIMEOUT_MS",
  "WEBHOOK_POLL_MS",
  "WEBHOOK_ENDPOINTS_PER_AFFILIATE",
  "WEBHOOK_MANUAL_SENDS_PER_MINUTE",
  "WEBHOOK_DELIVERED_RETENTION_DAYS",
  "WEBHOOK_FAILED_RETENTION_DAYS",
  "RETENTION_EVERY_S",
  "WAGER_RETENTION_DAYS",
  "HOURLY_ROLLUP_RETENTION_DAYS",
  "STREAM_HEARTBEAT_S",
  "STREAM_LIMIT_PER_KEY",
  "STREAM_LIMIT_PER_ADDRESS",
  "STREAM_LIMIT",
  "ISSUER",
  "SIGNING",
  "SIGNING_KEY_FILE",
  "RACE_CLOCK_MS",
  "RACES_PER_AFFILIATE",
  "LOG_ORIGIN",
  "LOG_SEQUENCE_MS",
];

export const DEFAULT_AVATAR_URL = "https://www.gravatar.com/avatar/?d=mp&s=256";

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
    logOrigin: readLogOrigin(read),
    logSequenceMs: read.integer("LOG_SEQUENCE_MS", 500, 50, 10_000),
    racesPerAffiliate: read.integer("RACES_PER_AFFILIATE", 50, 1, 100_000),
    streams: readStreamLimits(read),
    ...readSigningSettings(read),
  };
  checkChangeFeedLag(read, config);
  if (read.problems.length > 0) throw new ConfigError(read.problems);
  return Object.freeze(config);
}

/** SIGNING_KEY_FILE and SIGNING, the latter checked against the former. */
function readSigningSettings(read: EnvReader): Pick<Config, "signingKeyFile" | "signing"> {
  const signingKeyFile = readSigningKeyFile(read);
  return { signingKeyFile, signing: readSigning(read, signingKeyFile) };
}

/** LOG_ORIGIN, when set: a signed note's key name (non-empty, no space, no plus sign). */
function readLogOrigin(read: EnvReader): string | undefined {
  const origin = read.optional("LOG_ORIGIN")?.trim();
  if (origin !== undefined && !/^[^\s+]+$/u.test(origin)) {
    read.problem(`LOG_ORIGIN must hold no space and no plus sign (a signed note's key name), got "${origin}"`);
  }
  return origin;
}

const LOG_LEVELS: readonly string[] = ["debug", "info", "warn", "error", "silent"];

function readLogLevel(read: EnvReader): Config["logLevel"] {
  const logLevel = read.text("LOG_LEVEL", "info");
  if (!LOG_LEVELS.includes(logLevel)) {
    read.problem(`LOG_LEVEL must be one of debug, info, warn, error, silent, got "${logLevel}"`);
  }
  return logLevel as Config["logLevel"];
}

function readTracing(read: EnvReader, env: Env): Pick<Config, "tracesExporter" | "tracesServiceName"> {
  const exporter = readTracesExporter(env);
  if (typeof exporter !== "string") read.problem(exporter.problem);
  return {
    tracesExporter: typeof exporter === "string" ? exporter : "none",
    tracesServiceName: read.text("OTEL_SERVICE_NAME", "topwagers"),
  };
}
