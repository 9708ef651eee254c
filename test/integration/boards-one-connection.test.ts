/**
 * A board read on one connection held from a pool (the snapshot of a kept board, the freeze's causal read) never
 * needs a second connection from that pool. It did: the plan of an affiliate's boards (its size, read at most every
 * 10 minutes) was asked for on the way, from the pool, while the connection was held, so as many first reads as the
 * pool had connections waited for each other for ever (the moved-clock CI run of 7 December 2026: two races frozen
 * at once on a write pool of two hung every later board of the file). Here every pool has one connection and every
 * store is new, so each read is its affiliate's first: a read that needs a second connection never answers.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { causalStandings, mariadbStandings } from "../../src/boards/sql/standings-store.js";
import { type Database, openDatabase } from "../../src/platform/database/database.js";
import type { KeyedStandings } from "../../src/ports/standings.js";
import { useTestDatabase } from "../support/database.js";
import { JAN_1_2026 } from "../support/dates.js";
import { addUsers, addWagers, affiliateKey } from "../support/fixtures.js";

const database = useTestDatabase("boards_one_connection");
const DAY = 86_400;
/** 1 January to 30 April 2026: four whole months, long enough for the large affiliate's threshold plan. */
const START = JAN_1_2026;
const END = JAN_1_2026 + 120 * DAY - 1;
/** Users of the large affiliate: at least THRESHOLD_MIN_USERS (500), so its long periods take the threshold plan. */
const LARGE_USERS = 520;

let oneConnection: Database;
let small = 0;
let large = 0;

beforeAll(async () => {
  const db = database.db;
  await addUsers(db, [
    { id: "s1", affiliateId: "small-aff", username: "ann", avatar: "" },
    { id: "s2", affiliateId: "small-aff", username: "bob", avatar: "" },
    { id: "s3", affiliateId: "small-aff", username: "cid", avatar: "" },
  ]);
  await addWagers(db, [
    { id: "sw1", userId: "s1", amount: "10.5", placedAt: START + 10 },
    { id: "sw2", userId: "s2", amount: "30", placedAt: START + 40 * DAY },
    { id: "sw3", userId: "s3", amount: "20.25", placedAt: START + 80 * DAY },
    { id: "sw4", userId: "s1", amount: "0.75", placedAt: END },
  ]);
  const users = Array.from({ length: LARGE_USERS }, (_, i) => ({
    id: `l${i + 1}`,
    affiliateId: "large-aff",
    username: `player${String(i + 1).padStart(3, "0")}`,
    avatar: "",
  }));
  await addUsers(db, users);
  // User n wagers n in each of January, February and March: 3n in the period.
  await addWagers(
    db,
    users.flatMap((user, i) =>
      [0, 31, 59].map((day) => ({
        id: `${user.id}-${day}`,
        userId: user.id,
        amount: String(i + 1),
        placedAt: START + day * DAY + 3_600,
      })),
    ),
  );
  small = await affiliateKey(db.read, "small-aff");
  large = await affiliateKey(db.read, "large-aff");
  // Pool size 1: its `read` and `leaderboard` pools hold one connection each (`write` keeps at least two).
  oneConnection = await openDatabase({ url: database.url, poolSize: 1, queryTimeoutMs: 10_000 });
});

afterAll(async () => {
  await oneConnection?.close();
});

/** `read`'s answer, or a failure naming the wait when it has none within 5 s. */
async function answered<T>(read: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("no answer in 5 s: the read waits for a second connection")), 5_000);
  });
  try {
    return await Promise.race([read, waited]);
  } finally {
    clearTimeout(timer);
  }
}

/** A new store's reads of kept boards on the one-connection leaderboard pool. */
function keptBoards(): KeyedStandings {
  const keyed = mariadbStandings(oneConnection.leaderboard).keyed;
  if (keyed === undefined) throw new Error("the MariaDB standings read kept boards");
  return keyed;
}

const SMALL_BOARD = [
  ["s2", "bob", "30.00000000"],
  ["s3", "cid", "20.25000000"],
  ["s1", "ann", "11.25000000"],
];
const LARGE_TOP = [
  ["l520", "player520", "1560.00000000"],
  ["l519", "player519", "1557.00000000"],
  ["l518", "player518", "1554.00000000"],
];

describe("a board read on a pool of one connection", () => {
  it("answers the freeze's causal read of a small and of a large affiliate", async () => {
    const smallRows = await answered(
      causalStandings(oneConnection.read, "mariadb").topUsers(small, START, END, 10, "wagered"),
    );
    expect(smallRows.map((row) => [row.userExternalId, row.username, row.total])).toEqual(SMALL_BOARD);
    const largeRows = await answered(
      causalStandings(oneConnection.read, "mariadb").topUsers(large, START, END, 3, "wagered"),
    );
    expect(largeRows.map((row) => [row.userExternalId, row.username, row.total])).toEqual(LARGE_TOP);
  });

  it("answers a kept board's snapshot read of a small and of a large affiliate", async () => {
    const smallRows = await answered(keptBoards().boardWithKeys(small, START, END, 10, "wagered"));
    expect(smallRows.map((row) => [row.userExternalId, row.username, row.total])).toEqual(SMALL_BOARD);
    const largeRows = await answered(keptBoards().boardWithKeys(large, START, END, 3, "wagered"));
    expect(largeRows.map((row) => [row.userExternalId, row.username, row.total])).toEqual(LARGE_TOP);
  });

  it("answers as many first reads at once as the pool has connections", async () => {
    const two = await openDatabase({ url: database.url, poolSize: 2, queryTimeoutMs: 10_000 });
    try {
      // Two freezes at once, each on its own instance's standings (the test that hung), of each affiliate.
      const reads = [small, small, large, large].map((affiliate) =>
        causalStandings(two.read, "mariadb").topUsers(affiliate, START, END, 3, "wagered"),
      );
      const boards = await answered(Promise.all(reads));
      expect(boards.map((rows) => rows.map((row) => [row.userExternalId, row.username, row.total]))).toEqual([
        SMALL_BOARD,
        SMALL_BOARD,
        LARGE_TOP,
        LARGE_TOP,
      ]);
    } finally {
      await two.close();
    }
  });
});
