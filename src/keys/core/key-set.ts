/**
 * Every usable API key of the service, in this instance's memory: loaded at
 * start, kept current by the change feed (every key change writes a change row
 * with the key's id in its transaction; the feed names it here and the key is
 * read again), and read again whole every minute as a safety net (a change
 * made by a version that wrote no change row). A lookup never touches the
 * database, so unknown keys cost nothing but a SHA-256, and a revocation is
 * refused by every instance within a feed poll (200 ms; 1 s promised). A key is
 * dropped at its expiry too (a timer), and each drop or change of scopes is
 * announced (`onChanged`) so the key's open streams end with it.
 *
 * Keys are found by the SHA-256 of the presented key (a Map keyed by the
 * digest as a 32-character string): what is compared is a digest, never the key itself, so a
 * timing difference can tell an attacker nothing about a stored key.
 */

import type { Logger } from "../../platform/logger.js";
import type { KeyRecord, KeyStore } from "../../ports/api-keys.js";
import { normalScopes, type Scope, scopesOfKind } from "../../values/scopes.js";
import type { RankBy } from "../../values/weights.js";
import { apiKeyHashText, type KeyKind } from "./api-key-secret.js";
import type { Caller } from "./caller.js";

export type { KeyRecord, KeyStore };

export type KeyLookup =
  | { readonly found: true; readonly caller: Caller }
  /** No usable key has this hash (unknown, revoked or expired). */
  | { readonly found: false; readonly unsettled?: false }
  /** The key changed and could not be read again for a while (database trouble): neither yes nor no. */
  | { readonly found: false; readonly unsettled: true };

/** One held key: its caller, and when it expires (ms; Infinity: never). One object per key. */
class Entry implements Caller {
  constructor(
    readonly keyId: string,
    readonly affiliateId: number,
    readonly rateLimit: Caller["rateLimit"],
    readonly kind: KeyKind,
    readonly allowedOrigins: readonly string[],
    readonly defaultRankBy: RankBy | null,
    readonly expiresAtMs: number,
    readonly scopes: readonly Scope[],
  ) {}
}

/** The origins of every secret key (none), shared. */
const NO_ORIGINS: readonly string[] = Object.freeze([]);

export interface KeySetOptions {
  readonly logger?: Logger;
  readonly nowMs?: () => number;
  /** Period of the whole reload. Default 60 s. */
  readonly resyncMs?: number;
  /** A key whose change could not be read again for this long is neither accepted nor refused. Default 500 ms. */
  readonly unsettledAfterMs?: number;
}

/**
 * Told that a key this instance held changed what it may do: `scopes` undefined when it is no longer usable
 * (revoked, expired, gone), else its new scopes (only when they changed).
 */
export type KeyChangeListener = (keyId: string, scopes: readonly Scope[] | undefined) => void;

const MAX_TIMER_MS = 2 ** 31 - 1;

