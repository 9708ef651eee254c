/**
 * The per-endpoint limit of manual sends (SendTestEvent, RedeliverWebhook): each makes this service POST to a
 * third party's URL, so a key must not turn them into a flood on one receiver whatever its own rate limit.
 * Counted per endpoint over a minute, shared by every instance through Redis when the limiter factory is
 * Redis's (platform/limits/redis-limiters.ts), else in this process.
 */
import { RateLimiterRes } from "rate-limiter-flexible";
import { type LimiterFactory, memoryLimiters } from "./rate-limiter.js";

/** Counts one manual send to the endpoint: undefined when allowed, else the seconds until one more is. */
export function manualSendCounter(
  perMinute: number,
  createLimiter: LimiterFactory = memoryLimiters,
): (endpointId: string) => Promise<number | undefined> {
  const limiter = createLimiter({ points: perMinute, windowSeconds: 60 }, "webhook-manual-sends");
  return async (endpointId) => {
    try {
      await limiter.consume(endpointId, 1);
      return undefined;
    } catch (refused) {
      if (!(refused instanceof RateLimiterRes)) throw refused;
      return Math.max(1, Math.ceil(refused.msBeforeNext / 1000));
    }
  };
}
