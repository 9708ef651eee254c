/**
 * The running service: opens the database (and applies pending migrations
 * unless MIGRATE_ON_START=false), builds the public and internal apps, and
 * serves each on its one-port server. `stop()` drains both and closes every
 * pool and connection. Used by `npm start` (main.ts) and the demo.
 */
import { createHash } from "node:crypto";
import { createInternalApp, type InternalApp } from "./apps/internal.js";
import { metricsOnlyHandler } from "./apps/metrics-endpoint.js";
import { createPublicApp, type PublicApp } from "./apps/public.js";
import type { HorizonWatch } from "./ingest/sql/retention-horizon.js";
import { startFirstSigningKey } from "./jobs/first-signing-key.js";
import { startInstanceHeartbeat } from "./jobs/instance-heartbeat.js";
import { startRaceClock } from "./jobs/race-clock.js";
import { startLogSequencer } from "./jobs/results-log.js";
import { startRetention } from "./jobs/retention.js";
import { startWebhookDelivery, type WebhookDelivery, webhookAdmin } from "./jobs/webhook-delivery.js";
import { type Config, redact } from "./platform/config.js";
import { type Database, ensureDatabaseExists, openDatabase } from "./platform/database/database.js";
import { secretKeyFingerprints } from "./platform/database/secret-box.js";
import type { LimiterFactory } from "./platform/limits/rate-limiter.js";
import { createRedisLimiters } from "./platform/limits/redis-limiters.js";
import { createLogger, type Logger } from "./platform/logger.js";
import type { Metrics } from "./platform/observability/metrics.js";
import { raceClockMetrics } from "./platform/observability/race-clock-metrics.js";
import { schemaAheadWarning } from "./platform/observability/readiness.js";
import { startTracing, type Tracing } from "./platform/observability/tracing.js";
import { packageInfo } from "./platform/package-info.js";
import { type ChangeWakeups, createChangeWakeups } from "./platform/redis/change-wakeups.js";
import { createRedisFleet } from "./platform/redis/fleet.js";
import { createOnePortServer, type OnePortServer } from "./platform/transport/one-port-server.js";
import { currentSchemaVersion, migrate } from "./schema/migration-runner.js";
import { assertReleaseMayUse, ReleaseTooOldError } from "./schema/release-floor.js";
import { LATEST_SCHEMA_VERSION } from "./schema/schema-migrations.js";
import { makeFirstResultKey } from "./services/signing.js";
import type { WebhookAdmin } from "./webhooks/core/endpoint-admin.js";

/** How long the start waits for the API keys before listening anyway. */
const KEY_LOAD_WAIT_MS = 3_000;

export interface Running {
  readonly port: number;
  /** The internal listener's port (ingest). */
  readonly internalPort: number;
  /** The METRICS_PORT listener's port, when it is set. */
  readonly metricsPort: number | undefined;
  stop(): Promise<void>;
}

export async function serve(config: Config, logger: Logger = createLogger(config.logLevel)): Promise<Running> {
  // Loads OpenTelemetry only when OTEL_TRACES_EXPORTER asks for it.
  const tracing = await startTracing(config.tracesExporter, config.tracesServiceName);
  const dataTier = new DataTierEvents(logger);
  const database = await openAndMigrate(config, logger, dataTier);
  tracing?.traceDatabase(database);
  // Servers sign by default: the first to start with no active result key makes one for the fleet (SIGNING=off: none).
  const firstKey = await startFirstSigningKey(() => makeFirstResultKey(config, database, logger), logger);
  const redis = config.redisUrl === undefined ? undefined : createRedisLimiters(config.redisUrl, logger);
  const scoped = fleetOf(config, logger);
  const fleet = scoped?.fleet;
  const webhooks = webhooksOf(config, database, logger, redis?.factory);
  const app = createPublicApp(config, database, {
    webhooks: webhooks.admin,
    logger,
    ...(fleet === undefined ? {} : { fleet }),
    ...(redis === undefined ? {} : { limiterFactory: redis.factory, redisConnected: redis.connected }),
    ...(tracing === undefined ? {} : { tracing }),
  });
  scoped?.answerUnder(app.horizons);
  dataTier.countInto(app.metrics);
  const wakeups =
    config.redisUrl === undefined ? undefined : createChangeWakeups(config.redisUrl, logger, app.changesCommitted);
  await keysOrListenAnyway(app, logger);
  webhooks.startDelivery(app.metrics);
  const keys = secretKeyFingerprints(config.webhooks);
  const heartbeat = startInstanceHeartbeat({ database, role: "serve", horizons: app.horizons, keys, logger });
  const retention = startRetention(config.retention, database, app.metrics.registry, logger);
  const internalApp = internalAppOf(config, database, app, webhooks.admin, wakeups, logger);
  const listening = await listenAll(config, app, internalApp, tracing, logger);
  const serving = { ingest: internalApp.ingestEnabled, redis: redis !== undefined, tracing: tracing !== undefined };
  logListening(config, listening, serving, logger);
  // Starts, ends and freezes happen once however many instances run this (races/sql/races.ts); a freeze
  // missed while every instance was down happens at the first tick.
  const raceClock = startRaceClock(app.races, config.raceClockMs, logger, raceClockMetrics(app.metrics.registry));
  // Every instance looks for new entries; one at a time integrates them and signs the checkpoint.
  const logSequencer = startLogSequencer(app.resultsLog.sequencer, config.logSequenceMs, logger, app.metrics.registry);
  return {
    port: listening.port,
    internalPort: listening.internalPort,
    metricsPort: listening.metricsPort,
    async stop() {
      app.stopServing();
      // The clock starts no tick after this and the one under way ends before the database closes.
      await Promise.all([
        // Leaves the fleet first: the others take this instance's boards over at once.
        fleet?.close(),
        raceClock.stop(),
        logSequencer.stop(),
        ...listening.servers.map(({ server, drainMs }) => server.close(drainMs)),
        webhooks.stop(),
        retention.stop(),
        heartbeat.stop(),
        firstKey?.stop(),
      ]);
      await Promise.all([database.close(), redis?.close(), wakeups?.close(), tracing?.shutdown()]);
      logger.info("stopped");
      logger.flush();
    },
  };
}

