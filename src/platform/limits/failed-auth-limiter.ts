/**
 * The brake on bad keys: once more than `points` calls with bad keys from one
 * client address have failed within the window, that address's bad keys get
 * 429 (with Retry-After) instead of 401 until the window passes. It only ever
 * answers calls whose key is bad: a valid key is admitted whatever its address
 * did (Admission checks the key first, from memory). One warn line is logged
 * per address and window when the brake starts.
 */
import { RateLimiterMemory } from "rate-limiter-flexible";
import { ServiceError } from "../errors/catalogue.js";
import type { Logger } from "../logger.js";

export class FailedAuthLimiter {
  private readonly limiter: RateLimiterMemory;

  constructor(
    private readonly policy: { points: number; windowSeconds: number } = { points: 30, windowSeconds: 60 },
    private readonly logger?: Logger,
  ) {
    this.limiter = new RateLimiterMemory({
      points: policy.points,
      duration: policy.windowSeconds,
      keyPrefix: "auth-fail",
    });
  }

  /**
   * Counts a failed call from this address; returns the refusal to answer with: 401 (`unauthenticated`)
   * while the address is under its limit, 429 once it is over it.
   */
  async failed(address: string, unauthenticated: ServiceError): Promise<ServiceError> {
    const before = await this.limiter.get(address);
    if (before !== null && before.consumedPoints > this.policy.points) return this.braked(before.msBeforeNext);
    const after = await this.limiter.penalty(address, 1);
    if (after.consumedPoints === this.policy.points + 1) {
      this.logger?.warn(
        { clientAddress: address, failures: after.consumedPoints, windowSeconds: this.policy.windowSeconds },
        "braking an address that keeps sending invalid API keys",
      );
    }
    return unauthenticated;
  }

  private braked(msBeforeNext: number): ServiceError {
    const retryAfter = Math.max(1, Math.ceil(msBeforeNext / 1000));
    return new ServiceError(
      "TOO_MANY_FAILED_ATTEMPTS",
      `too many requests with invalid API keys from this address. Retry in ${retryAfter} s`,
      { retryAfterSeconds: retryAfter },
    );
  }
}
