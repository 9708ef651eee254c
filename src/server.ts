/**
 * The running service: opens the database (and applies pending migrations
 * unless MIGRATE_ON_START=false), builds the public and internal apps, and
 * serves each on its one-port server. `stop()` drains both and closes every
 * pool and connection. Used by `npm start` (main.ts) and the demo.
 */
import { createInternalApp } from "./apps/internal.js";
import { metricsOnlyHandler } from "./apps/metrics-endpoint.js";
import { createPublicApp } from "./apps/public.js";
import { startWebhookDelivery, type WebhookDelivery, webhookAdmin } from "./apps/webhook-delivery.js";
import { type Config, redact } from "./config.js";
import { createRedisLimiters, type RedisLimiters } from "./limits/redis-limiters.js";
import { createLogger, type Logger } from "./logger.js";
import { tracingFromEnv } from "./observability/tracing.js";
import type { Races } from "./races/races.js";
import { createChangeWakeups } from "./redis/change-wakeups.js";
import { ensureDatabaseExists, openDatabase } from "./storage/database.js";
import { migrate } from "./storage/migrations.js";
import { createOnePortServer, type OnePortServer } from "./transport/one-port-server.js";

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
  const tracing = await tracingFromEnv(process.env);
  // MIGRATE_ON_START=false: a least-privilege runtime user; `npm run cli -- migrate` does the DDL.
  if (config.migrateOnStart) {
    await ensureDatabaseExists(config.databaseUrl, config.databaseTlsCa, config.databaseConnectTimeoutMs);
  }
  // Node switches and replica skips: logged, and counted once the app's metrics exist (events during
  // start-up are only logged).
  let countDataTierEvent: ((event: string) => void) | undefined;
  const database = await openDatabase({
    url: config.databaseUrl,
    poolSize: config.databasePoolSize,
    queryTimeoutMs: config.queryTimeoutMs,
    readUrls: config.databaseReadUrls,
    replicaWaitMs: config.replicaWaitMs,
    tlsCa: config.databaseTlsCa,
    connectTimeoutMs: config.databaseConnectTimeoutMs,
    probeTimeoutMs: config.databaseProbeTimeoutMs,
    onEvent: (event, details) => {
      logger.warn(details, event);
      countDataTierEvent?.(event);
    },
  });
  if (config.migrateOnStart) {
    const report = await migrate(database.write, undefined, { onProgress: (line) => logger.info(line) });
    for (const m of report.applied) logger.info({ version: m.version }, `applied migration ${m.version} (${m.name})`);
  }
  tracing?.traceDatabase(database);
  const redis: RedisLimiters | undefined =
    config.redisUrl === undefined ? undefined : createRedisLimiters(config.redisUrl, logger);
  // One endpoint manager for both listeners; a test event or a redelivery made here wakes this instance's worker.
  let webhooks: WebhookDelivery | undefined;
  const webhookEndpoints = webhookAdmin(config.webhooks, database, () => webhooks?.worker?.wake());
  const app = createPublicApp(config, database, {
    webhooks: webhookEndpoints,
    logger,
    ...(redis === undefined ? {} : { limiterFactory: redis.factory, redisConnected: redis.connected }),
    ...(tracing === undefined ? {} : { tracing }),
  });
  countDataTierEvent = (event) =>
    app.metrics.dataTierEvents.inc({ event: event === "database node changed" ? "node_changed" : "replica_skipped" });
  const wakeups =
    config.redisUrl === undefined ? undefined : createChangeWakeups(config.redisUrl, logger, app.changesCommitted);
  // Keys first, so the first calls are not refused; a database that does not answer yet does not hold
  // the start up for long (readiness says loading_keys until they are in).
  const loaded = await Promise.race([
    app.keysLoaded.then(() => true),
    new Promise<false>((resolve) => setTimeout(() => resolve(false), KEY_LOAD_WAIT_MS).unref()),
  ]);
  if (!loaded) logger.warn({ waitedMs: KEY_LOAD_WAIT_MS }, "API keys not loaded yet; listening anyway (not ready)");
  webhooks = startWebhookDelivery(config.webhooks, database, app.metrics, logger);
  const delivery = webhooks;
  const publicServer = createOnePortServer(app);
  const port = await listen(publicServer, config.port, config.host);
  const internalApp = createInternalApp(config, database, {
    logger,
    metrics: app.metrics,
    readiness: app.readiness,
    keys: app.keys,
    races: app.races,
    webhooks: webhookEndpoints,
    serveMetrics: config.metrics === undefined,
    onCommitted() {
      app.changesCommitted();
      wakeups?.announce();
    },
  });
  const internalServer = createOnePortServer(
    tracing === undefined ? internalApp.handler : tracing.wrapHandler(internalApp.handler),
  );
  const internalPort = await listen(internalServer, config.internalPort, config.internalHost);
  const metricsServer =
    config.metrics === undefined ? undefined : createOnePortServer(metricsOnlyHandler(app.metrics, logger));
  const metricsPort =
    metricsServer === undefined || config.metrics === undefined
      ? undefined
      : await listen(metricsServer, config.metrics.port, config.metrics.host);
  if (metricsPort !== undefined) {
    logger.info(
      { port: metricsPort, host: config.metrics?.host },
      `metrics (GET /metrics alone) on ${config.metrics?.host}:${metricsPort}`,
    );
  }
  logger.info(
    { port: internalPort, host: config.internalHost, ingest: internalApp.ingestEnabled ? "enabled" : "disabled" },
    internalApp.ingestEnabled
      ? `internal listener (ingest) on ${config.internalHost}:${internalPort}`
      : `internal listener on ${config.internalHost}:${internalPort}; ingest is disabled until INGEST_TOKEN is set`,
  );
  logger.info(
    {
      port,
      host: config.host,
      database: redact(config.databaseUrl),
      rateLimits: redis === undefined ? "memory" : "redis",
    },
    `topwagers listening on ${config.host}:${port}`,
  );
  if (tracing !== undefined) logger.info({ exporter: config.tracesExporter }, "OpenTelemetry tracing is on");
  // Starts, ends and freezes happen once however many instances run this (storage/races.ts); a freeze
  // missed while every instance was down happens at the first tick.
  const raceClock = startRaceClock(app.races, config.raceClockMs, logger);
  return {
    port,
    internalPort,
    metricsPort,
    async stop() {
      app.stopServing();
      // The clock starts no tick after this and the one under way ends before the database closes.
      await Promise.all([
        raceClock.stop(),
        publicServer.close(8_000),
        internalServer.close(8_000),
        metricsServer?.close(1_000),
        delivery.stop(),
      ]);
      await Promise.all([database.close(), redis?.close(), wakeups?.close(), tracing?.shutdown()]);
      logger.info("stopped");
      logger.flush();
    },
  };
}

/**
 * Runs `races.tick()` every `intervalMs`, the next tick only once the last one has finished (never two
 * at once); a failed tick is logged and the clock goes on. `stop()` ends it after the tick under way.
 */
export function startRaceClock(
  races: Pick<Races, "tick">,
  intervalMs: number,
  logger: Logger,
): { stop(): Promise<void> } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const tick = async () => {
    try {
      const steps = await races.tick();
      if (steps.started + steps.ended + steps.frozen > 0) logger.info(steps, "race clock");
    } catch (error) {
      logger.warn({ err: error }, "race clock tick failed; the next tick tries again");
    }
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = tick().then(schedule);
    }, intervalMs);
    timer.unref();
  };
  // The first tick at once: a freeze missed while every instance was down happens at start.
  running = tick().then(schedule);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}

async function listen(server: OnePortServer, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.server.once("error", reject);
    server.server.listen(port, host, () => resolve());
  });
  const address = server.server.address();
  return typeof address === "object" && address !== null ? address.port : port;
}
