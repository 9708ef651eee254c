/**
 * A race's life on MariaDB, through the Races service with a clock the test moves: standings with
 * ties, exclusions and a minimum; a void during review changes the result; the freeze happens once
 * when two instances race for it; after it nothing changes the result (a void, a rename, a restart);
 * the digest recomputed here from the answer matches; a freeze missed while every instance was down
 * happens at the next start; a monthly series in America/New_York across DST keeps its boundaries.
 */
import type { RowDataPacket } from "mysql2/promise";
import { beforeAll, describe, expect, it } from "vitest";
import { causalStandings, mariadbStandings } from "../../src/boards/sql/standings-store.js";
import { mariadbIngest } from "../../src/ingest/sql/ingest-store.js";
import { openDatabase } from "../../src/platform/database/database.js";
import type { Races } from "../../src/races/core/races.js";
import { useTestDatabase } from "../support/database.js";
import { NOV_1, NOV_16 } from "../support/dates.js";
import { addUsers, addWagers, affiliateKey } from "../support/fixtures.js";
import { instanceRaces, ok, raceNamed, raceTable, recomputedDigest, subscribeToRaceEvents } from "../support/races.js";

const database = useTestDatabase("race_lifecycle");
const AVATAR = "https://cdn.example.com/default.png";
const END = NOV_16 - 1;
const REVIEW = 3_600;
let now = NOV_1 - 100;
let affiliateId = 0;

/** One instance's Races (each its own leaderboard, as separate processes would have). */
function instance(): Races {
  return instanceRaces(database.db, { now: () => now, avatar: AVATAR });
}

beforeAll(async () => {
  const db = database.db;
  const users = ["u1", "u2", "u3", "u4", "u5", "staff"];
  await addUsers(
    db,
    users.map((id) => ({ id, affiliateId: "race-aff", username: `name-${id}`, avatar: "" })),
  );
  await addWagers(db, [
    { id: "w1", userId: "u1", amount: "300", placedAt: NOV_1 + 10 },
    { id: "w2", userId: "u2", amount: "200", placedAt: NOV_1 + 20 },
    { id: "w3", userId: "u3", amount: "150.5", placedAt: NOV_1 + 30 },
    { id: "w3b", userId: "u3", amount: "49.5", placedAt: NOV_1 + 31 },
    { id: "w4", userId: "u4", amount: "200.00", placedAt: END },
    { id: "w5", userId: "u5", amount: "99.99999999", placedAt: NOV_1 + 40 },
    { id: "w6", userId: "staff", amount: "1000", placedAt: NOV_1 + 50 },
    // Outside the period: never counts.
    { id: "w7", userId: "u5", amount: "500", placedAt: END + 1 },
  ]);
  affiliateId = await affiliateKey(db.read, "race-aff");
  await subscribeToRaceEvents(db.write, "ep_race_lifecycle", "race-aff");
});

/** The outbox's events of one race, in order: [type, state in the data, the data's digest]. */
async function eventsOf(raceId: string): Promise<[string, string, string | null][]> {
  const [rows] = await database.db.read.query<RowDataPacket[]>("SELECT body FROM webhook_events ORDER BY id");
  return rows
    .map(
      (row) => JSON.parse(String(row.body)) as { type: string; data: { id: string; state: string; digest?: string } },
    )
    .filter((body) => body.data.id === raceId)
    .map((body) => [body.type, body.data.state, body.data.digest ?? null]);
}

