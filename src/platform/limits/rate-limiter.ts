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
import { ServiceError } from "../errors/catalogue.js";

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

/** A policy's limiter and its RateLimit-Policy values by policy name, made once per policy. */
interface PolicyState {
  readonly limiter: RateLimiterAbstract;
  readonly policyHeaders: Map<string, string>;
}

export class KeyRateLimiter {
  /** By "points/window": policies with equal numbers share a limiter (and its counts). */
  private readonly limiters = new Map<string, PolicyState>();
  /** The same by policy object (a key's own policy object lives as long as its key set entry). */
  private readonly byPolicy = new WeakMap<RatePolicy, PolicyState>();

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
    const state = this.stateOf(policy);
    try {
      const result = await state.limiter.consume(counter, 1);
      return { headers: rateHeaders(state, policyName, policy, result) };
    } catch (reason) {
      if (!(reason instanceof RateLimiterRes)) throw reason;
      const retryAfter = Math.max(1, Math.ceil(reason.msBeforeNext / 1000));
      throw new ServiceError(
        "RATE_LIMITED",
        `rate limit exceeded for this API key${perAddress === undefined ? "" : " from this address"} (${policy.points} requests per ${policy.windowSeconds} s). Retry in ${retryAfter} s`,
        { headers: rateHeaders(state, policyName, policy, reason), retryAfterSeconds: retryAfter },
      );
    }
  }

  private stateOf(policy: RatePolicy): PolicyState {
    let state = this.byPolicy.get(policy);
    if (state !== undefined) return state;
    const id = `${policy.points}/${policy.windowSeconds}`;
    state = this.limiters.get(id);
    if (state === undefined) {
      state = { limiter: this.createLimiter(policy, `rl:${id}`), policyHeaders: new Map() };
      this.limiters.set(id, state);
    }
    this.byPolicy.set(policy, state);
    return state;
  }
}

function rateHeaders(
  state: PolicyState,
  name: string,
  policy: RatePolicy,
  result: RateLimiterRes,
): Record<string, string> {
  let policyHeader = state.policyHeaders.get(name);
  if (policyHeader === undefined) {
    policyHeader = `"${name}";q=${policy.points};w=${policy.windowSeconds}`;
    state.policyHeaders.set(name, policyHeader);
  }
  const remaining = Math.max(0, result.remainingPoints);
  const resetSeconds = Math.max(0, Math.ceil(result.msBeforeNext / 1000));
  return { "ratelimit-policy": policyHeader, ratelimit: `"${name}";r=${remaining};t=${resetSeconds}` };
}
