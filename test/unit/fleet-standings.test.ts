/**
 * The fleet's rules alone (no Redis, no database): who leads a period (rendezvous hashing: every member agrees, and
 * a member leaving moves only its own periods), an asker taking the leader's answer only when it reflects every
 * change the asker has seen, the leader reading its feed once more when it is behind or still awaits an id, falling
 * back to computing when the leader is gone, slow or behind, hand-overs counted, and the leaderboard keeping a
 * leader's answer in its cache so that a POST for it computes nothing. The transport between the instances is an
 * in-memory hub here; on Redis it is platform/redis/fleet.ts (test/e2e/fleet-boards.test.ts).
 */
import { describe, expect, it } from "vitest";
import { FleetStandings, periodKey, rendezvousLeader } from "../../src/boards/core/fleet-standings.js";
import { Leaderboard, type RankedUser } from "../../src/boards/core/leaderboard.js";
import type { FleetAnswer, FleetPeriod, FleetRequest, FleetTransport } from "../../src/ports/fleet.js";

/** Instances connected in memory; `down` ones do not answer (as a killed process whose PUBLISH reaches nobody). */
class Hub {
  readonly servers = new Map<string, (request: FleetRequest) => Promise<FleetAnswer>>();
  readonly listeners = new Map<string, () => void>();
  alive: string[] = [];
  readonly down = new Set<string>();
  asks = 0;

  transport(self: string): FleetTransport {
    this.alive = [...this.alive, self].sort();
    return {
      self,
      members: () => this.alive,
      onMembersChanged: (listener) => this.listeners.set(self, listener),
      ask: async (member, request) => {
        this.asks += 1;
        const serve = this.servers.get(member);
        if (serve === undefined || this.down.has(member)) return undefined;
        return serve(request);
      },
      serve: (answer) => this.servers.set(self, answer),
      close: async () => undefined,
    };
  }

  setAlive(members: string[]): void {
    this.alive = [...members].sort();
    for (const [member, listener] of this.listeners) if (members.includes(member)) listener();
  }
}

/** A change feed position the test moves by hand; `caughtUp` applies what `onPoll` says. */
class Feed {
  constructor(
    public at: number,
    public awaited: number[] = [],
    public onPoll: () => void = () => undefined,
  ) {}
  polls = 0;
  current = true;
  isCurrent = () => this.current;
  position = () => this.at;
  awaitsAtOrBelow = (id: number) => this.awaited.some((gap) => gap <= id);
  caughtUp = async () => {
    this.polls += 1;
    this.onPoll();
  };
}

const user = (userId: string, total: string, rank: number): RankedUser => ({
  rank,
  userId,
  username: `name-${userId}`,
  avatar: "https://cdn.example.test/a.png",
  totalWagered: total,
  weightedWagered: total,
});

const BOARD: readonly RankedUser[] = [user("u1", "300.5", 1), user("u2", "200", 2), user("u3", "200", 2)];

/** A period led by `leader` among `members` (searching affiliate ids). */
function periodLedBy(leader: string, members: string[]): FleetPeriod {
  for (let affiliateId = 1; ; affiliateId++) {
    const period: FleetPeriod = { affiliateId, start: 1_000, end: 2_000, rankBy: "wagered" };
    if (rendezvousLeader(members, periodKey(period)) === leader) return period;
  }
}

function instance(hub: Hub, self: string, feed: Feed, watched: FleetPeriod[] = []) {
  const computed: FleetPeriod[] = [];
  const fleet = new FleetStandings({
    transport: hub.transport(self),
    feed,
    watched: { periods: () => watched },
    timeoutMs: 50,
  });
  fleet.serveWith(async (period) => {
    computed.push(period);
    return BOARD;
  });
  return { fleet, computed, feed };
}