describe("one race from scheduled to final", () => {
  let a: Races;
  let b: Races;
  let raceId = "";
  beforeAll(() => {
    a = instance();
    b = instance();
  });

  it("is created scheduled, with no standings and the whole prize pool unallocated", async () => {
    const view = ok(
      await a.create(
        affiliateId,
        raceNamed("november", "November race", [NOV_1, END], {
          prizes: ["100.00", "50.00", "30.00"],
          minWagered: "100",
          excludedUserIds: ["staff"],
          reviewSeconds: REVIEW,
        }),
      ),
    );
    raceId = view.race.id;
    expect(raceId).toMatch(/^race_[a-z2-7]{20}$/);
    expect(view.state).toBe("scheduled");
    expect(view.entries).toEqual([]);
    expect(view.unallocated).toBe("180.00");
    expect(view.race.shown).toBe(3);
    expect(view.finalAt).toBe(END + REVIEW);
  });

  it("ranks ties together and splits their prizes, rounded down, the rest unallocated", async () => {
    now = END;
    const view = ok(await a.get(affiliateId, "november"));
    expect(view.state).toBe("live");
    expect(view.race.id).toBe(raceId);
    // u2, u3 and u4 tie at 200 across ranks 2-4: (50 + 30 + 0) / 3 = 26.666… → 26.66 each; 0.02 left.
    expect(raceTable(view)).toEqual([
      [1, "name-u1", "300", "100.00"],
      [2, "name-u2", "200", "26.66"],
      [2, "name-u3", "200", "26.66"],
      [2, "name-u4", "200", "26.66"],
    ]);
    expect(view.unallocated).toBe("0.02");
    expect(view.entries[0]?.avatar).toBe(AVATAR);
  });

  it("follows a void during review", async () => {
    now = END + 10;
    const store = mariadbIngest(database.db.write);
    await store.voidWagers(["w3b"]);
    const view = ok(await b.get(affiliateId, raceId));
    expect(view.state).toBe("reviewing");
    // u3 falls to 150.5: still placed (rank 4, above the minimum) but not among the 3 shown.
    expect(raceTable(view)).toEqual([
      [1, "name-u1", "300", "100.00"],
      [2, "name-u2", "200", "40.00"],
      [2, "name-u4", "200", "40.00"],
    ]);
    expect(view.unallocated).toBe("0.00");
  });

  it("is not frozen before the review window is over", async () => {
    now = END + REVIEW;
    const counts = await a.tick();
    expect(counts.frozen).toBe(0);
    expect(ok(await a.get(affiliateId, raceId)).state).toBe("reviewing");
  });

  it("is frozen exactly once when two instances tick at once", async () => {
    now = END + REVIEW + 1;
    const [first, second] = await Promise.all([a.tick(), b.tick()]);
    expect(first.frozen + second.frozen).toBe(1);
    const [rows] = await database.db.read.query<RowDataPacket[]>(
      "SELECT COUNT(*) AS n FROM race_results rr JOIN races r ON r.id = rr.race_id WHERE r.public_id = ?",
      [raceId],
    );
    expect(Number(rows[0]?.n)).toBe(3);
    const view = ok(await a.get(affiliateId, raceId));
    expect(view.state).toBe("final");
    expect(view.race.frozenAt).toBe(END + REVIEW + 1);
    expect(view.race.digest).toBe(recomputedDigest(view));
  });

  it("wrote each of its events once, in order, the finalized one with the digest", async () => {
    const view = ok(await a.get(affiliateId, raceId));
    expect(await eventsOf(raceId)).toEqual([
      ["race.started", "live", null],
      ["race.ended", "reviewing", null],
      ["race.finalized", "final", view.race.digest],
    ]);
  });

  it("never changes after the freeze: not a void, a rename nor a restart", async () => {
    const before = ok(await a.get(affiliateId, raceId));
    now = END + REVIEW + 100;
    await mariadbIngest(database.db.write).voidWagers(["w1"]);
    await mariadbIngest(database.db.write).upsertUsers([
      { id: "u2", affiliateId: "race-aff", username: "renamed", avatar: "https://x.example/a.png" },
    ]);
    const restarted = instance();
    expect((await restarted.tick()).frozen).toBe(0);
    const after = ok(await restarted.get(affiliateId, raceId));
    expect(raceTable(after)).toEqual(raceTable(before));
    expect(after.race.digest).toBe(before.race.digest);
    expect(after.unallocated).toBe("0.00");
    expect(await restarted.update(affiliateId, raceId, { title: "x" })).toEqual({
      kind: "precondition",
      message: "the race is final. Its result and rules never change",
    });
    expect(await restarted.cancel(affiliateId, raceId)).toEqual({
      kind: "precondition",
      message: `race ${raceId} is final and cannot be cancelled`,
    });
  });
});

describe("a freeze missed while every instance was down", () => {
  it("happens at the next start, with the start and end announced on the way", async () => {
    now = NOV_1 - 100;
    const created = ok(
      await instance().create(
        affiliateId,
        raceNamed("missed", "Missed", [NOV_1, END], {
          prizes: ["10"],
          excludedUserIds: ["staff"],
          reviewSeconds: 0,
        }),
      ),
    );
    // Every instance down from before the start until long after the freeze was due.
    now = END + 86_400 * 3;
    const counts = await instance().tick();
    expect(counts).toEqual({ started: 1, ended: 1, frozen: 1 });
    const view = ok(await instance().get(affiliateId, created.race.id));
    expect(view.state).toBe("final");
    expect(view.race.frozenAt).toBe(END + 86_400 * 3);
    // w1 was voided above: u4 and u2 (renamed) tie at 200 for the one prize of 10: 5 each, in the board's
    // order for ties (username in code point order).
    expect(raceTable(view)).toEqual([
      [1, "name-u4", "200", "5"],
      [1, "renamed", "200", "5"],
    ]);
    expect(view.unallocated).toBe("0");
    // The start and the end nobody announced in time go out with the freeze, once each.
    expect(await eventsOf(created.race.id)).toEqual([
      ["race.started", "live", null],
      ["race.ended", "reviewing", null],
      ["race.finalized", "final", view.race.digest],
    ]);
  });
});

