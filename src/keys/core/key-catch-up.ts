/**
 * A key works the moment it is issued, on every instance. The in-memory key set learns of a new key
 * through the change feed (the key's change row, written in the same transaction as the key), so
 * without help a key made by the CLI or by another instance is refused here until the next poll.
 * Instead, a presented key that is not held but has the current format and a right checksum
 * (api-key-secret.ts isIssuableKey: text that could have been issued) makes this instance catch
 * up with the change feed once, and is then looked for in memory again: a key committed before it
 * was presented is held by then.
 *
 * Bounded whatever arrives, so made-up keys cannot hammer the database:
 * - text that is not such a key (wrong shape or checksum, or the earlier format) never gets here:
 *   no database work at all;
 * - catching up is done in rounds: every key arriving before a round starts waits for that one
 *   round (one change-feed poll, and a read of the keys it names), at most one round runs at a time
 *   and rounds start at least `minGapMs` apart. A burst of any number of unknown keys costs a
 *   round or two, and a sustained flood at most 1000 / minGapMs polls a second, on the change
 *   rows' primary key; the api_keys table is read only for keys that really changed;
 * - one wait per key at a time (single flight by hash), at most `maxWaiting` keys waiting (more are
 *   refused at once), and a key still unknown after a completed round is remembered as unknown
 *   (at most `maxUnknown`, the oldest forgotten first), so repeating it costs nothing. Memory is
 *   always asked first, so remembering a key as unknown can never refuse a key that is held.
 * A round that cannot complete (the database is unreachable) ends after `timeoutMs`; its keys are
 * then refused as unknown ones always were, and not remembered.
 */
import { apiKeyHashText } from "./api-key-secret.js";
import type { KeyLookup } from "./key-set.js";

export interface KeyCatchUpOptions {
  /** Resolves once every key change committed before the call is applied to the key set. */
  readonly catchUp: () => Promise<void>;
  /** Least time between the starts of two rounds. Default 25 ms. */
  readonly minGapMs?: number;
  /** A round not complete after this long ends (its keys are refused). Default 1000 ms. */
  readonly timeoutMs?: number;
  /** Most keys waiting at once; more are refused without waiting. Default 1000. */
  readonly maxWaiting?: number;
  /** Most keys remembered as unknown. Default 10,000 (about 1 MB). */
  readonly maxUnknown?: number;
  readonly nowMs?: () => number;
}

export class KeyCatchUp {
  /** Rounds started, keys that waited for one, keys refused at once as remembered or overflowing. */
  readonly stats = { rounds: 0, waited: 0, rememberedUnknown: 0, overflow: 0 };
  private readonly minGapMs: number;
  private readonly timeoutMs: number;
  private readonly maxWaiting: number;
  private readonly maxUnknown: number;
  private readonly nowMs: () => number;
  /** Hash → the wait of that key in progress. */
  private readonly waiting = new Map<string, Promise<KeyLookup>>();
  /** Hashes of keys still unknown after a completed round, oldest first. */
  private readonly unknown = new Set<string>();
  /** The round not started yet that new arrivals join. */
  private queued: Promise<boolean> | undefined;
  /** The round running (at most one). */
  private running: Promise<boolean> | undefined;
  private lastStartMs = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: KeyCatchUpOptions) {
    this.minGapMs = options.minGapMs ?? 25;
    this.timeoutMs = options.timeoutMs ?? 1_000;
    this.maxWaiting = options.maxWaiting ?? 1_000;
    this.maxUnknown = options.maxUnknown ?? 10_000;
    this.nowMs = options.nowMs ?? Date.now;
  }

  /**
   * The key's lookup after this instance has caught up with every key committed before the call;
   * `lookup` asks memory. For a key not held (the caller checked) of the current format.
   */
  find(secret: string, lookup: () => KeyLookup): Promise<KeyLookup> | KeyLookup {
    const hash = apiKeyHashText(secret);
    if (this.unknown.has(hash)) {
      this.stats.rememberedUnknown += 1;
      return NOT_FOUND;
    }
    const inFlight = this.waiting.get(hash);
    if (inFlight !== undefined) return inFlight;
    if (this.waiting.size >= this.maxWaiting) {
      this.stats.overflow += 1;
      return NOT_FOUND;
    }
    this.stats.waited += 1;
    const wait = this.nextRound().then((completed) => {
      this.waiting.delete(hash);
      const found = lookup();
      if (!found.found && found.unsettled !== true && completed) this.remember(hash);
      return found;
    });
    this.waiting.set(hash, wait);
    return wait;
  }

  /** The next round not started yet (true when it completed, false when it timed out or failed). */
  private nextRound(): Promise<boolean> {
    this.queued ??= this.runQueued();
    return this.queued;
  }

  private async runQueued(): Promise<boolean> {
    await this.running;
    const gap = this.lastStartMs + this.minGapMs - this.nowMs();
    if (gap > 0) await new Promise((resolve) => setTimeout(resolve, gap));
    // From here on, arrivals join the next round: this one may read changes committed before them only.
    this.queued = undefined;
    this.lastStartMs = this.nowMs();
    this.stats.rounds += 1;
    const round = this.withinTimeout();
    this.running = round;
    const completed = await round;
    if (this.running === round) this.running = undefined;
    return completed;
  }

  private withinTimeout(): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), this.timeoutMs);
      timer.unref();
      this.options.catchUp().then(
        () => {
          clearTimeout(timer);
          resolve(true);
        },
        () => {
          clearTimeout(timer);
          resolve(false);
        },
      );
    });
  }

  private remember(hash: string): void {
    this.unknown.add(hash);
    if (this.unknown.size > this.maxUnknown) {
      const oldest = this.unknown.values().next();
      if (oldest.done !== true) this.unknown.delete(oldest.value);
    }
  }
}

const NOT_FOUND: KeyLookup = Object.freeze({ found: false as const });