describe("rendezvous leaders", () => {
  const members = ["a", "b", "c"];
  const keys = Array.from({ length: 3_000 }, (_, i) => `${i}:1000:2000:wagered`);

  it("gives every key one leader whatever the order of the members, and spreads the keys", () => {
    const counts = new Map<string, number>();
    for (const key of keys) {
      const leader = rendezvousLeader(members, key) as string;
      expect(rendezvousLeader(["c", "a", "b"], key)).toBe(leader);
      counts.set(leader, (counts.get(leader) ?? 0) + 1);
    }
    // 1,000 each expected; a hash that sent most keys to one member would fail this.
    for (const member of members) expect(counts.get(member)).toBeGreaterThan(850);
    expect(rendezvousLeader([], "x")).toBeUndefined();
  });

  it("moves only the keys of a member that leaves, and a member that joins takes only keys it now leads", () => {
    let moved = 0;
    for (const key of keys) {
      const before = rendezvousLeader(members, key);
      const after = rendezvousLeader(["a", "c"], key);
      if (before !== "b") expect(after).toBe(before);
      else moved += 1;
      const joined = rendezvousLeader([...members, "d"], key);
      if (joined !== "d") expect(joined).toBe(before);
    }
    expect(moved).toBeGreaterThan(850);
  });
});

describe("asking the leader", () => {
  it("takes the leader's answer, computed once there, when the leader has applied every change the asker has", async () => {
    const hub = new Hub();
    const a = instance(hub, "a", new Feed(40));
    const b = instance(hub, "b", new Feed(40));
    const period = periodLedBy("a", ["a", "b"]);
    expect(a.fleet.leads(period)).toBe(true);
    expect(b.fleet.leads(period)).toBe(false);
    expect(await b.fleet.fromLeader(period)).toEqual(BOARD);
    expect(a.computed).toEqual([period]);
    expect(a.feed.polls).toBe(0);
    expect(b.fleet.stats).toEqual({ remote: 1, fallbacks: 0, behind: 0, served: 0, handovers: 0 });
    expect(a.fleet.stats).toEqual({ remote: 0, fallbacks: 0, behind: 0, served: 1, handovers: 0 });
    // The leader itself never asks: it computes.
    expect(await a.fleet.fromLeader(period)).toBeUndefined();
    expect(hub.asks).toBe(1);
  });

  it("makes a leader behind the asker read its feed first, and answer as of then", async () => {
    const hub = new Hub();
    const leaderFeed = new Feed(30);
    leaderFeed.onPoll = () => {
      leaderFeed.at = 45;
    };
    instance(hub, "a", leaderFeed);
    const b = instance(hub, "b", new Feed(44));
    const period = periodLedBy("a", ["a", "b"]);
    expect(await b.fleet.fromLeader(period)).toEqual(BOARD);
    expect(leaderFeed.polls).toBe(1);
  });

  it("makes a leader that still awaits an id at or below the asker's position read its feed first", async () => {
    const hub = new Hub();
    const leaderFeed = new Feed(50, [38]);
    instance(hub, "a", leaderFeed);
    const b = instance(hub, "b", new Feed(44));
    expect(await b.fleet.fromLeader(periodLedBy("a", ["a", "b"]))).toEqual(BOARD);
    expect(leaderFeed.polls).toBe(1);
    // An awaited id above the asker's position does not matter to it.
    leaderFeed.awaited = [47];
    expect(await b.fleet.fromLeader(periodLedBy("a", ["a", "b"]))).toEqual(BOARD);
    expect(leaderFeed.polls).toBe(1);
  });

  it("computes here when the leader is still behind after reading its feed, is gone, or fails", async () => {
    const hub = new Hub();
    const a = instance(hub, "a", new Feed(30));
    const b = instance(hub, "b", new Feed(44));
    const period = periodLedBy("a", ["a", "b"]);
    expect(await b.fleet.fromLeader(period)).toBeUndefined();
    expect(a.feed.polls).toBe(1);
    a.feed.at = 44;
    hub.down.add("a");
    expect(await b.fleet.fromLeader(period)).toBeUndefined();
    hub.down.clear();
    a.fleet.serveWith(async () => {
      throw new Error("database down");
    });
    await expect(b.fleet.fromLeader(period)).resolves.toBeUndefined();
    expect(b.fleet.stats.fallbacks).toBe(3);
    expect(b.fleet.stats.remote).toBe(0);
  });

  it("answers an asker whose feed is behind only while the leader's own feed is current", async () => {
    const hub = new Hub();
    const a = instance(hub, "a", new Feed(50));
    const b = instance(hub, "b", new Feed(44));
    const period = periodLedBy("a", ["a", "b"]);
    expect(await b.fleet.fromLeader(period, true)).toEqual(BOARD);
    expect(a.feed.polls).toBe(0);
    a.feed.current = false;
    expect(await b.fleet.fromLeader(period, true)).toBeUndefined();
    expect(a.feed.polls).toBe(1);
    a.feed.onPoll = () => {
      a.feed.current = true;
    };
    expect(await b.fleet.fromLeader(period, true)).toEqual(BOARD);
    expect(a.feed.polls).toBe(2);
    // An asker whose feed is current does not care.
    a.feed.current = false;
    a.feed.onPoll = () => undefined;
    expect(await b.fleet.fromLeader(period)).toEqual(BOARD);
    expect(b.fleet.stats).toMatchObject({ remote: 3, fallbacks: 1, behind: 0 });
  });

  it("counts the watched periods an instance takes over when the leader leaves", async () => {
    const hub = new Hub();
    const watched = [periodLedBy("a", ["a", "b"]), periodLedBy("a", ["a", "b"])];
    watched[1] = { ...(watched[1] as FleetPeriod), rankBy: "weighted" };
    const ledByA = watched.filter((p) => rendezvousLeader(["a", "b"], periodKey(p)) === "a").length;
    instance(hub, "a", new Feed(1));
    const b = instance(hub, "b", new Feed(1), watched);
    const before = b.fleet.led();
    hub.setAlive(["b"]);
    expect(b.fleet.stats.handovers).toBe(ledByA);
    expect(b.fleet.led()).toBe(2);
    expect(before).toBe(2 - ledByA);
    expect(b.fleet.memberCount).toBe(1);
  });
});

