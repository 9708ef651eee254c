/**
 * The threshold plan (src/boards/sql/threshold-board.ts) answers exactly what the naive GROUP BY over raw
 * wagers answers: same users, same order, same decimal strings (plain and weighted), for random periods to
 * the second spanning 1 to 30 months, random N and either ranking, on random wagers with weights, after late
 * wagers into months long past and voids (applied, and pending ones whose wagers arrive later). A model-based
 * check on the real MariaDB: the rollups, their indexes by total (migration 24) and the plan's proof all
 * take part; few distinct amounts and weights make equal totals cross the cut often.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BoardScope, keyedTopUsersFromBuckets } from "../../src/boards/sql/leaderboard-queries.js";
import { mariadbStandings } from "../../src/boards/sql/standings-store.js";
import { AffiliateSizes, THRESHOLD_MIN_USERS } from "../../src/boards/sql/threshold-board.js";
import { mulberry32 } from "../../src/ingest/core/seed-data.js";
import { bucketRanges } from "../../src/ingest/sql/period-buckets.js";
import { voidWagerBatch } from "../../src/ingest/sql/voids.js";
import { BOARD_PLANS, boardPlansTaken } from "../../src/values/board-plans.js";
import { EARLIEST_PERIOD_START } from "../../src/values/calendar.js";
import { canonicalDecimal } from "../../src/values/decimal.js";
import type { WagerRecord } from "../../src/values/records.js";
import type { RankBy } from "../../src/values/weights.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { addUsers, addWagers, affiliateKey } from "../support/fixtures.js";
import { topUsersFromRawWagers } from "../support/naive-leaderboard.js";

const SEED = Number(process.env.THRESHOLD_SEED ?? 49);
const next = mulberry32(SEED);
const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;

/** 2 December 2024 05:00 (the earliest start a period may have) to 15 June 2027: 30 and a half months. */
const DATA_FROM = EARLIEST_PERIOD_START;
const DATA_TO = Date.UTC(2027, 5, 15) / 1000;
const MONTH = 30.44 * 86_400;

// Usernames with shared prefixes, case differences and non-ASCII: the tie-break is binary.
const NAMES = ["amy", "Amy", "amy", "zoë", "Zed", "émile", "bob", "bob_", "😀", "ｆｕｌｌ"];
const AMOUNTS = ["1", "2.5", "0.00000001", "10", "3.33333333", "100", "25"];
const WEIGHTS = [10_000, 10_000, 10_000, 5000, 1000, 0, 3333];

let database: TestDatabase;
let affiliates: number[];
let sequence = 0;

/** A wager of one of `users` (the first ones far more often) at a random second of [from, to). */
function randomWager(users: readonly string[], from: number, to: number): WagerRecord {
  sequence += 1;
  return {
    id: `w${sequence}`,
    userId: users[Math.floor(next() ** 2.5 * users.length)] as string,
    amount: pick(AMOUNTS),
    placedAt: from + Math.floor(next() * (to - from)),
    weightBps: pick(WEIGHTS),
  };
}

beforeAll(async () => {
  database = await createTestDatabase("threshold_naive");
  const big = Array.from({ length: 160 }, (_, i) => ({
    id: `b${i}`,
    affiliateId: "big",
    username: NAMES[i % 10] ?? "x",
    avatar: "",
  }));
  const mid = Array.from({ length: 40 }, (_, i) => ({
    id: `m${i}`,
    affiliateId: "mid",
    username: `p${i % 7}`,
    avatar: "",
  }));
  // Everybody wagers the same in every month: every board is one tie, cut by username (written in reverse order).
  const ties = Array.from({ length: 30 }, (_, i) => ({
    id: `t${i}`,
    affiliateId: "ties",
    username: `player_${String(29 - i).padStart(2, "0")}`,
    avatar: "",
  }));
  // As many users as the threshold plan needs to be picked by the standings (THRESHOLD_MIN_USERS), a few wagers each.
  const wide = Array.from({ length: THRESHOLD_MIN_USERS }, (_, i) => ({
    id: `x${i}`,
    affiliateId: "wide",
    username: `w${i % 11}`,
    avatar: "",
  }));
  await addUsers(database.db, [...big, ...mid, ...ties, ...wide]);
  const wagers: WagerRecord[] = [];
  for (let n = 0; n < 9000; n++)
    wagers.push(
      randomWager(
        big.map((u) => u.id),
        DATA_FROM,
        DATA_TO,
      ),
    );
  for (let n = 0; n < 1500; n++)
    wagers.push(
      randomWager(
        mid.map((u) => u.id),
        DATA_FROM,
        DATA_TO,
      ),
    );
  for (let month = 0; month < 31; month++) {
    for (const [i, user] of ties.entries()) {
      sequence += 1;
      const placedAt = Date.UTC(2024, 11 + month, 3 + (i % 20), i % 24) / 1000;
      wagers.push({ id: `t${sequence}`, userId: user.id, amount: i < 4 ? "5.5" : "5", placedAt });
    }
  }
  for (let n = 0; n < 2 * THRESHOLD_MIN_USERS; n++)
    wagers.push(
      randomWager(
        wide.map((u) => u.id),
        DATA_FROM,
        DATA_TO,
      ),
    );
  await addWagers(database.db, wagers);
  affiliates = await Promise.all(["big", "mid", "ties", "wide"].map((a) => affiliateKey(database.db.read, a)));
});

