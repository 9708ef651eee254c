/**
 * The records the platform sends (users and wagers), as the ingest rules check them and storage
 * writes them.
 */
import { sameDecimal } from "./decimal.js";
import { FULL_WEIGHT_BPS } from "./weights.js";

export interface UserProfile {
  readonly id: string;
  readonly affiliateId: string;
  readonly username: string;
  /** Absolute http(s) URL, or "" for none. */
  readonly avatar: string;
}

export interface WagerRecord {
  readonly id: string;
  readonly userId: string;
  /** Decimal string, e.g. "12.5", at most 8 fraction digits. */
  readonly amount: string;
  /** Unix seconds. */
  readonly placedAt: number;
  /** Weight in basis points, 0 to 10000; absent counts fully (10000). */
  readonly weightBps?: number | undefined;
}

/**
 * Whether two sendings of one wager id carry the same wager: same user, time, amount and weight
 * ("12.50000000" and "12.5" are the same amount; no weight is the same as 10000). Amounts must be
 * decimal strings.
 */
export function sameWagerContent<
  T extends { userId: string; amount: string; placedAt: number | bigint; weightBps?: number | undefined },
>(a: T, b: T): boolean {
  return (
    a.userId === b.userId &&
    a.placedAt === b.placedAt &&
    (a.weightBps ?? FULL_WEIGHT_BPS) === (b.weightBps ?? FULL_WEIGHT_BPS) &&
    sameDecimal(a.amount, b.amount)
  );
}
