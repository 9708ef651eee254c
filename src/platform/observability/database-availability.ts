/**
 * One pair of log lines per database outage, whoever notices it: a warn line when the database
 * stops answering, and an info line when it answers again (with how long it was gone). Fed by the
 * readiness probes and the change feed's polls, which ask the database all the time; the calls
 * that fail meanwhile are logged on their own ("call failed").
 */
import type { Logger } from "../logger.js";

export interface DatabaseOutcomes {
  /** The database answered. */
  answered(): void;
  /** The database did not answer (refused, timed out, lost the connection, …). */
  failed(error: unknown): void;
}

export function databaseAvailability(logger: Logger, nowMs: () => number = Date.now): DatabaseOutcomes {
  let downSince: number | undefined;
  return {
    answered() {
      if (downSince === undefined) return;
      const downSeconds = Math.round(nowMs() - downSince) / 1000;
      downSince = undefined;
      logger.info({ downSeconds }, `database reachable again after ${downSeconds} s`);
    },
    failed(error) {
      if (downSince !== undefined) return;
      downSince = nowMs();
      logger.warn({ err: error }, "database unreachable; calls that need it answer unavailable until it is back");
    },
  };
}
