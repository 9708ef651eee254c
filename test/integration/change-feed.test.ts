/**
 * The change feed against a real database: a change whose transaction
 * commits after a later id's is still delivered (the watermark trap: a reader
 * that only remembers the highest id seen loses rows that commit out of order); the feed is "current" only while its
 * polls succeed; and the leaderboard drops exactly the cached answers a change
 * touches (affiliate and overlapping period, or a listed user).
 */
import mysql from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChangeFeed } from "../../src/boards/core/change-feed.js";
import { Leaderboard } from "../../src/boards/core/leaderboard.js";
import { mariadbChanges } from "../../src/boards/sql/change-store.js";
import { mariadbStandings } from "../../src/boards/sql/standings-store.js";
import type { DataChange } from "../../src/ingest/sql/data-changes.js";
import { connectionOptions } from "../../src/platform/database/database.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { addUsers, addWagers, wager } from "../support/fixtures.js";

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase("change_feed");
});

afterAll(async () => {
  await database?.drop();
});

async function until(condition: () => boolean, timeoutMs = 3000): Promise<void> {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > timeoutMs) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("ChangeFeed", () => {
  it("delivers a change that commits after a later one (ids commit out of order)", async () => {
    const seen: DataChange[] = [];
    const feed = new ChangeFeed(mariadbChanges(database.db.read), {
      onChanges: (rows) => seen.push(...rows),
      intervalMs: 50,
    });
    const slow = await mysql.createConnection(connectionOptions(database.url));
    try {
      feed.start();
      await until(() => feed.isCurrent());
      await slow.query("START TRANSACTION");
      await slow.query("INSERT INTO data_changes (wager_spans, created_at) VALUES ('101,10,20', UNIX_TIMESTAMP())");
      await database.db.write.query(
        "INSERT INTO data_changes (wager_spans, created_at) VALUES ('102,30,40;103,1,2', UNIX_TIMESTAMP())",
      );
      await until(() => seen.some((c) => c.affiliateId === 102));
      expect(seen.map((c) => c.affiliateId)).toEqual([102, 103]);
      // Several polls pass with the earlier id still uncommitted.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await slow.query("COMMIT");
      await until(() => seen.some((c) => c.affiliateId === 101));
      expect(seen.map((c) => [c.affiliateId, c.firstAt, c.lastAt])).toEqual([
        [102, 30, 40],
        [103, 1, 2],
        [101, 10, 20],
      ]);
    } finally {
      await slow.end();
      await feed.stop();
    }
  });

  it("on a cluster's id step, asks only for missing ids of classes in use, and still delivers a late one", async () => {
    const seen: DataChange[] = [];
    // Ids step by 3 as on a 3-node Galera cluster where one node takes the writes (class 1).
    const feed = new ChangeFeed(mariadbChanges(database.db.read), {
      onChanges: (rows) => seen.push(...rows),
      intervalMs: 50,
      idStep: 3,
    });
    const insert = (
      id: number,
      spans: string,
      connection: { query: (sql: string, values: unknown[]) => Promise<unknown> },
    ) =>
      connection.query("INSERT INTO data_changes (id, wager_spans, created_at) VALUES (?, ?, UNIX_TIMESTAMP())", [
        id,
        spans,
      ]);
    // History as such a node leaves it: ids 1000, 1003, ..., 2500.
    await database.db.write.query("INSERT INTO data_changes (id, wager_spans, created_at) VALUES ?", [
      Array.from({ length: 501 }, (_, i) => [1000 + 3 * i, "200,1,1", 0]),
    ]);
    const slow = await mysql.createConnection(connectionOptions(database.url));
    try {
      feed.start();
      await until(() => feed.isCurrent());
      expect(feed.pendingGaps).toBe(0);
      await insert(2503, "201,1,1", database.db.write);
      await until(() => seen.some((c) => c.affiliateId === 201));
      await slow.query("START TRANSACTION");
      await insert(2506, "202,1,1", slow); // committed last
      await insert(2509, "203,1,1", database.db.write);
      await insert(2512, "204,1,1", database.db.write);
      await until(() => seen.some((c) => c.affiliateId === 204));
      // Only 2506 is missing: 2504, 2505, 2507, ... are of classes no node writes.
      expect(feed.pendingGaps).toBe(1);
      await slow.query("COMMIT");
      await until(() => seen.some((c) => c.affiliateId === 202));
      expect(feed.pendingGaps).toBe(0);
      expect(seen.map((c) => c.affiliateId)).toEqual([201, 203, 204, 202]);
    } finally {
      await slow.end();
      await feed.stop();
    }
  });

  it("is not current before its first poll, nor when its polls fail", async () => {
    const url = new URL(database.url);
    url.port = "1"; // nothing listens there
    const { openDatabase } = await import("../../src/platform/database/database.js");
    const nowhere = await openDatabase({ url: url.toString(), poolSize: 1, queryTimeoutMs: 1000 });
    const feed = new ChangeFeed(mariadbChanges(nowhere.read), { onChanges: () => undefined, intervalMs: 20 });
    try {
      expect(feed.isCurrent()).toBe(false);
      feed.start();
      await until(() => feed.stats.failures >= 2);
      expect(feed.isCurrent()).toBe(false);
    } finally {
      await feed.stop();
      await nowhere.close();
    }
  });
});

