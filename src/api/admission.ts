/**
 * The first two steps of every public call, whatever the protocol:
 * authenticate the key, then count the call against the key's rate limit.
 * Both run on headers alone, before any body is read.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { Authenticator, Caller } from "../auth/authenticator.js";
import type { FailedAuthLimiter } from "../limits/failed-auth-limiter.js";
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
    private readonly failedAuth?: FailedAuthLimiter,
  ) {}

  /**
   * Throws `unauthenticated` or `resource_exhausted` (a ServiceError) when the
   * call may not proceed. `clientAddress` lets repeated bad keys from one
   * address be slowed down.
   */
  async admit(authorization: string | null | undefined, clientAddress?: string): Promise<Admitted> {
    const caller = await this.authenticate(authorization, clientAddress);
    const decision = await this.limiter.consume(caller.keyId, caller.rateLimit);
    return { caller, headers: decision.headers };
  }

  private async authenticate(authorization: string | null | undefined, clientAddress: string | undefined) {
    if (this.failedAuth === undefined || clientAddress === undefined) {
      return this.authenticator.authenticate(authorization);
    }
    const known = this.authenticator.cached(authorization);
    if (known.fresh !== undefined) return known.fresh;
    // A key found valid before is never held back by its address's failed attempts (a shared
    // proxy or NAT address must not lock out good keys); it is looked up again all the same.
    if (!known.knownValid) await this.failedAuth.check(clientAddress);
    try {
      return await this.authenticator.authenticate(authorization);
    } catch (error) {
      if (error instanceof ConnectError && error.code === Code.Unauthenticated) {
        await this.failedAuth.recordFailure(clientAddress);
      }
      throw error;
    }
  }
}
