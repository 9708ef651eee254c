/**
 * The stream quota: how many live streams this instance holds, per API key, per client address and in all, against
 * their limits. A board's stream and a race's stream take a slot each (`reserve`) and give it back once
 * (`release`); a stream over a limit is refused with StreamLimitError before it opens.
 */
import type { Scope } from "../../values/scopes.js";

/** Who opens a stream, for the limits, and the scope the stream needs (it ends when its key loses it). */
export interface ViewerOwner {
  readonly keyId: string;
  readonly address: string;
  readonly scope: Scope;
}

export interface StreamLimits {
  readonly perKey: number;
  readonly perAddress: number;
  /** Streams on this instance. */
  readonly total: number;
}

/** A stream refused by a limit: per key, per client address, or this instance's total. */
export class StreamLimitError extends Error {
  constructor(
    readonly scope: "key" | "address" | "instance",
    readonly limit: number,
  ) {
    super(`stream limit per ${scope} (${limit}) reached`);
    this.name = "StreamLimitError";
  }
}

export class StreamQuota {
  private readonly perKey = new Map<string, number>();
  private readonly perAddress = new Map<string, number>();
  private total = 0;
  private closed = false;

  constructor(private readonly limits: StreamLimits) {}

  /** Takes a slot for `owner`, or throws StreamLimitError naming the first limit reached. */
  reserve(owner: ViewerOwner): void {
    const { limits } = this;
    if (this.total >= limits.total) throw new StreamLimitError("instance", limits.total);
    if ((this.perKey.get(owner.keyId) ?? 0) >= limits.perKey) throw new StreamLimitError("key", limits.perKey);
    if ((this.perAddress.get(owner.address) ?? 0) >= limits.perAddress) {
      throw new StreamLimitError("address", limits.perAddress);
    }
    this.total += 1;
    increment(this.perKey, owner.keyId);
    increment(this.perAddress, owner.address);
  }

  /** Gives `owner`'s slot back (after `close`, nothing is counted any more). */
  release(owner: ViewerOwner): void {
    if (this.closed) return;
    this.total -= 1;
    decrement(this.perKey, owner.keyId);
    decrement(this.perAddress, owner.address);
  }

  /** Forgets every slot: the instance is shutting down and ends every stream at once. */
  close(): void {
    this.closed = true;
    this.perKey.clear();
    this.perAddress.clear();
    this.total = 0;
  }
}

export function increment(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

export function decrement(map: Map<string, number>, key: string): void {
  const left = (map.get(key) ?? 0) - 1;
  if (left <= 0) map.delete(key);
  else map.set(key, left);
}
