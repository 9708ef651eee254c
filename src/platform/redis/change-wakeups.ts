/**
 * Optional Redis pub/sub wake-ups for the change feed (REDIS_URL): after a
 * commit, the writing instance announces it, and every other instance reads
 * its change feed at once instead of at its next poll (up to 200 ms later).
 * The message carries nothing but the sender: what changed is always read
 * from the database, so a lost message (Redis down, a reconnect) only costs
 * latency, never a change.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import type { Logger } from "../logger.js";

const CHANNEL = "topwagers:changes";
/** Announcements within this window are sent as one. */
const COALESCE_MS = 5;

export interface ChangeWakeups {
  /** A change was committed here: wake the other instances. */
  announce(): void;
  close(): Promise<void>;
}

export function createChangeWakeups(redisUrl: string, logger: Logger, onWake: () => void): ChangeWakeups {
  const me = randomUUID();
  const options = {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 1_000,
    retryStrategy: (attempt: number) => Math.min(attempt * 200, 1_000),
  };
  const publisher = new Redis(redisUrl, options);
  const subscriber = new Redis(redisUrl, { ...options, enableOfflineQueue: true });
  const quiet = () => undefined;
  publisher.on("error", quiet);
  subscriber.on("error", quiet);
  subscriber.subscribe(CHANNEL).catch((error: unknown) => {
    logger.warn({ err: error }, "change wake-ups through Redis unavailable; instances still poll every 200 ms");
  });
  subscriber.on("message", (_channel: string, sender: string) => {
    if (sender !== me) onWake();
  });
  let scheduled: NodeJS.Timeout | undefined;
  return {
    announce() {
      if (scheduled !== undefined) return;
      scheduled = setTimeout(() => {
        scheduled = undefined;
        publisher.publish(CHANNEL, me).catch(quiet);
      }, COALESCE_MS);
      scheduled.unref();
    },
    async close() {
      if (scheduled !== undefined) clearTimeout(scheduled);
      publisher.disconnect();
      subscriber.disconnect();
    },
  };
}
