/**
 * Fleet standings: with a fleet (REDIS_URL), each period's board is computed by one instance, its leader, and the
 * others ask the leader for its answer instead of reading the database, so the database does the same work with one
 * instance or ten. The leader is chosen by rendezvous hashing over the instances alive (every instance agrees without
 * talking, and an instance that stops hands over only its own boards). A request carries the asker's change feed
 * position, and the leader answers only once it has applied at least as much, so an answer never predates a change
 * the asker has seen; an asker whose leader is gone, or answers from behind, or not within 5 s, computes the board
 * itself.
 * Without a fleet every instance computes alone, as before. See docs/architecture.md, "A fleet of instances".
 */
import { hash } from "node:crypto";
import type { FleetAnswer, FleetEntry, FleetPeriod, FleetRequest, FleetTransport } from "../../ports/fleet.js";
import type { RankedUser } from "./leaderboard.js";

/** Where this instance's change feed stands (boards/core/change-feed.ts). */
export interface FeedPosition {
  /** The highest change id applied. */
  position(): number;
  /** Whether some id at or below `id` is still awaited (it may commit later). */
  awaitsAtOrBelow(id: number): boolean;
  /** Resolves once a poll that started after the call has completed. */
  caughtUp(): Promise<void>;
  /** Whether the feed is current (cached answers may be served). */
  isCurrent(): boolean;
}

export interface FleetStandingsOptions {
  readonly transport: FleetTransport;
  readonly feed: FeedPosition;
  /**
   * How long an asker waits for a leader that is alive before computing itself. Default 5 s: a busy leader is
   * better waited for than doubled; one that stops is out of the members within 1.25 s, and its asks end then.
   */
  readonly timeoutMs?: number;
  /** The periods live boards show here (counted in `led` and in hand-overs). */
  readonly watched?: { periods(): readonly FleetPeriod[] };
  /** Unix ms. */
  readonly nowMs?: () => number;
}

/** A period served for another instance counts as led for this long after. */
const SERVED_RECENTLY_MS = 10_000;

/** The key a period is hashed and cached by. */
export function periodKey(period: FleetPeriod): string {
  return `${period.affiliateId}:${period.start}:${period.end}:${period.rankBy}`;
}

/** Rendezvous (highest random weight) hashing: the member with the highest score for the key leads it. */
export function rendezvousLeader(members: readonly string[], key: string): string | undefined {
  let best: string | undefined;
  let bestScore = -1;
  for (const member of members) {
    const score = hash("sha256", `${member}\n${key}`, "buffer").readUIntBE(0, 6);
    if (score > bestScore || (score === bestScore && best !== undefined && member < best)) {
      best = member;
      bestScore = score;
    }
  }
  return best;
}

export class FleetStandings {
  /** Period key → its leader, for the current members (cleared when they change). */
  private readonly leaders = new Map<string, string>();
  private readonly timeoutMs: number;
  /**
   * Answers taken from leaders, asks that fell back to computing here, requests served for others, and periods
   * this instance took over when the members changed.
   */
  readonly stats = { remote: 0, fallbacks: 0, behind: 0, served: 0, handovers: 0 };
  /** Period key → when it was last served for another instance (ms). */
  private readonly served = new Map<string, { period: FleetPeriod; at: number }>();
  private readonly nowMs: () => number;
  private members: readonly string[];
  /** This instance's own top 100 of a period it serves (cached or computed here); set by `serveWith`. */
  private compute: ((period: FleetPeriod) => Promise<readonly RankedUser[]>) | undefined;

  constructor(private readonly options: FleetStandingsOptions) {
    this.timeoutMs = options.timeoutMs ?? 5_000;
    this.nowMs = options.nowMs ?? Date.now;
    this.members = options.transport.members();
    options.transport.serve((request) => this.answer(request));
    options.transport.onMembersChanged(() => this.membersChanged());
  }

  /** The periods this instance leads that are watched here or were served for another instance lately. */
  led(): number {
    const periods = this.recentPeriods();
    let n = 0;
    for (const period of periods) if (this.leads(period)) n += 1;
    return n;
  }

  /** The instances alive, as this one knows them. */
  get memberCount(): number {
    return this.members.length;
  }

