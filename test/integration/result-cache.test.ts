/**
 * The result cache: hits skip the database, smaller lists are slices of the
 * cached top 100, concurrent identical requests share one query, answers say
 * how fresh they are, and CACHE_TTL_MS=0 turns it off.
 */
import type { Pool } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Leaderboard } from "../../src/boards/core/leaderboard.js";
import { mariadbStandings } from "../../src/boards/sql/standings-store.js";
import { addUsers, addWagers, createKey, wager } from "../support/fixtures.js";
import { metricSample } from "../support/live.js";
import { startTestServer, type TestServer } from "../support/server.js";

const DAY = 1_790_812_800; // 2026-10-01T00:00:00Z
const NOW = DAY + 12 * 3600;

let cached: TestServer;
let uncached: TestServer;
const keys: Record<string, string> = {};

/** The cached server's read pool, with every `execute` (how the leaderboard queries) counted. */
function countingQueries(): { pool: Pool; counting: Pool; queries: () => number } {
  const pool = cached.database.db.read;
  let queries = 0;
  const counting = new Proxy(pool, {
    get(target, property, receiver) {
      if (property === "execute") {
        return (...args: Parameters<Pool["execute"]>) => {
          queries += 1;
          return target.execute(...args);
        };
      }
      return Reflect.get(target, property, receiver);
    },
  });
  return { pool, counting, queries: () => queries };
}

/** Whether cached answers are served now: the change feed's lag (as its metric reads) is under CHANGE_FEED_MAX_LAG_MS. */
async function cacheServing(server: TestServer): Promise<boolean> {
  const lagSeconds = await metricSample(server.app.metrics, "topwagers_change_feed_lag_seconds");
  return lagSeconds * 1000 < server.config.changeFeedMaxLagMs;
}

