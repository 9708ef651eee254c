/**
 * Boards held in memory and kept current from the change feed (src/boards/core/held-board.ts and
 * held-boards.ts), on the reference model: the merge of changed users' totals, the bound below which
 * nothing is known, and each reason for a full computation; with exact rows after every step.
 */
import { describe, expect, it } from "vitest";
import { ChangeSet } from "../../src/boards/core/change-set.js";
import { decimalUnits, heldFromBoard, mergeChanged } from "../../src/boards/core/held-board.js";
import { HeldBoards } from "../../src/boards/core/held-boards.js";
import { Leaderboard } from "../../src/boards/core/leaderboard.js";
import type { DataChange } from "../../src/ports/changes.js";
import type { KeyedRow } from "../../src/ports/standings.js";
import { ReferenceModel } from "../support/reference-model.js";

const NOW = Date.UTC(2026, 2, 10) / 1000;
const START = Date.UTC(2026, 2, 1) / 1000;
const END = Date.UTC(2026, 3, 1) / 1000 - 1;

const row = (userKey: number, username: string, total: string, weightedTotal = total): KeyedRow => ({
  userKey,
  userExternalId: `u${userKey}`,
  username,
  avatarUrl: null,
  total,
  weightedTotal,
});
const names = (rows: readonly { readonly row: KeyedRow }[]) => rows.map((e) => `${e.row.username}=${e.row.total}`);

describe("mergeChanged", () => {
  const board = heldFromBoard([row(1, "a", "10"), row(2, "b", "8"), row(3, "c", "8")], 3, "wagered");

  it("places a changed user exactly among the held ones, by total then name", () => {
    const merged = mergeChanged(board, [3], [row(3, "c", "9")], "wagered", 5);
    expect(names(merged.entries)).toEqual(["a=10", "c=9", "b=8"]);
    expect(merged.bound?.row.username).toBe("c");
  });

  it("drops a changed user that now ranks after the bound, and one with nothing left", () => {
    const merged = mergeChanged(board, [1, 2], [row(1, "a", "7.99999999")], "wagered", 5);
    expect(names(merged.entries)).toEqual(["c=8"]);
  });

  it("takes in a user not held that now ranks at or before the bound, and not one that ties after it by name", () => {
    const merged = mergeChanged(board, [4, 5], [row(4, "bb", "8"), row(5, "d", "8")], "wagered", 5);
    expect(names(merged.entries)).toEqual(["a=10", "b=8", "bb=8", "c=8"]);
  });

  it("holds every listed user when the full computation was the whole board (no bound)", () => {
    const whole = heldFromBoard([row(1, "a", "10")], 3, "wagered");
    expect(whole.bound).toBeUndefined();
    const merged = mergeChanged(whole, [9], [row(9, "z", "0.00000001")], "wagered", 5);
    expect(names(merged.entries)).toEqual(["a=10", "z=0.00000001"]);
  });

  it("lets go of rows beyond the limit, the last one kept becoming the bound", () => {
    const whole = heldFromBoard([row(1, "a", "10")], 3, "wagered");
    const merged = mergeChanged(whole, [2, 3, 4], [row(2, "b", "9"), row(3, "c", "8"), row(4, "d", "7")], "wagered", 3);
    expect(names(merged.entries)).toEqual(["a=10", "b=9", "c=8"]);
    expect(merged.bound?.row.username).toBe("c");
    // d (7) is no longer held: a user rising to 7.5 ranks after the bound too, and is not taken in.
    expect(names(mergeChanged(merged, [5], [row(5, "e", "7.5")], "wagered", 3).entries)).toEqual([
      "a=10",
      "b=9",
      "c=8",
    ]);
  });

  it("ranks weighted boards by the weighted total, exact to 12 digits", () => {
    const weighted = heldFromBoard([row(1, "a", "10", "5.000000000001"), row(2, "b", "1", "5")], 5, "weighted");
    const merged = mergeChanged(weighted, [3], [row(3, "c", "100", "5.000000000001")], "weighted", 5);
    expect(names(merged.entries)).toEqual(["a=10", "c=100", "b=1"]);
    expect(decimalUnits("5.000000000001")).toBe(5_000_000_000_001n);
    expect(() => decimalUnits("5.0000000000005")).toThrow();
  });
});

