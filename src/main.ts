/**
 * `npm start`: reads the settings, then serves (server.ts): the public port
 * and the internal listener (ingest, keys, metrics).
 * SIGTERM / SIGINT: readiness turns false, new connections are refused,
 * in-flight requests finish, pools close, the process exits.
 */
import { type Config, ConfigError, loadConfig } from "./config.js";
import { isEntryPoint } from "./entry.js";
import { createLogger } from "./logger.js";
import { serve } from "./server.js";

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
  const logger = createLogger(config.logLevel);
  const running = await serve(config, logger);
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down: finishing in-flight requests");
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    running.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
}

if (isEntryPoint(import.meta.url)) {
  main().catch((error: unknown) => {
    process.stderr.write(
      `${JSON.stringify({ level: "fatal", msg: `could not start: ${error instanceof Error ? error.message : String(error)}` })}\n`,
    );
    process.exit(1);
  });
}