afterAll(async () => {
  await database?.drop();
});

/** A period to the second spanning 1 to 30 months: aligned to months, to days, or to nothing; a few after the data. */
function randomPeriod(): [number, number] {
  const months = 1 + Math.floor(next() * 30);
  const kind = Math.floor(next() * 5);
  const start = DATA_FROM + Math.floor(next() * (DATA_TO - DATA_FROM - 2 * MONTH));
  if (kind === 0) {
    const d = new Date(start * 1000);
    const from = Math.max(DATA_FROM, Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) / 1000);
    return [from, Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + months, 1) / 1000 - 1];
  }
  if (kind === 1)
    return [start - (start % 86_400), start - (start % 86_400) + Math.round((months * MONTH) / 86_400) * 86_400 - 1];
  if (kind === 2) return [DATA_FROM, DATA_FROM + Math.floor(months * MONTH) + Math.floor(next() * 86_400)];
  if (kind === 3) return [start, start + Math.floor((months - 1 + next()) * MONTH)];
  // After the data: no user at all.
  return [DATA_TO + 86_400 + (start % 86_400), DATA_TO + Math.floor(months * MONTH)];
}

const SCOPES: readonly BoardScope[] = [
  { kind: "large" },
  { kind: "usual" },
  { kind: "small", months: new Map(), rawHeldFrom: Number.POSITIVE_INFINITY },
  { kind: "small", months: new Map(), rawHeldFrom: 0 },
];

/** Checks `count` random boards against the naive GROUP BY; returns how many were answered by each plan. */
async function checkBoards(count: number): Promise<Record<string, number>> {
  const before = boardPlansTaken();
  for (let i = 0; i < count; i++) {
    const [start, end] = randomPeriod();
    const affiliateId = i % 5 === 4 ? (affiliates[1 + (i % 3)] as number) : (affiliates[0] as number);
    const limit = next() < 0.5 ? pick([1, 2, 3, 5, 10]) : 1 + Math.floor(next() * 100);
    const rankBy: RankBy = next() < 0.5 ? "wagered" : "weighted";
    const naive = await topUsersFromRawWagers(database.db.read, affiliateId, start, end, limit, rankBy);
    const exact = (rows: typeof naive) =>
      rows.map((r) => [
        r.userExternalId,
        r.username,
        r.avatarUrl,
        canonicalDecimal(r.total),
        canonicalDecimal(r.weightedTotal),
      ]);
    // Every plan on the same board: the threshold plan (large), the usual two statements, and a small affiliate's
    // one statement over the period's pieces (raw wagers never held) and over its raw wagers (an empty profile
    // estimates no raw wager: raw always reads less).
    for (const scope of SCOPES) {
      const board = await keyedTopUsersFromBuckets(database.db.read, {
        affiliateId,
        ranges: bucketRanges(start, end),
        limit,
        rankBy,
        weighted: "weighted_sum",
        scope,
      });
      expect(
        exact(board),
        `seed ${SEED}: [${start}, ${end}] N=${limit} affiliate ${affiliateId} by ${rankBy}, ${scope.kind} ${JSON.stringify(scope)}`,
      ).toEqual(exact(naive));
    }
  }
  const after = boardPlansTaken();
  return Object.fromEntries(Object.entries(after).map(([plan, n]) => [plan, n - before[plan as keyof typeof after]]));
}

