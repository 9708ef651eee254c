/**
 * Rate-limit counts shared by every instance through Redis. When Redis cannot
 * be reached, each instance falls back to an in-memory insurance limiter with
 * the same policy (so limits still hold per instance), logs it once, and goes
 * back to Redis as soon as it answers again.
 */
import { Redis } from "ioredis";
import { RateLimiterMemory, RateLimiterRedis } from "rate-limiter-flexible";
import { redact } from "../config.js";
import type { Logger } from "../logger.js";
import type { LimiterFactory } from "./rate-limiter.js";

export interface RedisLimiters {
  readonly factory: LimiterFactory;
  /** True while commands go to Redis; false while the insurance limiter counts. */
  connected(): boolean;
  close(): Promise<void>;
}

export function createRedisLimiters(redisUrl: string, logger: Logger): RedisLimiters {
  const client = new Redis(redisUrl, {
    // Fail fast instead of queueing while disconnected: the insurance limiter answers meanwhile.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 1_000,
    commandTimeout: 500,
    lazyConnect: false,
    retryStrategy: (attempt) => Math.min(attempt * 200, 1_000),
  });
  let ready = false;
  client.on("ready", () => {
    if (!ready) logger.info({ redis: redact(redisUrl) }, "rate limits are shared through Redis");
    ready = true;
  });
  client.on("error", (error: Error) => {
    if (ready) {
      logger.warn(
        { redis: redact(redisUrl), err: error.message },
        "Redis unreachable: counting rate limits in memory per instance until it returns",
      );
    }
    ready = false;
  });
  client.on("end", () => {
    ready = false;
  });
  return {
    factory: (policy, keyPrefix) =>
      new RateLimiterRedis({
        storeClient: client,
        points: policy.points,
        duration: policy.windowSeconds,
        keyPrefix: `topwagers:${keyPrefix}`,
        rejectIfRedisNotReady: true,
        insuranceLimiter: new RateLimiterMemory({
          points: policy.points,
          duration: policy.windowSeconds,
          keyPrefix: `insurance:${keyPrefix}`,
        }),
      }),
    connected: () => ready,
    async close() {
      client.disconnect();
    },
  };
}