export class KeySet {
  private byHash = new Map<string, Entry>();
  private hashById = new Map<string, string>();
  /** Origin → ids of the publishable keys that allow it. */
  private origins = new Map<string, Set<string>>();
  /** Keys named by a change and not read again yet: since when (ms), and a mark that changes when named again. */
  private readonly pending = new Map<string, { readonly since: number; readonly mark: number }>();
  private marks = 0;
  /** Set while a whole load runs: the keys changed meanwhile, read again after it. */
  private changedDuringLoad: Set<string> | undefined;
  private reloading: Promise<void> | undefined;
  private loading: Promise<void> | undefined;
  private loadedOnce = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private loadRetry: NodeJS.Timeout | undefined;
  private readonly changeListeners: KeyChangeListener[] = [];
  /** Ends each held key at its expiry (the soonest one's timer), so the key's open streams end with it. */
  private expiryTimer: NodeJS.Timeout | undefined;
  private expiryAtMs = Number.POSITIVE_INFINITY;
  private readonly nowMs: () => number;
  private lastErrorLogged = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly store: KeyStore,
    private readonly options: KeySetOptions = {},
  ) {
    this.nowMs = options.nowMs ?? Date.now;
  }

  /** True once the first whole load has completed (readiness waits for it). */
  get loaded(): boolean {
    return this.loadedOnce;
  }

  /** Usable keys held. */
  get size(): number {
    return this.byHash.size;
  }

  /** Usable keys held, by kind (metrics). */
  counts(): Record<KeyKind, number> {
    let publishable = 0;
    for (const entry of this.byHash.values()) if (entry.kind === "publishable") publishable += 1;
    return { secret: this.byHash.size - publishable, publishable };
  }

  /**
   * Loads every usable key, replacing what is held; the keys changed meanwhile are read again after.
   * A call while a load runs shares it.
   */
  load(): Promise<void> {
    this.loading ??= this.loadAll().finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }

  private async loadAll(): Promise<void> {
    const changed = new Set<string>();
    this.changedDuringLoad = changed;
    try {
      const records = await this.store.usable(Math.floor(this.nowMs() / 1000));
      const before = [...this.hashById.keys()].map((id) => this.entryOf(id) as Entry);
      this.byHash = new Map();
      this.hashById = new Map();
      this.origins = new Map();
      for (const record of records) this.put(record);
      for (const old of before) this.notifyIfChanged(old, this.entryOf(old.keyId));
      this.armExpiry();
      this.loadedOnce = true;
    } finally {
      this.changedDuringLoad = undefined;
    }
    if (changed.size > 0) this.changed(changed);
  }

  /**
   * Loads now (until it succeeds, every second), then again every `resyncMs`. Resolves after the
   * first successful load.
   */
  start(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    const period = this.options.resyncMs ?? 60_000;
    this.timer = setInterval(() => {
      this.load().catch((error: unknown) => this.logFailure(error));
    }, period);
    this.timer.unref();
    return new Promise((resolve) => {
      const attempt = () => {
        if (this.timer === undefined) return resolve(); // stopped
        this.load().then(resolve, (error: unknown) => {
          this.logFailure(error);
          this.loadRetry = setTimeout(attempt, 1_000);
          this.loadRetry.unref();
        });
      };
      attempt();
    });
  }

  stop(): void {
    this.stopped = true;
    if (this.expiryTimer !== undefined) clearTimeout(this.expiryTimer);
    this.expiryTimer = undefined;
    if (this.timer !== undefined) clearInterval(this.timer);
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    if (this.loadRetry !== undefined) clearTimeout(this.loadRetry);
    this.loadRetry = undefined;
    this.timer = undefined;
    this.retryTimer = undefined;
  }

  /** The change feed named these keys: read them again (coalesced; one read in flight). */
  changed(ids: Iterable<string>): void {
    const now = this.nowMs();
    for (const id of ids) {
      this.marks += 1;
      this.pending.set(id, { since: this.pending.get(id)?.since ?? now, mark: this.marks });
      this.changedDuringLoad?.add(id);
    }
    this.reloadPending();
  }

  /** Reads these keys again now and resolves once every change named so far is applied (or failed). */
  async refresh(ids: Iterable<string>): Promise<void> {
    this.changed(ids);
    await this.settled();
  }

  /** Resolves once no read of changed keys is running. */
  async settled(): Promise<void> {
    while (this.reloading !== undefined) await this.reloading;
  }

  /** The caller of a presented key (its shape already checked), from memory only. */
  lookup(secret: string): KeyLookup {
    const entry = this.byHash.get(apiKeyHashText(secret));
    if (entry === undefined) return { found: false };
    const since = this.pending.get(entry.keyId)?.since;
    if (since !== undefined && this.nowMs() - since > (this.options.unsettledAfterMs ?? 500)) {
      return { found: false, unsettled: true };
    }
    if (entry.expiresAtMs <= this.nowMs()) return { found: false };
    return { found: true, caller: entry };
  }

  /** Whether some usable publishable key allows this origin (CORS preflight). */
  allowsOrigin(origin: string): boolean {
    const ids = this.origins.get(origin);
    if (ids === undefined) return false;
    const now = this.nowMs();
    for (const id of ids) {
      const hash = this.hashById.get(id);
      const entry = hash === undefined ? undefined : this.byHash.get(hash);
      if (entry !== undefined && entry.expiresAtMs > now) return true;
    }
    return false;
  }

  /** Called with the id of each key this instance stops holding (revoked, expired, or gone). */
  onRemoved(listener: (keyId: string) => void): void {
    this.changeListeners.push((keyId, scopes) => {
      if (scopes === undefined) listener(keyId);
    });
  }

  /** Called when a held key stops being usable (revoked, at its expiry, gone) or its scopes change. */
  onChanged(listener: KeyChangeListener): void {
    this.changeListeners.push(listener);
  }

  private reloadPending(): void {
    if (this.reloading !== undefined || this.pending.size === 0) return;
    const asked = new Map([...this.pending].map(([id, state]) => [id, state.mark]));
    this.reloading = this.store
      .byIds([...asked.keys()])
      .then(
        (records) => {
          const now = Math.floor(this.nowMs() / 1000);
          const found = new Map(records.map((r) => [r.id, r]));
          for (const [id, mark] of asked) {
            const record = found.get(id);
            const held = this.remove(id);
            if (record !== undefined && record.revokedAt === null && (record.expiresAt ?? Infinity) > now) {
              this.put(record);
            }
            if (held !== undefined) this.notifyIfChanged(held, this.entryOf(id));
            // A key named again while this read ran stays pending for the next read.
            if (this.pending.get(id)?.mark === mark) this.pending.delete(id);
          }
          this.armExpiry();
        },
        (error: unknown) => {
          this.logFailure(error);
          // Retried shortly; meanwhile these keys answer "unsettled" once unsettledAfterMs has passed.
          this.retryTimer ??= setTimeout(() => {
            this.retryTimer = undefined;
            this.reloadPending();
          }, 200);
          this.retryTimer.unref();
        },
      )
      .finally(() => {
        this.reloading = undefined;
        if (this.retryTimer === undefined) this.reloadPending();
      });
  }

  private put(record: KeyRecord): void {
    const hashText = record.hash.toString("latin1");
    const kind: KeyKind = record.publishable ? "publishable" : "secret";
    this.byHash.set(
      hashText,
      new Entry(
        record.id,
        record.affiliateId,
        record.rateLimit,
        kind,
        record.allowedOrigins.length === 0 ? NO_ORIGINS : record.allowedOrigins,
        record.defaultRankBy,
        record.expiresAt === null ? Number.POSITIVE_INFINITY : record.expiresAt * 1000,
        record.scopes === undefined
          ? scopesOfKind(record.publishable)
          : normalScopes(record.scopes, record.publishable),
      ),
    );
    this.hashById.set(record.id, hashText);
    for (const origin of record.allowedOrigins) {
      let ids = this.origins.get(origin);
      if (ids === undefined) {
        ids = new Set();
        this.origins.set(origin, ids);
      }
      ids.add(record.id);
    }
  }

  private entryOf(id: string): Entry | undefined {
    const hashText = this.hashById.get(id);
    return hashText === undefined ? undefined : this.byHash.get(hashText);
  }

  /** Drops a key; returns what was held. */
  private remove(id: string): Entry | undefined {
    const hashText = this.hashById.get(id);
    if (hashText === undefined) return undefined;
    const entry = this.byHash.get(hashText);
    this.byHash.delete(hashText);
    this.hashById.delete(id);
    for (const origin of entry?.allowedOrigins ?? []) {
      const ids = this.origins.get(origin);
      ids?.delete(id);
      if (ids?.size === 0) this.origins.delete(origin);
    }
    return entry;
  }

  /** Tells the listeners what became of a held key: gone (`now` undefined), or usable with other scopes. */
  private notifyIfChanged(held: Entry, now: Entry | undefined): void {
    if (
      now !== undefined &&
      now.scopes.length === held.scopes.length &&
      now.scopes.every((s, i) => held.scopes[i] === s)
    )
      return;
    for (const listener of this.changeListeners) listener(held.keyId, now?.scopes);
  }

  /** (Re)arms the timer for the soonest expiry of a held key; at it, the expired keys are dropped and announced. */
  private armExpiry(): void {
    if (this.stopped) return;
    let soonest = Number.POSITIVE_INFINITY;
    for (const entry of this.byHash.values()) soonest = Math.min(soonest, entry.expiresAtMs);
    if (soonest === this.expiryAtMs) return;
    if (this.expiryTimer !== undefined) clearTimeout(this.expiryTimer);
    this.expiryTimer = undefined;
    this.expiryAtMs = soonest;
    if (soonest === Number.POSITIVE_INFINITY) return;
    const wait = Math.min(MAX_TIMER_MS, Math.max(0, soonest - this.nowMs()));
    this.expiryTimer = setTimeout(() => {
      this.expiryTimer = undefined;
      this.expiryAtMs = Number.POSITIVE_INFINITY;
      const now = this.nowMs();
      for (const entry of [...this.byHash.values()]) {
        if (entry.expiresAtMs > now) continue;
        this.remove(entry.keyId);
        this.notifyIfChanged(entry, undefined);
      }
      this.armExpiry();
    }, wait);
    this.expiryTimer.unref();
  }

  private logFailure(error: unknown): void {
    const now = this.nowMs();
    if (now - this.lastErrorLogged < 10_000) return;
    this.lastErrorLogged = now;
    this.options.logger?.warn({ err: error }, "could not read API keys; keys keep their last known state");
  }
}
