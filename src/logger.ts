/**
 * Structured JSON logs (pino) on stderr. Credentials never reach a log line:
 * authorization headers, keys and tokens are redacted at the logger, whatever
 * object they hide in.
 */
import { type Logger, pino } from "pino";

export type { Logger };

export function createLogger(
  level: "debug" | "info" | "warn" | "error" | "silent" = "info",
  destination: pino.DestinationStream = pino.destination({ fd: 2, sync: false }),
): Logger {
  return pino(
    {
      level,
      base: { service: "topwagers" },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: [
          "authorization",
          "headers.authorization",
          "req.headers.authorization",
          "*.authorization",
          "key",
          "secret",
          "token",
          "ingestToken",
          "*.key",
          "*.secret",
          "*.token",
        ],
        censor: "[redacted]",
      },
    },
    destination,
  );
}

/** A logger that writes nothing, for tests and tools. */
export const silentLogger: Logger = pino({ level: "silent" });