async function post(server: TestServer, key: string, body: object) {
  const response = await fetch(`${server.baseUrl}/top-affiliate-wagers-by-period`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as { data: unknown[]; errors: unknown };
  return { status: response.status, cacheControl: response.headers.get("cache-control"), body: json };
}

async function seed(server: TestServer): Promise<string> {
  const db = server.database.db;
  const key = (await createKey(db, "aff")).secret;
  await addUsers(
    db,
    Array.from({ length: 120 }, (_, i) => ({
      id: `u${i}`,
      affiliateId: "aff",
      username: `user${String(i).padStart(3, "0")}`,
      avatar: "",
    })),
  );
  // user i wagered i + 1 in the morning of DAY: totals 1..120, all distinct.
  await addWagers(
    db,
    Array.from({ length: 120 }, (_, i) => wager(`u${i}`, String(i + 1), DAY + 3600)),
  );
  return key;
}

beforeAll(async () => {
  cached = await startTestServer("cache_on", { CACHE_TTL_MS: "10000" }, { now: () => NOW });
  uncached = await startTestServer("cache_off", { CACHE_TTL_MS: "0" }, { now: () => NOW });
  keys.cached = await seed(cached);
  keys.uncached = await seed(uncached);
  // The seed's own changes reach the cache through the change feed; start from a settled cache.
  await cached.app.caughtUp();
});

afterAll(async () => {
  await Promise.all([cached?.close(), uncached?.close()]);
});

describe("result cache over REST", () => {
  it("answers a repeated period from the cache, not the database, and says for how long", async () => {
    const period = { startTimestamp: DAY, endTimestamp: DAY + 86_399, numUsers: 2 };
    const first = await post(cached, keys.cached ?? "", period);
    expect(first).toEqual({
      status: 200,
      // Changes reach every instance within a second, so callers may reuse an answer for 1 s.
      cacheControl: "private, max-age=1",
      body: {
        data: [
          { username: "user119", avatar: "https://www.gravatar.com/avatar/?d=mp&s=256", totalWagered: 120 },
          { username: "user118", avatar: "https://www.gravatar.com/avatar/?d=mp&s=256", totalWagered: 119 },
        ],
        errors: null,
      },
    });
    // The same question again is answered from the cache: no database query. (The cache is served
    // only while the change feed is current; on a loaded machine a poll can be late.)
    for (let i = 0; i < 200 && !(await cacheServing(cached)); i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const before = cached.app.leaderboard.cacheStats;
    const second = await post(cached, keys.cached ?? "", period);
    expect(second).toEqual(first);
    expect(cached.app.leaderboard.cacheStats).toEqual({ ...before, hits: before.hits + 1 });
    // A new wager lands; the change feed drops the cached answer within a second.
    await addWagers(cached.database.db, [wager("u0", "1000", DAY + 7200)]);
    const committedAt = Date.now();
    let seen = await post(cached, keys.cached ?? "", period);
    while (seen.body.data.length > 0 && (seen.body.data[0] as { totalWagered: number }).totalWagered !== 1001) {
      if (Date.now() - committedAt > 1000) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
      seen = await post(cached, keys.cached ?? "", period);
    }
    expect(Date.now() - committedAt).toBeLessThanOrEqual(1000);
    expect(seen.body.data[0]).toEqual({
      username: "user000",
      avatar: "https://www.gravatar.com/avatar/?d=mp&s=256",
      totalWagered: 1001,
    });
    // The uncached server sees it at once and tells callers not to store the answer.
    await addWagers(uncached.database.db, [wager("u0", "1000", DAY + 7200)]);
    const fresh = await post(uncached, keys.uncached ?? "", period);
    expect(fresh.cacheControl).toBe("no-store");
    expect(fresh.body.data[0]).toEqual({
      username: "user000",
      avatar: "https://www.gravatar.com/avatar/?d=mp&s=256",
      totalWagered: 1001,
    });
  });

  it("serves a shorter list as a slice of the cached top 100", async () => {
    const period = { startTimestamp: DAY, endTimestamp: DAY + 3 * 3600 - 1 };
    const hundred = await post(cached, keys.cached ?? "", { ...period, numUsers: 100 });
    const five = await post(cached, keys.cached ?? "", { ...period, numUsers: 5 });
    expect(hundred.body.data).toHaveLength(100);
    expect(five.body.data).toEqual(hundred.body.data.slice(0, 5));
  });

  it("never tells callers to reuse an answer longer than 1 s, settled periods included", async () => {
    const settled = await post(cached, keys.cached ?? "", {
      startTimestamp: DAY - 10 * 86_400,
      endTimestamp: DAY - 2 * 86_400,
      numUsers: 3,
    });
    expect(settled).toEqual({ status: 200, cacheControl: "private, max-age=1", body: { data: [], errors: null } });
  });
});

describe("single flight", () => {
  it("lets 20 concurrent identical requests share one database query", async () => {
    const { pool, counting, queries } = countingQueries();
    const leaderboard = new Leaderboard({
      standings: mariadbStandings(counting),
      defaultAvatarUrl: "https://d.example/a.png",
      cacheTtlMs: 10_000,
      now: () => NOW,
    });
    const [affiliate] = (await pool.query("SELECT id FROM affiliates WHERE external_id = 'aff'"))[0] as {
      id: number;
    }[];
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        leaderboard.topWagersForPeriod(affiliate?.id ?? 0, { start: DAY, end: DAY + 86_399, numUsers: 1 + (i % 10) }),
      ),
    );
    expect(queries()).toBe(1);
    expect(leaderboard.cacheStats).toEqual({ hits: 19, misses: 1, size: 1 });
    expect(answers.map((a) => a.ranked.length)).toEqual(Array.from({ length: 20 }, (_, i) => 1 + (i % 10)));
    expect(answers[9]?.ranked[0]).toEqual({
      rank: 1,
      userId: "u0",
      username: "user000",
      avatar: "https://d.example/a.png",
      totalWagered: "1001",
      weightedWagered: "1001",
    });
  });
});

describe("entry lifetimes", () => {
  it("keeps a running period for CACHE_TTL_MS and one that ended over a day ago 360 times longer", async () => {
    const { counting, queries } = countingQueries();
    let now = NOW;
    const leaderboard = new Leaderboard({
      standings: mariadbStandings(counting),
      defaultAvatarUrl: "https://d.example/a.png",
      cacheTtlMs: 1_000,
      now: () => now,
    });
    const running = { start: DAY, end: NOW + 3600, numUsers: 1 };
    const settled = { start: DAY - 10 * 86_400, end: DAY - 2 * 86_400, numUsers: 1 };
    await leaderboard.topWagersForPeriod(1, running);
    await leaderboard.topWagersForPeriod(1, settled);
    const afterFirst = queries();
    now += 1; // 1 s later: the running period's entry (1 s) has expired, the settled one (360 s) has not
    await leaderboard.topWagersForPeriod(1, running);
    await leaderboard.topWagersForPeriod(1, settled);
    expect(queries() - afterFirst).toBeGreaterThan(0);
    const afterSecond = queries();
    await leaderboard.topWagersForPeriod(1, settled);
    expect(queries()).toBe(afterSecond);
    now += 359; // 360 s after it was stored
    await leaderboard.topWagersForPeriod(1, settled);
    expect(queries()).toBeGreaterThan(afterSecond);
  });
});
