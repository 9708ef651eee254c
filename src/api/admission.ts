/**
 * The first two steps of every public call, whatever the protocol:
 * authenticate the key, then count the call against the key's rate limit.
 * Both run on headers alone, before any body is read.
 */
import type { Authenticator, Caller } from "../auth/authenticator.js";
import type { KeyRateLimiter } from "../limits/rate-limiter.js";

export interface Admitted {
  readonly caller: Caller;
  /** RateLimit-Policy and RateLimit, for every response to this call. */
  readonly headers: Readonly<Record<string, string>>;
}

export class Admission {
  constructor(
    private readonly authenticator: Authenticator,
    private readonly limiter: KeyRateLimiter,
  ) {}

  /** Throws `unauthenticated` or `resource_exhausted` (a ServiceError) when the call may not proceed. */
  async admit(authorization: string | null | undefined): Promise<Admitted> {
    const caller = await this.authenticator.authenticate(authorization);
    const decision = await this.limiter.consume(caller.keyId, caller.rateLimit);
    return { caller, headers: decision.headers };
  }
}