describe("the threshold plan equals the naive GROUP BY", () => {
  it("on random wagers with weights", async () => {
    const plans = await checkBoards(150);
    // Most boards are long periods of the big affiliate: the plan under test answers them.
    expect(plans.threshold).toBeGreaterThan(60);
    expect(plans).toMatchObject({ small: 150, raw: 150 });
  });

  it("after late wagers into past months and voids (applied, and pending before their wager arrives)", async () => {
    const [recorded] = await database.db.read.query<import("mysql2/promise").RowDataPacket[]>(
      "SELECT external_id FROM wagers ORDER BY id",
    );
    const ids = recorded.map((r) => String(r.external_id));
    const voided = ids.filter(() => next() < 0.06);
    const late = Array.from({ length: 1500 }, () =>
      randomWager(
        Array.from({ length: 160 }, (_, i) => `b${i}`),
        DATA_FROM,
        DATA_FROM + 8 * MONTH,
      ),
    );
    // A void asked for before its wager arrives takes it out as it is recorded.
    const pending = late.filter(() => next() < 0.1).map((w) => w.id);
    await voidWagerBatch(database.db.write, [...voided, ...pending]);
    await addWagers(database.db, late);
    const plans = await checkBoards(150);
    expect(plans.threshold).toBeGreaterThan(60);
    expect(plans).toMatchObject({ small: 150, raw: 150 });
  });
});

describe("the standings pick the plan by the affiliate's users", () => {
  it("the threshold plan for a long period of a large affiliate, the rollup plan for its short periods, one statement for a small one", async () => {
    const standings = mariadbStandings(database.db.read);
    const [big, mid, , wide] = affiliates as [number, number, number, number];
    const year: [number, number] = [Date.UTC(2025, 5, 1) / 1000, Date.UTC(2026, 5, 1) / 1000 - 1];
    const month: [number, number] = [Date.UTC(2025, 5, 1) / 1000, Date.UTC(2025, 6, 1) / 1000 - 1];
    const plan = async (affiliateId: number, [start, end]: [number, number], rankBy: RankBy = "wagered") => {
      const before = boardPlansTaken();
      const board = await standings.topUsers(affiliateId, start, end, 10, rankBy);
      const naive = await topUsersFromRawWagers(database.db.read, affiliateId, start, end, 10, rankBy);
      const exact = (rows: typeof naive) =>
        rows.map((r) => [r.userExternalId, canonicalDecimal(r.total), canonicalDecimal(r.weightedTotal)]);
      expect(exact(board)).toEqual(exact(naive));
      const after = boardPlansTaken();
      return BOARD_PLANS.filter((p) => after[p] > before[p]);
    };
    expect(await plan(wide, year)).toEqual(["threshold"]);
    expect(await plan(wide, month)).toEqual(["rollup"]);
    // A weighted month: the index orders it by plain total, which bounds the weighted one.
    expect(await plan(wide, month, "weighted")).toEqual(["threshold"]);
    // Fewer than THRESHOLD_MIN_USERS users: one statement. A year of "big" (160 users, 9,000 wagers over 30 months)
    // holds some 3,500 raw wagers and at most 12 × 160 monthly rows: the rollups; ten days and a few hours of "mid"
    // (40 users, 1,500 wagers) about 20 raw wagers against a statement of 4 pieces: its raw wagers.
    expect(await plan(big, year)).toEqual(["small"]);
    expect(await plan(mid, year)).toEqual(["small"]);
    const tenDays: [number, number] = [Date.UTC(2025, 7, 3, 5, 17) / 1000, Date.UTC(2025, 7, 13, 9, 41) / 1000];
    expect(await plan(mid, tenDays)).toEqual(["raw"]);
    expect(await plan(mid, tenDays, "weighted")).toEqual(["raw"]);
    // Raw wagers before the wager horizon may be deleted: a period starting before it (on a whole hour, as such a
    // period must) is read from its pieces, whatever they cost; with the horizon back, from raw wagers again.
    const horizon = Date.UTC(2025, 7, 10) / 1000;
    const hourAligned: [number, number] = [Date.UTC(2025, 7, 3, 5) / 1000, Date.UTC(2025, 7, 13, 9, 41) / 1000];
    const [was] = await database.db.write.query<import("mysql2/promise").RowDataPacket[]>(
      "SELECT horizon FROM retention_horizons WHERE kind = 'wagers'",
    );
    expect(was.map((row) => Number(row.horizon))).toEqual([0]);
    await database.db.write.query("UPDATE retention_horizons SET horizon = ? WHERE kind = 'wagers'", [horizon]);
    try {
      const held = mariadbStandings(database.db.read);
      const before = boardPlansTaken();
      await held.topUsers(mid, ...hourAligned, 10, "wagered");
      expect(boardPlansTaken().small).toBe(before.small + 1);
      await held.topUsers(mid, horizon, hourAligned[1], 10, "wagered");
      expect(boardPlansTaken().raw).toBe(before.raw + 1);
    } finally {
      await database.db.write.query("UPDATE retention_horizons SET horizon = 0 WHERE kind = 'wagers'");
    }
    expect(await plan(mid, hourAligned)).toEqual(["raw"]);
    // An end as late as the contract allows (10^11 s, the year 5138): the months after the affiliate's last row are not
    // read, so no statement grows with the period (one subquery per month of it was a 7 MB statement, 12 s, a 503).
    const statements: string[] = [];
    const pool = database.db.read;
    const recording = new Proxy(pool, {
      get: (target, property) =>
        property === "query" || property === "execute"
          ? (sql: string | { sql: string }, ...rest: unknown[]) => {
              statements.push(typeof sql === "string" ? sql : sql.sql);
              return (target[property] as (...a: unknown[]) => unknown).call(target, sql, ...rest);
            }
          : Reflect.get(target, property),
    });
    const far: [number, number] = [Date.UTC(2025, 9, 1) / 1000, 100_000_000_000];
    for (const [start, end] of [far, [DATA_TO + 40 * 86_400, 100_000_000_000] as [number, number]]) {
      const board = await keyedTopUsersFromBuckets(recording, {
        affiliateId: wide,
        ranges: bucketRanges(start, end),
        limit: 10,
        weighted: "weighted_sum",
        scope: { kind: "large" },
      });
      const naive = await topUsersFromRawWagers(pool, wide, start, end, 10, "wagered");
      expect(board.map((r) => [r.userExternalId, canonicalDecimal(r.total)])).toEqual(
        naive.map((r) => [r.userExternalId, canonicalDecimal(r.total)]),
      );
    }
    expect(Math.max(...statements.map((sql) => sql.length))).toBeLessThan(20_000);
    // Forced: the bench's before.
    const before = boardPlansTaken().rollup;
    await mariadbStandings(database.db.read, undefined, { plans: "rollup" }).topUsers(wide, ...year, 10, "wagered");
    expect(boardPlansTaken().rollup).toBe(before + 1);
  });
});

