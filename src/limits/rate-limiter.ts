/**
 * Per-key rate limits with rate-limiter-flexible. Every authenticated call
 * costs one point, whatever the protocol and whether or not it then passes
 * validation. A publishable key is shared by every viewer of a streamer's
 * board, so it is counted per key and client address (each viewer has a
 * budget of its own; one viewer's reloads cannot use up the streamer's key). The result is reported in the IETF draft RateLimit-Policy and
 * RateLimit fields on every response, and in Retry-After when refused.
 */
import type { RateLimiterAbstract } from "rate-limiter-flexible";
import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import { ServiceError } from "../errors.js";

export interface RatePolicy {
  readonly points: number;
  readonly windowSeconds: number;
}

export interface RateDecision {
  /** Response headers describing the limit after this call. */
  readonly headers: Readonly<Record<string, string>>;
}

/** Builds a limiter for one policy; the default keeps counts in this process's memory. */
export type LimiterFactory = (policy: RatePolicy, keyPrefix: string) => RateLimiterAbstract;

export const memoryLimiters: LimiterFactory = (policy, keyPrefix) =>
  new RateLimiterMemory({ points: policy.points, duration: policy.windowSeconds, keyPrefix });

export class KeyRateLimiter {
  private readonly limiters = new Map<string, RateLimiterAbstract>();

  constructor(
    private readonly defaultPolicy: RatePolicy,
    private readonly createLimiter: LimiterFactory = memoryLimiters,
    /** The default of publishable keys, per key and client address. */
    private readonly publishablePolicy: RatePolicy = defaultPolicy,
  ) {}

  /**
   * Counts one call for the key (and, for a publishable key, `perAddress`: its client address);
   * throws `resource_exhausted` with Retry-After when over the limit.
   */
  async consume(keyId: string, ownPolicy: RatePolicy | null, perAddress?: string): Promise<RateDecision> {
    const policy = ownPolicy ?? (perAddress === undefined ? this.defaultPolicy : this.publishablePolicy);
    const policyName = ownPolicy !== null ? "key" : perAddress === undefined ? "default" : "publishable";
    const counter = perAddress === undefined ? keyId : `${keyId}@${perAddress}`;
    try {
      const result = await this.limiterFor(policy).consume(counter, 1);
      return { headers: rateHeaders(policyName, policy, result) };
    } catch (reason) {
      if (!(reason instanceof RateLimiterRes)) throw reason;
      const retryAfter = Math.max(1, Math.ceil(reason.msBeforeNext / 1000));
      throw new ServiceError(
        "RATE_LIMITED",
        `rate limit exceeded for this API key${perAddress === undefined ? "" : " from this address"} (${policy.points} requests per ${policy.windowSeconds} s). Retry in ${retryAfter} s`,
        { headers: rateHeaders(policyName, policy, reason), retryAfterSeconds: retryAfter },
      );
    }
  }

  private limiterFor(policy: RatePolicy): RateLimiterAbstract {
    const id = `${policy.points}/${policy.windowSeconds}`;
    let limiter = this.limiters.get(id);
    if (limiter === undefined) {
      limiter = this.createLimiter(policy, `rl:${id}`);
      this.limiters.set(id, limiter);
    }
    return limiter;
  }
}

function rateHeaders(name: string, policy: RatePolicy, result: RateLimiterRes): Record<string, string> {
  const remaining = Math.max(0, result.remainingPoints);
  const resetSeconds = Math.max(0, Math.ceil(result.msBeforeNext / 1000));
  return {
    "ratelimit-policy": `"${name}";q=${policy.points};w=${policy.windowSeconds}`,
    ratelimit: `"${name}";r=${remaining};t=${resetSeconds}`,
  };
}