/** A model with users u1… of one affiliate, a held board over it (shown 2, margin 1), and its change feed by hand. */
function setup(shown = 2, margin = 1) {
  const model = new ReferenceModel({ now: () => NOW });
  const held = new HeldBoards({
    store: model.standings.keyed as NonNullable<typeof model.standings.keyed>,
    shown,
    margin,
    checkEveryMs: 60_000,
    maxBoards: 10,
    maxPendingUsers: 100,
    nowMs: () => NOW * 1000,
  });
  let seen = 0;
  const feed = async () => {
    const read = await model.changeRows.readChanges(seen, [], 1000);
    seen = Math.max(seen, ...read.changes.map((c) => c.id));
    held.applyChanges(new ChangeSet(read.changes));
  };
  const board = { key: "board", affiliateId: 1, start: START, end: END, rankBy: "wagered" as const };
  let wagerId = 0;
  const wager = async (user: string, amount: string, placedAt = NOW - 60) => {
    wagerId += 1;
    await model.ingest.recordWagers([{ id: `w${wagerId}`, userId: user, amount, placedAt }]);
    await feed();
    return `w${wagerId}`;
  };
  const rows = async () => (await held.rows(board)).map((r) => `${r.username}=${r.total}`);
  return { model, held, feed, wager, rows, board };
}

/** setup() with ann (u1) and ben (u2) known, ann's wager of 1 held: the board shows ann alone. */
async function annHeldAlone() {
  const s = setup();
  await users(s.model, [
    ["u1", "ann"],
    ["u2", "ben"],
  ]);
  await s.wager("u1", "1");
  expect(await s.rows()).toEqual(["ann=1"]);
  return s;
}

async function users(model: ReferenceModel, list: readonly [string, string][]) {
  await model.ingest.upsertUsers(list.map(([id, username]) => ({ id, affiliateId: "aff", username, avatar: "" })));
}