  /** Serves the other instances' requests with this instance's own top 100 of the period. */
  serveWith(compute: (period: FleetPeriod) => Promise<readonly RankedUser[]>): void {
    this.compute = compute;
  }

  /** New members: each period is led by its new leader; those that moved to this instance are counted. */
  private membersChanged(): void {
    const { self } = this.options.transport;
    const before = this.members;
    this.members = this.options.transport.members();
    this.leaders.clear();
    for (const period of this.recentPeriods()) {
      const key = periodKey(period);
      if (rendezvousLeader(before, key) !== self && this.leaderOf(period) === self) this.stats.handovers += 1;
    }
  }

  /** Watched here, or served for another instance within SERVED_RECENTLY_MS (older entries are forgotten). */
  private recentPeriods(): FleetPeriod[] {
    const periods = new Map<string, FleetPeriod>();
    for (const period of this.options.watched?.periods() ?? []) periods.set(periodKey(period), period);
    const since = this.nowMs() - SERVED_RECENTLY_MS;
    for (const [key, entry] of this.served) {
      if (entry.at < since) this.served.delete(key);
      else periods.set(key, entry.period);
    }
    return [...periods.values()];
  }

  /** The instance that computes this period's board. */
  leaderOf(period: FleetPeriod): string {
    const key = periodKey(period);
    let leader = this.leaders.get(key);
    if (leader === undefined) {
      const { transport } = this.options;
      leader = rendezvousLeader(this.members, key) ?? transport.self;
      this.leaders.set(key, leader);
    }
    return leader;
  }

  /** Whether this instance computes this period's board. */
  leads(period: FleetPeriod): boolean {
    return this.leaderOf(period) === this.options.transport.self;
  }

  /**
   * The board from its leader, when another instance leads it and answers in time with every change this one has
   * seen; undefined when this instance must compute it (it leads, or the leader did not answer, or was behind).
   * `fresh`: this instance's feed is behind, so the leader answers only if its own feed is current.
   */
  async fromLeader(period: FleetPeriod, fresh = false): Promise<readonly RankedUser[] | undefined> {
    const leader = this.leaderOf(period);
    if (leader === this.options.transport.self) return undefined;
    const minBasis = this.options.feed.position();
    let answer: FleetAnswer | undefined;
    try {
      answer = await this.options.transport.ask(leader, { period, minBasis, fresh }, this.timeoutMs);
    } catch {
      answer = undefined;
    }
    if (answer === undefined || answer.basis < minBasis) {
      this.stats.fallbacks += 1;
      if (answer !== undefined) this.stats.behind += 1;
      return undefined;
    }
    this.stats.remote += 1;
    return answer.entries.map(rankedUserOf);
  }

  /**
   * Serves another instance: first applies every change the asker had seen (one more read of the feed when this
   * instance is behind it, or still awaits an id at or below it), then answers with its own top 100 as of then. An
   * asker whose feed is behind is answered only while this instance's feed is current.
   */
  private async answer(request: FleetRequest): Promise<FleetAnswer> {
    const { compute } = this;
    if (compute === undefined) throw new Error("this instance does not serve boards yet");
    this.stats.served += 1;
    if (this.served.size >= 10_000) this.recentPeriods(); // forgets the old ones
    this.served.set(periodKey(request.period), { period: request.period, at: this.nowMs() });
    const { feed } = this.options;
    if (feed.position() < request.minBasis || feed.awaitsAtOrBelow(request.minBasis)) await feed.caughtUp();
    if (request.fresh && !feed.isCurrent()) await feed.caughtUp();
    if (request.fresh && !feed.isCurrent()) throw new Error("this instance's change feed is behind too");
    const basis = feed.position();
    const ranked = await compute(request.period);
    return { basis, entries: ranked.map(entryOf) };
  }
}

function entryOf(user: RankedUser): FleetEntry {
  return [user.rank, user.userId, user.username, user.avatar, user.totalWagered, user.weightedWagered];
}

function rankedUserOf(entry: FleetEntry): RankedUser {
  const [rank, userId, username, avatar, totalWagered, weightedWagered] = entry;
  return { rank, userId, username, avatar, totalWagered, weightedWagered };
}