/**
 * The internal listener's app, sharing the public app's metrics, readiness, keys, races and webhooks; a commit
 * there is read from the change feed at once here, and announced to the other instances through Redis.
 */
function internalAppOf(
  config: Config,
  database: Database,
  app: PublicApp,
  webhooks: WebhookAdmin,
  wakeups: ChangeWakeups | undefined,
  logger: Logger,
): InternalApp {
  return createInternalApp(config, database, {
    logger,
    metrics: app.metrics,
    readiness: app.readiness,
    keys: app.keys,
    races: app.races,
    raceWatch: app.raceWatch,
    webhooks,
    serveMetrics: config.metrics === undefined,
    onCommitted() {
      app.changesCommitted();
      wakeups?.announce();
    },
  });
}

/**
 * The fleet on Redis (REDIS_URL), whose boards are shared only between instances that answer under the same retention
 * horizons: its scope is the generation of the horizons the app's watch holds, once `answerUnder` names that watch.
 */
function fleetOf(config: Config, logger: Logger) {
  if (config.redisUrl === undefined) return undefined;
  let horizons: HorizonWatch | undefined;
  const fleet = createRedisFleet(
    config.redisUrl,
    fleetName(config),
    logger,
    () => `h${horizons?.current.generation ?? 0}`,
  );
  return {
    fleet,
    answerUnder(watch: HorizonWatch): void {
      horizons = watch;
    },
  };
}

/**
 * The fleet's name on Redis: FLEET_NAME, else one derived from the database's hosts and name, so that instances on
 * one database share their boards and two deployments on one Redis never do.
 */
function fleetName(config: Config): string {
  if (config.fleetName !== undefined) return config.fleetName;
  const places = config.databaseUrl.split(",").map((one) => {
    try {
      const url = new URL(one.trim());
      return `${url.hostname}:${url.port || "3306"}${url.pathname}`;
    } catch {
      return one.trim();
    }
  });
  return createHash("sha256").update(places.sort().join(",")).digest("hex").slice(0, 16);
}

/**
 * The webhook endpoints' management, one for both listeners, and this instance's delivery worker, started once
 * the app's metrics exist: a test event or a redelivery made through either listener wakes the worker.
 */
function webhooksOf(config: Config, database: Database, logger: Logger, limiters: LimiterFactory | undefined) {
  let delivery: WebhookDelivery | undefined;
  return {
    admin: webhookAdmin(config.webhooks, database, () => delivery?.worker?.wake(), limiters),
    startDelivery(metrics: Metrics): void {
      delivery = startWebhookDelivery(config.webhooks, database, metrics, logger);
    },
    stop: (): Promise<void> => delivery?.stop() ?? Promise.resolve(),
  };
}

/** Node switches and replica skips: logged, and counted once the app's metrics exist (events during start-up are only logged). */
class DataTierEvents {
  private metrics: Metrics | undefined;

  constructor(private readonly logger: Logger) {}

  readonly onEvent = (event: string, details: object): void => {
    this.logger.warn(details, event);
    this.metrics?.dataTierEvents.inc({ event: event === "database node changed" ? "node_changed" : "replica_skipped" });
  };

  countInto(metrics: Metrics): void {
    this.metrics = metrics;
  }
}

/**
 * Opens the database's pools and, unless MIGRATE_ON_START=false (a least-privilege runtime user; `topwagers
 * migrate` does the DDL), creates the database and applies pending migrations.
 */
