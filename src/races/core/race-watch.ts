/**
 * Live races: the fan-out behind the race streams (SSE and the WatchRace RPC). One entry per
 * watched race (an id, or a series' slug, which moves on to the series' next race by itself),
 * however many viewers it has: the entry asks `Races.get` once per poll and sends the race to
 * every viewer when what it shows changed (standings, state, times, the next race). Standings come
 * from the cached board, which the change feed keeps current, so a poll costs database work only
 * after a change; state changes (the start, the end, the freeze) reach viewers within a poll.
 * Pure domain: the protocols are viewers behind an interface.
 */
import { createHash } from "node:crypto";
import type { StoredRace } from "../../ports/races.js";
import type { RaceOutcome, Races, RaceView } from "./races.js";

/** How a protocol delivers to one viewer. Each method returns false when the viewer's connection does not drain. */
export interface RaceViewer {
  readonly protocol: string;
  race(view: RaceView, version: string): boolean;
  heartbeat(version: string): boolean;
  /** The hub ends the stream: the server stops or the viewer does not read. */
  end(reason: "slow" | "shutdown"): void;
}

export interface RaceWatchOptions {
  readonly races: Pick<Races, "get">;
  /** How often a watched race is asked again. */
  readonly pollMs: number;
  /** A heartbeat after this long without a race. */
  readonly heartbeatMs: number;
  /** Unix ms. */
  readonly nowMs?: () => number;
  /** A failed poll is logged here and tried again at the next one. */
  readonly onError?: (error: unknown) => void;
}

/** Refusal of `open`: the race is not the caller's or does not exist. */
export class RaceNotWatchable extends Error {
  constructor(readonly outcome: Exclude<RaceOutcome<RaceView>, { kind: "ok" }>) {
    super(`race cannot be watched: ${outcome.kind}`);
    this.name = "RaceNotWatchable";
  }
}

/**
 * Which stored fields some skin shows (REST, SSE, the Race message) and so belong in the version. The
 * clock's bookkeeping (announcements, the next race made, the last update's time) is not shown: a version
 * that covered it changed a second after a race started and sent viewers the same race twice. A Record
 * over every key, so that a new stored field cannot be added without deciding.
 */
const SHOWN_FIELDS: Readonly<Record<keyof StoredRace, boolean>> = {
  id: true,
  slug: true,
  title: true,
  startTimestamp: true,
  endTimestamp: true,
  rankBy: true,
  prizes: true,
  currency: true,
  minWagered: true,
  excludedUserIds: true,
  reviewSeconds: true,
  shown: true,
  repeat: true,
  timeZone: true,
  affiliateExternalId: true,
  cancelledAt: true,
  frozenAt: true,
  digest: true,
  unallocated: true,
  affiliateId: false,
  seriesIndex: false,
  anchorStart: false,
  createdAt: false,
  updatedAt: false,
  startAnnounced: false,
  endAnnounced: false,
  nextCreated: false,
  // Whether the race still answers for its slug: it shows only through `next`, which the version covers.
  slugHeld: false,
};

/** What a version covers: everything a viewer sees but the server's clock, and nothing a viewer does not see. */
export function raceVersion(view: RaceView): string {
  const { now: _now, race, ...rest } = view;
  const shownRace = Object.fromEntries(
    (Object.keys(SHOWN_FIELDS) as (keyof StoredRace)[]).filter((k) => SHOWN_FIELDS[k]).map((k) => [k, race[k]]),
  );
  return createHash("sha256")
    .update(JSON.stringify({ race: shownRace, ...rest }))
    .digest("base64url")
    .slice(0, 16);
}

interface Watched {
  readonly affiliateId: number;
  readonly idOrSlug: string;
  readonly viewers: Set<RaceViewer>;
  version: string;
  view: RaceView;
  lastSentMs: number;
  polling: boolean;
}

export class RaceWatch {
  private readonly watched = new Map<string, Watched>();
  private readonly nowMs: () => number;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly options: RaceWatchOptions) {
    this.nowMs = options.nowMs ?? Date.now;
  }

  /** Viewers across every watched race. */
  get viewers(): number {
    let count = 0;
    for (const entry of this.watched.values()) count += entry.viewers.size;
    return count;
  }

  /**
   * Adds a viewer: sends the race at once unless `resumeVersion` is its version, then each change.
   * Throws RaceNotWatchable when the race is not found for this affiliate.
   */
  async open(
    affiliateId: number,
    idOrSlug: string,
    viewer: RaceViewer,
    resumeVersion?: string,
  ): Promise<{ close(): void }> {
    if (this.closed) throw new Error("race watch is shut down");
    const key = `${affiliateId}:${idOrSlug}`;
    let entry = this.watched.get(key);
    if (entry === undefined) {
      const outcome = await this.options.races.get(affiliateId, idOrSlug);
      if (outcome.kind !== "ok") throw new RaceNotWatchable(outcome);
      // Another viewer may have started watching while this one read the race.
      entry = this.watched.get(key) ?? {
        affiliateId,
        idOrSlug,
        viewers: new Set(),
        version: raceVersion(outcome.value),
        view: outcome.value,
        lastSentMs: this.nowMs(),
        polling: false,
      };
      this.watched.set(key, entry);
    }
    const watched = entry;
    watched.viewers.add(viewer);
    if (resumeVersion !== watched.version && !viewer.race(watched.view, watched.version))
      this.drop(watched, viewer, "slow");
    this.schedule();
    return {
      close: () => {
        watched.viewers.delete(viewer);
        if (watched.viewers.size === 0) this.watched.delete(key);
      },
    };
  }

  /** Ends every stream ("shutdown") and stops polling. */
  shutdown(): void {
    this.closed = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    for (const entry of this.watched.values()) {
      for (const viewer of entry.viewers) viewer.end("shutdown");
    }
    this.watched.clear();
  }

  private schedule(): void {
    if (this.timer !== undefined || this.closed) return;
    this.timer = setInterval(() => this.pollAll(), this.options.pollMs);
    this.timer.unref();
  }

  private pollAll(): void {
    if (this.watched.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    for (const entry of this.watched.values()) {
      if (!entry.polling) void this.poll(entry);
    }
  }

  private async poll(entry: Watched): Promise<void> {
    entry.polling = true;
    try {
      const outcome = await this.options.races.get(entry.affiliateId, entry.idOrSlug);
      if (outcome.kind !== "ok") return;
      const version = raceVersion(outcome.value);
      entry.view = outcome.value;
      if (version !== entry.version) {
        entry.version = version;
        entry.lastSentMs = this.nowMs();
        for (const viewer of entry.viewers) {
          if (!viewer.race(outcome.value, version)) this.drop(entry, viewer, "slow");
        }
      } else if (this.nowMs() - entry.lastSentMs >= this.options.heartbeatMs) {
        entry.lastSentMs = this.nowMs();
        for (const viewer of entry.viewers) {
          if (!viewer.heartbeat(version)) this.drop(entry, viewer, "slow");
        }
      }
    } catch (error) {
      this.options.onError?.(error);
    } finally {
      entry.polling = false;
    }
  }

  private drop(entry: Watched, viewer: RaceViewer, reason: "slow"): void {
    entry.viewers.delete(viewer);
    viewer.end(reason);
  }
}
