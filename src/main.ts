/**
 * `npm start`: applies pending migrations, then serves the public port.
 * SIGTERM / SIGINT: readiness turns false, new connections are refused,
 * in-flight requests finish, pools close, the process exits.
 */
import { createPublicServer } from "./api/public-server.js";
import { createApp } from "./app.js";
import { type Config, ConfigError, loadConfig, redact } from "./config.js";
import { ensureDatabaseExists, openDatabase } from "./storage/database.js";
import { migrate } from "./storage/migrations.js";

export async function serve(config: Config): Promise<{ port: number; stop(): Promise<void> }> {
  await ensureDatabaseExists(config.databaseUrl);
  const database = await openDatabase({
    url: config.databaseUrl,
    poolSize: config.databasePoolSize,
    queryTimeoutMs: config.queryTimeoutMs,
  });
  const report = await migrate(database.write);
  for (const m of report.applied) log("info", `applied migration ${m.version} (${m.name})`);
  const app = createApp(config, database);
  const publicServer = createPublicServer(app.handler);
  await new Promise<void>((resolve, reject) => {
    publicServer.server.once("error", reject);
    publicServer.server.listen(config.port, config.host, () => resolve());
  });
  const address = publicServer.server.address();
  const port = typeof address === "object" && address !== null ? address.port : config.port;
  log("info", `topwagers listening on ${config.host}:${port} (database ${redact(config.databaseUrl)})`);
  return {
    port,
    async stop() {
      app.stopServing();
      await publicServer.close(8_000);
      await database.close();
    },
  };
}

function log(level: "info" | "error", message: string): void {
  process.stderr.write(`${JSON.stringify({ level, time: new Date().toISOString(), msg: message })}\n`);
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const running = await serve(config);
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log("info", `${signal} received, shutting down`);
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    running.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        log("error", `shutdown failed: ${String(error)}`);
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((error: unknown) => {
    log("error", `could not start: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