describe("Leaderboard.applyChanges", () => {
  it("drops the affiliate's overlapping periods and answers listing a changed user, nothing else", async () => {
    const DAY = Date.UTC(2026, 9, 5) / 1000;
    await addUsers(database.db, [
      { id: "cf-u1", affiliateId: "cf-a", username: "u one", avatar: "" },
      { id: "cf-u2", affiliateId: "cf-b", username: "u two", avatar: "" },
    ]);
    await addWagers(database.db, [wager("cf-u1", "1", DAY + 10), wager("cf-u2", "2", DAY + 10)]);
    const [rows] = (await database.db.read.query(
      "SELECT id, external_id FROM affiliates WHERE external_id IN ('cf-a', 'cf-b') ORDER BY external_id",
    )) as unknown as [{ id: number }[]];
    const [a, b] = rows.map((r) => Number(r.id));
    const leaderboard = new Leaderboard({
      standings: mariadbStandings(database.db.read),
      defaultAvatarUrl: "https://d.example/a.png",
      cacheTtlMs: 60_000,
      now: () => DAY + 86_400 * 10,
    });
    const periods = {
      day: { start: DAY, end: DAY + 86_399, numUsers: 10 },
      nextDay: { start: DAY + 86_400, end: DAY + 2 * 86_400 - 1, numUsers: 10 },
    };
    const fill = async () => {
      for (const affiliate of [a, b]) {
        for (const period of Object.values(periods)) await leaderboard.topWagersForPeriod(affiliate ?? 0, period);
      }
    };
    await fill();
    expect(leaderboard.cacheStats.size).toBe(4);
    const change = (fields: Partial<DataChange>): DataChange => ({
      id: 1,
      affiliateId: undefined,
      firstAt: 0,
      lastAt: 0,
      userExternalId: undefined,
      ...fields,
    });
    // A wager of affiliate a in the first day: only (a, day) goes.
    leaderboard.applyChanges([change({ affiliateId: a, firstAt: DAY + 5, lastAt: DAY + 5 })]);
    expect(leaderboard.cacheStats.size).toBe(3);
    expect(leaderboard.invalidations).toBe(1);
    // A rename of a user listed only in b's first day: only (b, day) goes.
    leaderboard.applyChanges([change({ userExternalId: "cf-u2" })]);
    expect(leaderboard.cacheStats.size).toBe(2);
    // A change of a user listed nowhere, and one of another affiliate: nothing goes.
    leaderboard.applyChanges([change({ userExternalId: "nobody" }), change({ affiliateId: 999_999, lastAt: 2 ** 32 })]);
    expect(leaderboard.cacheStats.size).toBe(2);
    expect(leaderboard.invalidations).toBe(2);
  });
});
