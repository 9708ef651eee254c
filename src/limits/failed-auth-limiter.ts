/**
 * Slows a client that keeps sending bad keys: once more than `points`
 * authentications from one address have failed within the window, that
 * address gets 429 (with Retry-After) instead of another key lookup, until the
 * window passes. A key already found valid is never held back by it (see
 * Admission).
 */
import { RateLimiterMemory } from "rate-limiter-flexible";
import { ServiceError } from "../errors.js";

export class FailedAuthLimiter {
  private readonly limiter: RateLimiterMemory;

  constructor(private readonly policy: { points: number; windowSeconds: number } = { points: 30, windowSeconds: 60 }) {
    this.limiter = new RateLimiterMemory({
      points: policy.points,
      duration: policy.windowSeconds,
      keyPrefix: "auth-fail",
    });
  }

  /** Throws `resource_exhausted` when this address has failed too often lately. */
  async check(address: string): Promise<void> {
    const state = await this.limiter.get(address);
    if (state !== null && state.consumedPoints > this.policy.points) {
      const retryAfter = Math.max(1, Math.ceil(state.msBeforeNext / 1000));
      throw new ServiceError(
        "TOO_MANY_FAILED_ATTEMPTS",
        `too many requests with invalid API keys from this address. Retry in ${retryAfter} s`,
        { retryAfterSeconds: retryAfter },
      );
    }
  }

  async recordFailure(address: string): Promise<void> {
    await this.limiter.penalty(address, 1);
  }
}