async function openAndMigrate(config: Config, logger: Logger, dataTier: DataTierEvents): Promise<Database> {
  if (config.migrateOnStart) {
    await ensureDatabaseExists(config.databaseUrl, config.databaseTlsCa, config.databaseConnectTimeoutMs);
  }
  const database = await openDatabase({
    url: config.databaseUrl,
    poolSize: config.databasePoolSize,
    queryTimeoutMs: config.queryTimeoutMs,
    readUrls: config.databaseReadUrls,
    replicaWaitMs: config.replicaWaitMs,
    tlsCa: config.databaseTlsCa,
    connectTimeoutMs: config.databaseConnectTimeoutMs,
    probeTimeoutMs: config.databaseProbeTimeoutMs,
    onEvent: dataTier.onEvent,
  });
  if (config.migrateOnStart) {
    await migrate(database.write, undefined, {
      onProgress: (line) => logger.info(line),
      onApplied: (m, seconds) =>
        logger.info({ version: m.version, seconds }, `applied migration ${m.version} (${m.name})`),
    });
  }
  await checkVersionSafety(database, logger);
  return database;
}

/**
 * Refuses to start when the schema's release floor names a newer release (`migrate` refuses the same way), and
 * warns loudly when a newer release has migrated the schema past what this one knows. A database that does not
 * answer yet is left to readiness, which asks both questions again on every probe.
 */
async function checkVersionSafety(database: Database, logger: Logger): Promise<void> {
  try {
    await assertReleaseMayUse(database.write, packageInfo().version);
    const version = await currentSchemaVersion(database.write);
    if (version > LATEST_SCHEMA_VERSION) {
      logger.warn(
        { schemaVersion: version, known: LATEST_SCHEMA_VERSION },
        schemaAheadWarning(version, LATEST_SCHEMA_VERSION),
      );
    }
  } catch (error) {
    if (error instanceof ReleaseTooOldError) throw error;
  }
}

/**
 * Waits for the keys first, so the first calls are not refused; a database that does not answer yet does not hold
 * the start up for long (readiness says loading_keys until they are in).
 */
async function keysOrListenAnyway(app: PublicApp, logger: Logger): Promise<void> {
  const loaded = await Promise.race([
    app.keysLoaded.then(() => true),
    new Promise<false>((resolve) => setTimeout(() => resolve(false), KEY_LOAD_WAIT_MS).unref()),
  ]);
  if (!loaded) logger.warn({ waitedMs: KEY_LOAD_WAIT_MS }, "API keys not loaded yet; listening anyway (not ready)");
}

interface Listening {
  readonly port: number;
  readonly internalPort: number;
  readonly metricsPort: number | undefined;
  /** Every server, with how long its open connections may drain at stop. */
  readonly servers: readonly { readonly server: OnePortServer; readonly drainMs: number }[];
}

/** Serves the public app, the internal app and, when METRICS_PORT is set, the metrics alone, each on its port. */
async function listenAll(
  config: Config,
  app: PublicApp,
  internalApp: InternalApp,
  tracing: Tracing | undefined,
  logger: Logger,
): Promise<Listening> {
  const publicServer = createOnePortServer(app);
  const port = await listen(publicServer, config.port, config.host);
  const internalServer = createOnePortServer(tracing?.wrapHandler(internalApp.handler) ?? internalApp.handler);
  const internalPort = await listen(internalServer, config.internalPort, config.internalHost);
  const servers = [
    { server: publicServer, drainMs: 8_000 },
    { server: internalServer, drainMs: 8_000 },
  ];
  if (config.metrics === undefined) return { port, internalPort, metricsPort: undefined, servers };
  const metricsServer = createOnePortServer(metricsOnlyHandler(app.metrics, logger));
  const metricsPort = await listen(metricsServer, config.metrics.port, config.metrics.host);
  return { port, internalPort, metricsPort, servers: [...servers, { server: metricsServer, drainMs: 1_000 }] };
}

/** One line per listener, then tracing's. */
/** What a start turned on, as its log lines say. */
interface Serving {
  /** INGEST_TOKEN is set. */
  readonly ingest: boolean;
  /** Rate limits are shared on Redis (REDIS_URL). */
  readonly redis: boolean;
  readonly tracing: boolean;
}

function logListening(config: Config, at: Listening, serving: Serving, logger: Logger): void {
  if (at.metricsPort !== undefined) {
    const host = config.metrics?.host;
    logger.info({ port: at.metricsPort, host }, `metrics (GET /metrics alone) on ${host}:${at.metricsPort}`);
  }
  const internal = `${config.internalHost}:${at.internalPort}`;
  logger.info(
    { port: at.internalPort, host: config.internalHost, ingest: serving.ingest ? "enabled" : "disabled" },
    serving.ingest
      ? `internal listener (ingest) on ${internal}`
      : `internal listener on ${internal}; ingest is disabled until INGEST_TOKEN is set`,
  );
  const rateLimits = serving.redis ? "redis" : "memory";
  const fields = { port: at.port, host: config.host, database: redact(config.databaseUrl), rateLimits };
  logger.info(fields, `topwagers listening on ${config.host}:${at.port}`);
  if (serving.tracing) logger.info({ exporter: config.tracesExporter }, "OpenTelemetry tracing is on");
}

async function listen(server: OnePortServer, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.server.once("error", reject);
    server.server.listen(port, host, () => resolve());
  });
  const address = server.server.address();
  return typeof address === "object" && address !== null ? address.port : port;
}
