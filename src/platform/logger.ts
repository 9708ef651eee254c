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

/**
 * Writes every line still buffered, in order, then calls `done` (after 2 s at the latest); for the
 * last moment of a process. `logger.flush()` does not wait for a write in flight, and an exit during
 * one lets the lines buffered behind it overtake it.
 */
export function closeLogs(logger: Logger, done: () => void): void {
  const stream = (logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] as
    | { end?: () => void; once?: (event: string, listener: () => void) => void }
    | undefined;
  let called = false;
  const finish = () => {
    if (called) return;
    called = true;
    clearTimeout(timer);
    done();
  };
  const timer = setTimeout(finish, 2_000);
  if (typeof stream?.end !== "function" || typeof stream.once !== "function") {
    logger.flush();
    finish();
    return;
  }
  stream.once("close", finish);
  stream.once("error", finish);
  stream.end();
}

/** A logger that writes nothing, for tests and tools. */
export const silentLogger: Logger = pino({ level: "silent" });
