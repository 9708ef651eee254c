/**
 * The limit of manual sends (SendTestEvent, RedeliverWebhook): each makes this service POST to a third party's URL,
 * so a key must not turn them into a flood on one receiver whatever its own rate limit. Counted per key over a
 * minute (the webhook rules count an endpoint's id and its affiliate's target URL: webhooks/core/endpoint-admin.ts),
 * shared by every instance through Redis when the limiter factory is Redis's (platform/limits/redis-limiters.ts),
 * else in this process.
 */
import { RateLimiterRes } from "rate-limiter-flexible";
import { type LimiterFactory, memoryLimiters } from "./rate-limiter.js";

/** Counts one manual send under a key: undefined when allowed, else the seconds until one more is. */
export function manualSendCounter(
  perMinute: number,
  createLimiter: LimiterFactory = memoryLimiters,
): (key: string) => Promise<number | undefined> {
  const limiter = createLimiter({ points: perMinute, windowSeconds: 60 }, "webhook-manual-sends");
  return async (key) => {
    try {
      await limiter.consume(key, 1);
      return undefined;
    } catch (refused) {
      if (!(refused instanceof RateLimiterRes)) throw refused;
      return Math.max(1, Math.ceil(refused.msBeforeNext / 1000));
    }
  };
}
