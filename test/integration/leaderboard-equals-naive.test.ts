/**
 * The bucketed read path must give exactly the answer of the naive GROUP BY over
 * raw wagers: same users, same order, same decimal strings (plain and
 * weighted), for any period, ranked by either total.
 * Random data and random periods (aligned, misaligned, one second, spanning
 * months and years, future ends), with many ties to exercise the tie-break at
 * the cut.
 */

import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Leaderboard } from "../../src/boards/core/leaderboard.js";
import { mariadbStandings } from "../../src/boards/sql/standings-store.js";
import { mulberry32 } from "../../src/ingest/core/seed-data.js";
import { canonicalDecimal } from "../../src/values/decimal.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { addUsers, addWagers } from "../support/fixtures.js";
import { topUsersFromRawWagers } from "../support/naive-leaderboard.js";
import { DATA_FROM, DATA_TO, NOW, randomPeriod as randomPeriodFrom } from "../support/random-periods.js";

const TIES_DAY = Date.UTC(2026, 0, 10) / 1000;

let database: TestDatabase;
let affiliateIds: number[];
const next = mulberry32(7);

beforeAll(async () => {
  database = await createTestDatabase("equals_naive");
  const db = database.db;
  const users = [];
  // Usernames with shared prefixes, case differences and non-ASCII to exercise binary ordering.
  const names = ["amy", "Amy", "amy", "zoë", "Zed", "émile", "bob", "bob_", "😀", "ｆｕｌｌ"];
  for (let i = 0; i < 60; i++) {
    users.push({
      id: `u${i}`,
      affiliateId: i < 50 ? "big" : "small",
      username: names[i % names.length] ?? "x",
      avatar: "",
    });
  }
  await addUsers(db, users);
  const wagers = [];
  // Few distinct amounts and weights: many equal totals (plain and weighted), so ties cross the cut often.
  const amounts = ["1", "2.5", "0.00000001", "10", "3.33333333", "100"];
  const weights = [10_000, 10_000, 5000, 1000, 0, 3333];
  for (let n = 0; n < 6000; n++) {
    const user = Math.floor(next() ** 1.5 * 60);
    wagers.push({
      id: `w${n}`,
      userId: `u${user}`,
      amount: amounts[Math.floor(next() * amounts.length)] ?? "1",
      placedAt: DATA_FROM + Math.floor(next() * (DATA_TO - DATA_FROM)),
      weightBps: weights[Math.floor(next() * weights.length)] ?? 10_000,
    });
  }
  // An affiliate where everybody ties: created in reverse name order, so any
  // order but the username tie-break picks the wrong users at the cut.
  const tied = Array.from({ length: 30 }, (_, i) => ({
    id: `t${i}`,
    affiliateId: "ties",
    username: `player_${String(29 - i).padStart(2, "0")}`,
    avatar: "",
  }));
  await addUsers(db, tied);
  for (const [i, user] of tied.entries()) {
    wagers.push({ id: `tw${i}a`, userId: user.id, amount: "5", placedAt: TIES_DAY + (i % 24) * 3600 + 17 });
    wagers.push({ id: `tw${i}b`, userId: user.id, amount: i < 3 ? "0.5" : "0.25", placedAt: TIES_DAY + 86_400 + i });
  }
  await addWagers(db, wagers);
  const [rows] = await db.read.query<RowDataPacket[]>(
    "SELECT id FROM affiliates WHERE external_id IN ('big', 'small', 'ties') ORDER BY external_id",
  );
  affiliateIds = rows.map((r) => Number(r.id));
});

afterAll(async () => {
  await database?.drop();
});

const randomPeriod = () => randomPeriodFrom(next);

describe("bucketed answer equals the naive GROUP BY", () => {
  it("breaks ties at the cut by username, whatever order the rows were written in", async () => {
    const leaderboard = new Leaderboard({
      standings: mariadbStandings(database.db.read),
      defaultAvatarUrl: "https://d.example/a.png",
      cacheTtlMs: 0,
    });
    const ties = affiliateIds[2] ?? 0;
    const day = await leaderboard.topWagersForPeriod(ties, { start: TIES_DAY, end: TIES_DAY + 86_399, numUsers: 3 });
    expect(day.ranked.map((u) => [u.username, u.totalWagered])).toEqual([
      ["player_00", "5"],
      ["player_01", "5"],
      ["player_02", "5"],
    ]);
    // Two days: the first three users wrote 5.5, the rest 5.25; the cut at 4 falls inside the 5.25 tie.
    const twoDays = await leaderboard.topWagersForPeriod(ties, {
      start: TIES_DAY,
      end: TIES_DAY + 2 * 86_400 - 1,
      numUsers: 4,
    });
    expect(twoDays.ranked.map((u) => [u.username, u.totalWagered])).toEqual([
      ["player_27", "5.5"],
      ["player_28", "5.5"],
      ["player_29", "5.5"],
      ["player_00", "5.25"],
    ]);
  });

  it("for 300 random periods, both affiliates, N from 1 to 100, ranked by either total", async () => {
    const leaderboard = new Leaderboard({
      standings: mariadbStandings(database.db.read),
      defaultAvatarUrl: "https://default.example/a.png",
      cacheTtlMs: 0,
      now: () => NOW,
    });
    let nonEmpty = 0;
    for (let i = 0; i < 300; i++) {
      const [start, end] = randomPeriod();
      const numUsers = [1, 2, 3, 5, 10, 25, 100][Math.floor(next() * 7)] ?? 10;
      const affiliateId = affiliateIds[i % 3] ?? 0;
      const rankBy = i % 2 === 0 ? "wagered" : "weighted";
      if (start > NOW) continue;
      const naive = await topUsersFromRawWagers(database.db.read, affiliateId, start, end, numUsers, rankBy);
      const standings = await leaderboard.topWagersForPeriod(affiliateId, { start, end, numUsers, rankBy });
      const expected = naive.map((row, index) => ({
        rank: index + 1,
        userId: row.userExternalId,
        username: row.username,
        avatar: "https://default.example/a.png",
        totalWagered: canonicalDecimal(row.total),
        weightedWagered: canonicalDecimal(row.weightedTotal),
      }));
      expect(standings.ranked, `period [${start}, ${end}] N=${numUsers} affiliate ${affiliateId} by ${rankBy}`).toEqual(
        expected,
      );
      if (expected.length > 0) nonEmpty += 1;
    }
    // The check is only meaningful if most periods had data.
    expect(nonEmpty).toBeGreaterThan(100);
  });
});