describe("HeldBoards on the reference model", () => {
  it("reads only the changed users, and computes in full when a void leaves fewer rows known than shown", async () => {
    const s = setup();
    await users(s.model, [
      ["u1", "ann"],
      ["u2", "ben"],
      ["u3", "cat"],
      ["u4", "dan"],
    ]);
    await s.wager("u1", "10");
    const big = await s.wager("u2", "8");
    await s.wager("u2", "1");
    await s.wager("u3", "5");
    await s.wager("u4", "2");
    expect(await s.rows()).toEqual(["ann=10", "ben=9", "cat=5"].slice(0, 2));
    expect(s.held.computations).toMatchObject({ full: 1, incremental: 0 });

    await s.wager("u4", "3.5"); // dan 5.5: ranks above the bound (cat=5), taken in by one read; cat let go
    expect(await s.rows()).toEqual(["ann=10", "ben=9"]);
    expect(s.held.computations).toMatchObject({ full: 1, incremental: 1 });
    expect(s.model.keyedReads.usersRead).toBe(1);

    await s.model.ingest.voidWagers([big]); // ben 1: below the bound (dan), ann and dan still known
    await s.feed();
    expect(await s.rows()).toEqual(["ann=10", "dan=5.5"]);
    expect(s.held.computations).toMatchObject({ full: 1, incremental: 2 });

    await s.wager("u1", "0.00000001");
    await s.model.ingest.voidWagers(["w1"]); // ann 0.00000001: only dan known exactly, 2 are shown
    await s.feed();
    expect(await s.rows()).toEqual(["dan=5.5", "cat=5"]);
    expect(s.held.computations).toMatchObject({ full: 2, incremental: 3 });

    await s.model.ingest.voidWagers(["w4"]); // cat gone: dan and ben (held in the margin) known
    await s.feed();
    expect(await s.rows()).toEqual(["dan=5.5", "ben=1"]);
    expect(s.held.computations).toMatchObject({ full: 2, incremental: 4 });
  });

  it("re-reads a renamed user, held or not (a tie at the cut changes order by name)", async () => {
    const s = setup(2, 0);
    await users(s.model, [
      ["u1", "bob"],
      ["u2", "cid"],
      ["u3", "dee"],
    ]);
    await s.wager("u1", "5");
    await s.wager("u2", "5");
    await s.wager("u3", "5");
    expect(await s.rows()).toEqual(["bob=5", "cid=5"]);
    await users(s.model, [["u2", "zed"]]); // held: read again, now after the bound by name
    await s.feed();
    expect(await s.rows()).toEqual(["bob=5", "dee=5"]);
    expect(s.held.computations).toMatchObject({ full: 2, incremental: 1 });
    const keysRead = s.model.keyedReads.keys;
    await users(s.model, [["u2", "abe"]]); // not held, ties the bound: its key looked up, its totals read
    await s.feed();
    expect(await s.rows()).toEqual(["abe=5", "bob=5"]);
    expect(s.held.computations).toMatchObject({ full: 2, incremental: 2 });
    expect(s.model.keyedReads.keys).toBe(keysRead + 1);
    await users(s.model, [["u2", "zzz"]]); // held again: read by the key the list holds, no lookup
    await s.feed();
    expect(await s.rows()).toEqual(["bob=5", "dee=5"]);
    expect(s.model.keyedReads.keys).toBe(keysRead + 1);
  });

  it("computes in full when a change does not list its users, and counts nothing to read as unchanged", async () => {
    const s = setup();
    await users(s.model, [["u1", "ann"]]);
    await s.wager("u1", "1");
    expect(await s.rows()).toEqual(["ann=1"]);
    expect(await s.rows()).toEqual(["ann=1"]);
    expect(s.held.computations).toMatchObject({ full: 1, unchanged: 1 });
    const unlisted: DataChange = {
      id: 99,
      affiliateId: 1,
      firstAt: NOW - 60,
      lastAt: NOW - 60,
      userExternalId: undefined,
    };
    s.held.applyChanges(new ChangeSet([unlisted]));
    expect(await s.rows()).toEqual(["ann=1"]);
    expect(s.held.computations).toMatchObject({ full: 2, unchanged: 1 });
  });

  it("keeps the changed users of a load that failed, and reads them on the next", async () => {
    const s = await annHeldAlone();
    await s.wager("u2", "2");
    const keyed = s.model.standings.keyed as NonNullable<typeof s.model.standings.keyed>;
    const totalsOf = keyed.totalsOf;
    keyed.totalsOf = async () => {
      throw new Error("database down");
    };
    await expect(s.rows()).rejects.toThrow("database down");
    keyed.totalsOf = totalsOf;
    expect(await s.rows()).toEqual(["ben=2", "ann=1"]);
    expect(s.held.computations).toMatchObject({ full: 1, incremental: 1 });
  });

  it("does not keep a load that another load overtook, and reads its users again", async () => {
    const s = await annHeldAlone();
    await s.wager("u2", "2");
    const first = s.rows(); // reads ben
    await s.wager("u1", "5"); // ann changes while the first load runs
    const second = s.rows();
    expect(await Promise.all([first, second])).toEqual([
      ["ben=2", "ann=1"],
      ["ann=6", "ben=2"],
    ]);
    expect(await s.rows()).toEqual(["ann=6", "ben=2"]);
  });

  it("merges again into what an overlapping load kept, so that neither answer lacks the other's change", async () => {
    const s = setup();
    await users(s.model, [
      ["u1", "ann"],
      ["u2", "ben"],
    ]);
    await s.wager("u1", "1");
    await s.wager("u2", "1");
    expect(await s.rows()).toEqual(["ann=1", "ben=1"]);
    // Hold every totals read until released, so two loads of the board overlap.
    const keyed = s.model.standings.keyed as NonNullable<typeof s.model.standings.keyed>;
    const totalsOf = keyed.totalsOf;
    const gates: (() => void)[] = [];
    keyed.totalsOf = async (...args) => {
      const rows = await totalsOf(...args);
      await new Promise<void>((resolve) => gates.push(resolve));
      return rows;
    };
    await s.wager("u2", "2"); // ben 3
    const first = s.rows(); // reads ben (read now, answered when released)
    await new Promise((resolve) => setTimeout(resolve, 0));
    await s.wager("u1", "5"); // ann 6
    const second = s.rows(); // reads ann
    await new Promise((resolve) => setTimeout(resolve, 0));
    gates.splice(1, 1)[0]?.(); // the second commits first
    expect(await second).toEqual(["ann=6", "ben=1"]);
    gates.splice(0, 1)[0]?.(); // the first's commit is refused: ben is merged into the kept list
    await new Promise((resolve) => setTimeout(resolve, 0));
    gates.splice(0)[0]?.();
    expect(await first).toEqual(["ann=6", "ben=3"]);
    keyed.totalsOf = totalsOf;
    expect(await s.rows()).toEqual(["ann=6", "ben=3"]);
    expect(s.held.computations).toMatchObject({ full: 1, incremental: 3, unchanged: 1 });
  });

  it("checks in full every checkEveryMs and counts a difference from the held rows", async () => {
    let nowMs = NOW * 1000;
    const model = new ReferenceModel({ now: () => NOW });
    const mismatches: string[] = [];
    const held = new HeldBoards({
      store: model.standings.keyed as NonNullable<typeof model.standings.keyed>,
      shown: 2,
      margin: 1,
      checkEveryMs: 30_000,
      maxBoards: 10,
      maxPendingUsers: 100,
      nowMs: () => nowMs,
      onMismatch: (key, detail) => mismatches.push(`${key}: ${detail}`),
    });
    await users(model, [["u1", "ann"]]);
    const board = { key: "b", affiliateId: 1, start: START, end: END, rankBy: "wagered" as const };
    expect(await held.rows(board)).toEqual([]);
    // A wager whose change the held board never hears of (as if the feed lost it).
    await model.ingest.recordWagers([{ id: "w1", userId: "u1", amount: "3", placedAt: NOW - 5 }]);
    nowMs += 29_999;
    expect(await held.rows(board)).toEqual([]);
    nowMs += 1;
    expect((await held.rows(board)).map((r) => r.total)).toEqual(["3"]);
    expect(held.computations).toMatchObject({ full: 2, mismatches: 1 });
    expect(mismatches).toEqual(["b: held 0 rows, the full computation 1"]);
  });
});

