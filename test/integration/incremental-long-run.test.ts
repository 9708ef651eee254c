/**
 * A long randomized run against MariaDB through the Leaderboard as the service runs it (held boards of
 * the top 100 plus a margin of 50, kept current by the change feed): batches of wagers placed anywhere in
 * the last 40 days (late wagers), with weights and amounts that tie; voids, half of them of most wagers
 * of 60 shown users at once (pushing shown users below the margin); renames to names that tie; moves. After every
 * step every board (month, half-month, week and a misaligned span that include now; plain and weighted;
 * a large and a small affiliate) must equal a full computation of the same board, row for row.
 *
 * Deterministic for a seed (INCREMENTAL_SEED, printed), bounded in steps (INCREMENTAL_STEPS) and in time
 * (45 s of steps at most, so CI stays under a minute).
 */
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChangeFeed } from "../../src/boards/core/change-feed.js";
import { Leaderboard } from "../../src/boards/core/leaderboard.js";
import { mariadbChanges } from "../../src/boards/sql/change-store.js";
import { mariadbStandings } from "../../src/boards/sql/standings-store.js";
import { WagerIngest } from "../../src/ingest/core/wager-ingest.js";
import { mariadbIngest } from "../../src/ingest/sql/ingest-store.js";
import type { StandingsStore } from "../../src/ports/standings.js";
import { canonicalDecimal } from "../../src/values/decimal.js";
import type { RankBy } from "../../src/values/weights.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";

const utc = (y: number, m: number, d: number, h = 0) => Date.UTC(y, m - 1, d, h) / 1000;
const NOW = utc(2026, 3, 20, 12);
const DAY = 86_400;
const DEFAULT_AVATAR = "https://cdn.example.test/default.png";
const PERIODS: readonly (readonly [number, number])[] = [
  [utc(2026, 3, 1), utc(2026, 4, 1) - 1],
  [utc(2026, 3, 16), utc(2026, 4, 1) - 1],
  [utc(2026, 3, 16), utc(2026, 3, 23) - 1],
  [NOW - 30 * DAY + 17, NOW + 3600],
];
/** Users per affiliate: one larger than the held rows (150), one smaller than the shown ones (100). */
const AFFILIATES = [
  { name: "big", users: 400 },
  { name: "small", users: 60 },
] as const;
const NAMES = ["amy", "bob", "cid", "Dee", "émile", "zed", "\u{1F600}", "al"];
const AMOUNTS = ["1", "2", "5", "10", "0.5", "25", "100"];
const WEIGHTS = [undefined, undefined, 10_000, 5000, 0, 2500];

/** mulberry32: a small seeded generator, so that a failing run can be replayed. */
function generator(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(list: readonly T[]) => list[int(list.length)] as T;
  return { next, int, pick };
}

let database: TestDatabase;
let feed: ChangeFeed | undefined;

beforeAll(async () => {
  database = await createTestDatabase("incremental_long");
});

afterAll(async () => {
  await feed?.stop();
  await database?.drop();
});

const rowsOf = (
  ranked: readonly {
    userId: string;
    username: string;
    avatar: string;
    totalWagered: string;
    weightedWagered: string;
  }[],
) => ranked.map((u) => [u.userId, u.username, u.avatar, u.totalWagered, u.weightedWagered]);

