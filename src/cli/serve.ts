/**
 * `topwagers serve` (also `node dist/src/main.js` and the image's default command): reads the
 * settings from the environment, then serves (server.ts) until SIGTERM or SIGINT: readiness
 * turns false, new connections are refused, in-flight requests finish, pools close, exit 0.
 * Everything it writes is a JSON log line on stderr, a fatal start-up error included
 * (settings: exit 2; anything else: exit 1).
 */
import { parseArgs } from "node:util";
import { type Config, ConfigError, loadConfig } from "../platform/config.js";
import { closeLogs, createLogger, type Logger } from "../platform/logger.js";
import { nodeVersionWarning, packageInfo, versionLine } from "../platform/package-info.js";
import { type Running, serve } from "../server.js";
import { UsageError } from "./common.js";
import { releaseStopSignals } from "./stop-signals.js";

/** Writes every line the logger still holds, in order, then exits. */
function exitAfterFlush(logger: Logger, code: number): void {
  closeLogs(logger, () => process.exit(code));
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
    process.stdout.write(`${versionLine()}\n`);
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
  // Handlers first: as PID 1 (a container) a SIGTERM nobody handles is ignored, so one that arrives while
  // migrations run or the listeners open must still stop the server, as soon as it serves.
  let running: Running | undefined;
  let stopSignal: string | undefined;
  const stop = (server: Running, signal: string) => {
    logger.info({ signal }, "shutting down: finishing in-flight requests");
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    server.stop().then(
      // The last lines written in order, then exit (closeLogs: not process.exit during a write in flight).
      () => exitAfterFlush(logger, 0),
      (error: unknown) => {
        logger.error({ err: error }, "shutdown failed");
        exitAfterFlush(logger, 1);
      },
    );
  };
  const onSignal = (signal: string) => {
    if (stopSignal !== undefined) return;
    stopSignal = signal;
    if (running !== undefined) stop(running, signal);
  };
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  process.on("SIGINT", () => onSignal("SIGINT"));
  const held = releaseStopSignals(); // one that came while the program loaded
  if (held !== undefined) onSignal(held);
  try {
    running = await serve(config, logger);
  } catch (error) {
    logger.fatal({ err: error }, `could not start: ${error instanceof Error ? error.message : String(error)}`);
    return exitAfterFlush(logger, 1);
  }
  if (stopSignal !== undefined) stop(running, stopSignal);
}