/** A leaderboard on the model with held boards, its change feed current unless `isCurrent` says otherwise. */
function heldLeaderboard(model: ReferenceModel, cacheTtlMs: number, isCurrent = () => true): Leaderboard {
  return new Leaderboard({
    standings: model.standings,
    defaultAvatarUrl: "https://cdn.example.test/d.png",
    cacheTtlMs,
    now: () => NOW,
    freshness: { isCurrent },
  });
}

/** Two users of affiliate "aff" and one wager of 1 by u1, five seconds ago. */
async function annAndBen(model: ReferenceModel): Promise<void> {
  await users(model, [
    ["u1", "ann"],
    ["u2", "ben"],
  ]);
  await model.ingest.recordWagers([{ id: "w1", userId: "u1", amount: "1", placedAt: NOW - 5 }]);
}

describe("Leaderboard with held boards", () => {
  it("answers from held boards for periods not settled, and counts computations by kind", async () => {
    const model = new ReferenceModel({ now: () => NOW });
    const leaderboard = heldLeaderboard(model, 60_000);
    await annAndBen(model);
    const query = { start: START, end: END, numUsers: 10 };
    expect((await leaderboard.topWagersForPeriod(1, query)).ranked.map((u) => u.userId)).toEqual(["u1"]);
    const before = (await model.changeRows.latestChangeId()) as number;
    await model.ingest.recordWagers([{ id: "w2", userId: "u2", amount: "2", placedAt: NOW - 5 }]);
    leaderboard.applyChanges((await model.changeRows.readChanges(before, [], 100)).changes);
    const after = await leaderboard.topWagersForPeriod(1, query);
    expect(after.ranked.map((u) => [u.rank, u.userId, u.totalWagered])).toEqual([
      [1, "u2", "2"],
      [2, "u1", "1"],
    ]);
    expect(model.keyedReads).toEqual({ boards: 1, totals: 1, usersRead: 1, keys: 0 });
    // A settled period (ended over a day ago) is computed in full as before.
    await leaderboard.topWagersForPeriod(1, { start: START - 86_400 * 40, end: START - 86_400 * 2, numUsers: 10 });
    expect(leaderboard.computations).toEqual({ full: 2, remote: 0, incremental: 1 });
    expect(leaderboard.heldStats).toEqual({ boards: 1, unchanged: 0, mismatches: 0 });
  });

  it("computes in full, not from the held board, while the change feed is behind (changes not read yet)", async () => {
    const model = new ReferenceModel({ now: () => NOW });
    let current = true;
    const leaderboard = heldLeaderboard(model, 60_000, () => current);
    await annAndBen(model);
    const query = { start: START, end: END, numUsers: 10 };
    await leaderboard.topWagersForPeriod(1, query);
    // A wager the feed has not delivered: the held board cannot know it; a full computation does.
    await model.ingest.recordWagers([{ id: "w2", userId: "u2", amount: "2", placedAt: NOW - 5 }]);
    current = false;
    const behind = await leaderboard.topWagersForPeriod(1, query);
    expect(behind.ranked.map((u) => [u.rank, u.userId, u.totalWagered])).toEqual([
      [1, "u2", "2"],
      [2, "u1", "1"],
    ]);
    expect(behind.maxAgeSeconds).toBe(0);
    // The first load (the held board's own full computation) and the one made while behind.
    expect(leaderboard.computations).toEqual({ full: 2, remote: 0, incremental: 0 });
  });

  it("drops a cached board cut at 100 rows when a user it does not list is renamed (a tie at the cut)", async () => {
    const model = new ReferenceModel({ now: () => NOW });
    const leaderboard = heldLeaderboard(model, 600_000);
    const ids = Array.from({ length: 101 }, (_, i) => `u${i}`);
    await model.ingest.upsertUsers(
      ids.map((id, i) => ({ id, affiliateId: "aff", username: `n${String(i).padStart(3, "0")}`, avatar: "" })),
    );
    await model.ingest.recordWagers(ids.map((id, i) => ({ id: `w${i}`, userId: id, amount: "1", placedAt: NOW - 5 })));
    const query = { start: START, end: END, numUsers: 100 };
    const before = await leaderboard.topWagersForPeriod(1, query);
    expect(before.ranked.map((u) => u.userId)).not.toContain("u100");
    const latest = await model.changeRows.latestChangeId();
    await model.ingest.upsertUsers([{ id: "u100", affiliateId: "aff", username: "a", avatar: "" }]);
    leaderboard.applyChanges((await model.changeRows.readChanges(latest, [], 100)).changes);
    const after = await leaderboard.topWagersForPeriod(1, query);
    expect(after.ranked.slice(0, 2).map((u) => [u.rank, u.userId, u.username])).toEqual([
      [1, "u100", "a"],
      [2, "u0", "n000"],
    ]);
    expect(after.ranked.map((u) => u.userId)).not.toContain("u99");
  });
});