describe("a small affiliate's profile", () => {
  it("is read again after 10 s while it has no monthly row (its history may be imported next), after a minute once it has", async () => {
    await addUsers(database.db, [
      { id: "fresh-1", affiliateId: "fresh", username: "f1", avatar: "" },
      { id: "fresh-2", affiliateId: "fresh", username: "f2", avatar: "" },
    ]);
    const fresh = await affiliateKey(database.db.read, "fresh");
    let now = 1_000_000;
    const sizes = new AffiliateSizes(database.db.read, () => now);
    expect(await sizes.of(fresh)).toEqual({ users: 2, months: new Map() });
    // The import: 30 wagers in March 2025, 10 in April.
    const march = Date.UTC(2025, 2, 1) / 1000;
    const april = Date.UTC(2025, 3, 1) / 1000;
    await addWagers(database.db, [
      ...Array.from({ length: 30 }, (_, i) => ({
        id: `fresh-w${i}`,
        userId: `fresh-${1 + (i % 2)}`,
        amount: "1",
        placedAt: march + i * 3600,
      })),
      ...Array.from({ length: 10 }, (_, i) => ({
        id: `fresh-a${i}`,
        userId: "fresh-1",
        amount: "2",
        placedAt: april + i * 3600,
      })),
    ]);
    now += 9_999;
    expect(await sizes.of(fresh)).toEqual({ users: 2, months: new Map() });
    now += 1;
    const imported = new Map([
      [march, { users: 2, wagers: 30 }],
      [april, { users: 1, wagers: 10 }],
    ]);
    expect(await sizes.of(fresh)).toEqual({ users: 2, months: imported });
    // With rows, the profile is kept for a minute: a new month's wagers show after that.
    await addWagers(database.db, [
      { id: "fresh-m", userId: "fresh-2", amount: "5", placedAt: Date.UTC(2025, 4, 2) / 1000 },
    ]);
    now += 60_000 - 1;
    expect(await sizes.of(fresh)).toEqual({ users: 2, months: imported });
    now += 1;
    expect((await sizes.of(fresh)).months?.get(Date.UTC(2025, 4, 1) / 1000)).toEqual({ users: 1, wagers: 1 });
  });
});
