/**
 * `topwagers serve` (also `node dist/src/main.js` and the image's default command): reads the
 * settings from the environment, then serves (server.ts) until SIGTERM or SIGINT: readiness
 * turns false, new connections are refused, in-flight requests finish, pools close, exit 0.
 * Everything it writes is a JSON log line on stderr, a fatal start-up error included
 * (settings: exit 2; anything else: exit 1).
 */
import { parseArgs } from "node:util";
import { type Config, ConfigError, loadConfig } from "../config.js";
import { createLogger, type Logger } from "../logger.js";
import { nodeVersionWarning, packageInfo } from "../package-info.js";
import { serve } from "../server.js";
import { UsageError } from "./common.js";

/** Writes what the logger buffers, then exits. */
function exitAfterFlush(logger: Logger, code: number): void {
  logger.flush(() => process.exit(code));
}

export async function serveCommand(args: string[]): Promise<void> {
  let version: boolean;
  try {
    const parsed = parseArgs({ args, options: { version: { type: "boolean", short: "V" } } });
    version = parsed.values.version === true;
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  if (version) {
    process.stdout.write(`${packageInfo().version}\n`);
    return;
  }
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const logger = createLogger("info");
    logger.fatal({ problems: error.problems }, `could not start: invalid configuration: ${error.problems.join("; ")}`);
    return exitAfterFlush(logger, 2);
  }
  const logger = createLogger(config.logLevel);
  const { nodeRange } = packageInfo();
  const warning = nodeVersionWarning(process.versions.node, nodeRange);
  if (warning !== undefined) logger.warn({ node: process.versions.node, engines: nodeRange }, warning);
  let running: Awaited<ReturnType<typeof serve>>;
  try {
    running = await serve(config, logger);
  } catch (error) {
    logger.fatal({ err: error }, `could not start: ${error instanceof Error ? error.message : String(error)}`);
    return exitAfterFlush(logger, 1);
  }
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down: finishing in-flight requests");
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    running.stop().then(
      // Everything is closed: the process ends by itself once the last log lines are written (exiting
      // at once could cut "stopped" off, or let it overtake the line before it). A handle left open
      // by mistake still ends in the forced exit above.
      () => {
        process.exitCode = 0;
      },
      (error: unknown) => {
        logger.error({ err: error }, "shutdown failed");
        exitAfterFlush(logger, 1);
      },
    );
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
}