describe("boards held incrementally, a long randomized run against MariaDB", () => {
  it("equal a full computation after every step", async () => {
    const seed = Number(process.env.INCREMENTAL_SEED ?? 20261127);
    const steps = Number(process.env.INCREMENTAL_STEPS ?? 160);
    const random = generator(seed);
    const db = database.db;
    const ingest = new WagerIngest(mariadbIngest(db.write), { now: () => NOW });
    const standings: StandingsStore = mariadbStandings(db.read);
    const leaderboard = new Leaderboard({
      standings,
      defaultAvatarUrl: DEFAULT_AVATAR,
      cacheTtlMs: 600_000,
      now: () => NOW,
      freshness: { isCurrent: () => true },
      incremental: { checkEverySeconds: 1_000_000 },
    });
    feed = new ChangeFeed(mariadbChanges(db.read), { intervalMs: 60_000 });
    feed.follow((changes) => leaderboard.applyChanges(changes));
    feed.start();
    await feed.caughtUp();

    const users = AFFILIATES.flatMap((a) =>
      Array.from({ length: a.users }, (_, i) => ({ id: `${a.name}-u${i}`, affiliate: a.name })),
    );
    await ingest.upsertUsers(
      users.map((u, i) => ({
        id: u.id,
        affiliateId: u.affiliate,
        username: NAMES[i % NAMES.length] as string,
        avatar: "",
      })),
    );
    const keys = new Map<string, number>();
    for (const a of AFFILIATES) {
      const [rows] = await db.read.query<RowDataPacket[]>("SELECT id FROM affiliates WHERE external_id = ?", [a.name]);
      keys.set(a.name, Number(rows[0]?.id));
    }
    const recorded: { id: string; user: string }[] = [];
    let wagerCount = 0;
    /** Leaders of the big affiliate are drawn more often, so totals cross near the cut. */
    const someUser = () => (random.next() < 0.5 ? (users[random.int(180)] as { id: string }) : random.pick(users)).id;

    const record = async () => {
      const batch = Array.from({ length: 1 + random.int(200) }, () => {
        wagerCount += 1;
        const weightBps = random.pick(WEIGHTS);
        return {
          id: `w${wagerCount}`,
          userId: someUser(),
          amount: random.pick(AMOUNTS),
          placedAt: BigInt(NOW - random.int(40 * DAY)),
          ...(weightBps === undefined ? {} : { weightBps }),
        };
      });
      const outcome = await ingest.recordWagers(batch);
      expect(outcome.kind).toBe("recorded");
      recorded.push(...batch.map((w) => ({ id: w.id, user: w.userId })));
    };
    const voidSome = async () => {
      // Half the time most wagers of 60 users shown on a board at once: shown users fall below the
      // margin (most still listed), and users not held rise into the shown rows.
      let ids = Array.from({ length: 1 + random.int(20) }, () => random.pick(recorded).id);
      if (random.next() < 0.5) {
        const [start, end] = random.pick(PERIODS);
        const shown = await leaderboard.topWagersForPeriod(keys.get("big") as number, { start, end, numUsers: 100 });
        const hit = new Set(shown.ranked.filter(() => random.next() < 0.6).map((u) => u.userId));
        ids = recorded.filter((w) => hit.has(w.user) && random.next() < 0.95).map((w) => w.id);
      }
      for (let at = 0; at < ids.length; at += 1000) await ingest.voidWagers(ids.slice(at, at + 1000));
    };
    const renameSome = async () => {
      const profiles = Array.from({ length: 1 + random.int(3) }, () => {
        const user = random.pick(users);
        const moved = random.next() < 0.1 ? (user.affiliate === "big" ? "small" : "big") : user.affiliate;
        return {
          id: user.id,
          affiliateId: moved,
          username: random.pick(NAMES),
          avatar: random.next() < 0.3 ? "https://img.example.test/a.png" : "",
        };
      });
      await ingest.upsertUsers(profiles);
    };

    const started = Date.now();
    let done = 0;
    for (; done < steps && Date.now() - started < 45_000; done++) {
      const draw = random.next();
      if (draw < 0.65 || recorded.length === 0) await record();
      else if (draw < 0.85) await voidSome();
      else await renameSome();
      await feed.caughtUp();
      for (const [name, affiliateId] of keys) {
        for (const [start, end] of PERIODS) {
          for (const rankBy of ["wagered", "weighted"] as RankBy[]) {
            const held = await leaderboard.topWagersForPeriod(affiliateId, { start, end, numUsers: 100, rankBy });
            const full = await standings.topUsers(affiliateId, start, end, 100, rankBy);
            const expected = full.map((r) => [
              r.userExternalId,
              r.username,
              r.avatarUrl === null || r.avatarUrl === "" ? DEFAULT_AVATAR : r.avatarUrl,
              canonicalDecimal(r.total),
              canonicalDecimal(r.weightedTotal),
            ]);
            expect(rowsOf(held.ranked), `seed ${seed} step ${done} ${name} [${start}, ${end}] ${rankBy}`).toEqual(
              expected,
            );
          }
        }
      }
    }
    const computations = leaderboard.computations;
    console.log(
      `incremental long run: seed ${seed}, ${done} steps, ${wagerCount} wagers; ${JSON.stringify(computations)}; ${JSON.stringify(leaderboard.heldStats)}`,
    );
    expect(done).toBeGreaterThanOrEqual(Math.min(steps, 40));
    expect(computations.incremental ?? 0).toBeGreaterThan(computations.full);
    // Full computations happened for the reasons that need them, not only the first loads (16 boards).
    expect(computations.full).toBeGreaterThan(16);
  }, 120_000);
});