/** A database with no wagers that counts the board queries it answers, and a leaderboard's options on it (10 s cache). */
function emptyDatabase() {
  const database = {
    queries: 0,
    options: {
      standings: {
        topUsers: async () => {
          database.queries += 1;
          return [];
        },
      },
      defaultAvatarUrl: "https://cdn.example.test/default.png",
      cacheTtlMs: 10_000,
    },
  };
  return database;
}

describe("the leaderboard in a fleet", () => {
  it("keeps the leader's answer in its cache: a POST for the period then computes nothing", async () => {
    const hub = new Hub();
    const a = instance(hub, "a", new Feed(10));
    const bFeed = new Feed(10);
    const b = instance(hub, "b", bFeed);
    const period = periodLedBy("a", ["a", "b"]);
    const database = emptyDatabase();
    const leaderboard = new Leaderboard({
      ...database.options,
      now: () => 1_500,
      fleet: b.fleet,
      isWatched: () => true,
    });
    const query = { start: period.start, end: period.end, numUsers: 2 };
    const first = await leaderboard.topWagersForPeriod(period.affiliateId, query);
    expect(first.ranked).toEqual(BOARD.slice(0, 2));
    const again = await leaderboard.topWagersForPeriod(period.affiliateId, { ...query, numUsers: 3 });
    expect(again.ranked).toEqual(BOARD);
    expect(database.queries).toBe(0);
    expect(leaderboard.computations).toEqual({ full: 0, remote: 1 });
    expect(a.computed).toHaveLength(1);
    // A leader that cannot answer: computed here, from the database.
    hub.down.add("a");
    leaderboard.applyChanges([
      { affiliateId: period.affiliateId, firstAt: 1_200, lastAt: 1_200, userExternalId: undefined },
    ]);
    await leaderboard.topWagersForPeriod(period.affiliateId, query);
    expect(database.queries).toBe(1);
    expect(leaderboard.computations).toEqual({ full: 1, remote: 1 });
  });
});

describe("a watched period's cached answer", () => {
  it("is kept past CACHE_TTL_MS while watched (a change drops it), and an unwatched one is not", async () => {
    let clock = 1_500;
    const database = emptyDatabase();
    const watchedPeriods = new Set<number>([1]);
    const leaderboard = new Leaderboard({
      ...database.options,
      now: () => clock,
      isWatched: (period) => watchedPeriods.has(period.affiliateId),
    });
    const query = { start: 1_000, end: 2_000, numUsers: 10 };
    await leaderboard.topWagersForPeriod(1, query);
    await leaderboard.topWagersForPeriod(2, query);
    expect(database.queries).toBe(2);
    clock += 11; // past the 10 s TTL
    await leaderboard.topWagersForPeriod(1, query);
    expect(database.queries).toBe(2);
    await leaderboard.topWagersForPeriod(2, query);
    expect(database.queries).toBe(3);
    leaderboard.applyChanges([{ affiliateId: 1, firstAt: 1_200, lastAt: 1_200, userExternalId: undefined }]);
    await leaderboard.topWagersForPeriod(1, query);
    expect(database.queries).toBe(4);
  });
});