describe("a monthly series in America/New_York", () => {
  // 00:00 on the 23rd in New York: EDT (UTC-4) until 1 Nov 2026 and from 14 Mar 2027, EST (UTC-5) between.
  const starts = [
    Date.UTC(2026, 9, 23, 4) / 1000, // 23 Oct 2026, EDT
    Date.UTC(2026, 10, 23, 5) / 1000, // 23 Nov 2026, EST
    Date.UTC(2026, 11, 23, 5) / 1000, // 23 Dec 2026, EST
    Date.UTC(2027, 0, 23, 5) / 1000, // 23 Jan 2027, EST
    Date.UTC(2027, 1, 23, 5) / 1000, // 23 Feb 2027, EST
    Date.UTC(2027, 2, 23, 4) / 1000, // 23 Mar 2027, EDT again
    Date.UTC(2027, 3, 23, 4) / 1000, // 23 Apr 2027
  ];

  it("starts each race at 00:00 local on the 23rd, ends it one second before the next, and keeps the history", async () => {
    now = (starts[0] ?? 0) - 1000;
    const races = instance();
    const first = ok(
      await races.create(
        affiliateId,
        raceNamed("ny-monthly", "Monthly", [starts[0] as number], {
          prizes: ["1"],
          repeat: "monthly",
          timeZone: "America/New_York",
          reviewSeconds: 0,
        }),
      ),
    );
    expect([first.race.startTimestamp, first.race.endTimestamp]).toEqual([starts[0], (starts[1] ?? 0) - 1]);
    for (let i = 0; i < 5; i++) {
      now = starts[i] ?? 0;
      await races.tick();
      const current = ok(await races.get(affiliateId, "ny-monthly"));
      expect([current.race.seriesIndex, current.race.startTimestamp, current.race.endTimestamp, current.state]).toEqual(
        [i, starts[i], (starts[i + 1] ?? 0) - 1, "live"],
      );
      // The next race exists before this one ends.
      expect(current.next).toEqual({ id: expect.stringMatching(/^race_/), startsAt: starts[i + 1] });
    }
    now = (starts[5] ?? 0) + 10;
    await races.tick();
    await races.tick();
    const history = ok(await races.list(affiliateId, { slug: "ny-monthly", pageSize: 3 }));
    expect(history.races.map((r) => [r.race.seriesIndex, r.race.startTimestamp])).toEqual([
      [6, starts[6]],
      [5, starts[5]],
      [4, starts[4]],
    ]);
    const rest = ok(
      await races.list(affiliateId, { slug: "ny-monthly", pageSize: 10, pageToken: history.nextPageToken }),
    );
    expect(rest.races.map((r) => r.race.seriesIndex)).toEqual([3, 2, 1, 0]);
    expect(rest.nextPageToken).toBe("");
    const final = ok(await races.list(affiliateId, { slug: "ny-monthly", states: ["final"], pageSize: 10 }));
    expect(final.races.map((r) => r.race.seriesIndex)).toEqual([4, 3, 2, 1, 0]);
  });
});

describe("the freeze's standings read", () => {
  it("answers as the board does, and leaves its pooled connection as it found it (wsrep_sync_wait 0)", async () => {
    // A pool of one connection: the read's connection is the one asked afterwards.
    const single = await openDatabase({ url: database.url, poolSize: 1 });
    try {
      const causal = await causalStandings(single.write, single.flavour).topUsers(
        affiliateId,
        NOV_1,
        END,
        10,
        "wagered",
      );
      const plain = await mariadbStandings(single.write).topUsers(affiliateId, NOV_1, END, 10, "wagered");
      expect(causal).toEqual(plain);
      expect(causal.length).toBeGreaterThan(0);
      const [rows] = await single.write.query<RowDataPacket[]>("SELECT @@SESSION.wsrep_sync_wait AS wait");
      expect(Number(rows[0]?.wait)).toBe(0);
    } finally {
      await single.close();
    }
  });
});
