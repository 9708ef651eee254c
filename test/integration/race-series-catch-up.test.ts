/**
 * A series always reaches now (issue 35 item 1). Every instance is down from before a daily race's start to
 * after its review and the next two days': when an instance's clock runs again, each missed race is frozen
 * from the real data, the races after it are made and frozen in turn up to the current one, which is live,
 * and `GET /races/{slug}` answers it. Each race's events reach a receiver once each, in order per race
 * (started, ended, finalized), carrying the transition's own time (issue 40 item 4). A series created with an anchor
 * in the past starts with the period that holds now (docs/api.md, "Series").
 */
import { Webhook } from "standardwebhooks";
import { beforeAll, describe, expect, it } from "vitest";
import type { Races } from "../../src/races/core/races.js";
import { newWebhookSecret } from "../../src/webhooks/core/signature.js";
import { useTestDatabase } from "../support/database.js";
import { NOV_1 } from "../support/dates.js";
import { addUsers, addWagers, affiliateKey, wager } from "../support/fixtures.js";
import { instanceRaces, ok, RACE_EVENT_TYPES, raceNamed, raceTable } from "../support/races.js";
import { quickDeliveryWorker, useWebhookBench } from "../support/webhook-receiver.js";

const database = useTestDatabase("race_series_catch_up");
const DAY = 86_400;
const REVIEW = 3_600;
let now = NOV_1 - 100;
const webhooks = useWebhookBench(database);

function instance(): Races {
  return instanceRaces(database.db, { now: () => now, freeze: "primary" });
}

beforeAll(async () => {
  await addUsers(database.db, [
    { id: "u1", affiliateId: "series-aff", username: "ann", avatar: "" },
    { id: "u2", affiliateId: "series-aff", username: "bob", avatar: "" },
  ]);
  // Day 0: ann leads; day 1: bob leads; day 2: only ann; day 3 (live at the restart): bob so far.
  await addWagers(database.db, [
    wager("u1", "300", NOV_1 + 100),
    wager("u2", "200", NOV_1 + 200),
    wager("u2", "50", NOV_1 + DAY - 1),
    wager("u1", "10", NOV_1 + DAY + 5),
    wager("u2", "90.5", NOV_1 + 2 * DAY - 1),
    wager("u1", "7", NOV_1 + 2 * DAY + 3600),
    wager("u2", "1", NOV_1 + 3 * DAY + 60),
  ]);
});

interface Received {
  type: string;
  timestamp: string;
  data: { id: string; state: string; entries?: { username: string; prize: string }[] };
}

describe("a daily series after every instance was down", () => {
  it("freezes each missed race from the data, makes the next ones up to the live one, and sends each event once in order", async () => {
    const { receiver, transport, store } = webhooks;
    const affiliateId = await affiliateKey(database.db.read, "series-aff");
    const secret = newWebhookSecret();
    await webhooks.endpoint("ep_series", "series-aff", RACE_EVENT_TYPES, secret);
    const [a, b] = [instance(), instance()];
    const first = ok(
      await a.create(
        affiliateId,
        raceNamed("daily", "Daily", [NOV_1], { repeat: "daily", prizes: ["10", "5"], reviewSeconds: REVIEW }),
      ),
    ).race;
    expect(first.endTimestamp).toBe(NOV_1 + DAY - 1);
    now = NOV_1 - 10;
    await a.tick();
    // Every instance down from before day 0's start to day 3, 01:10 (day 2's review is over); then two instances run their clocks.
    now = NOV_1 + 3 * DAY + REVIEW + 600;
    for (let i = 0; i < 6; i++) await Promise.all([a.tick(), b.tick()]);

    const series = ok(await a.list(affiliateId, { slug: "daily" })).races.map((view) => view.race);
    const byIndex = [...series].sort((x, y) => x.seriesIndex - y.seriesIndex);
    expect(byIndex.map((race) => [race.seriesIndex, race.startTimestamp, race.frozenAt])).toEqual([
      [0, NOV_1, now],
      [1, NOV_1 + DAY, now],
      [2, NOV_1 + 2 * DAY, now],
      [3, NOV_1 + 3 * DAY, null],
      [4, NOV_1 + 4 * DAY, null],
    ]);
    const ids = byIndex.map((race) => race.id);
    const views = await Promise.all(ids.slice(0, 3).map(async (id) => ok(await a.get(affiliateId, id))));
    expect(views.map((view) => [view.state, raceTable(view)])).toEqual([
      [
        "final",
        [
          [1, "ann", "300", "10"],
          [2, "bob", "250", "5"],
        ],
      ],
      [
        "final",
        [
          [1, "bob", "90.5", "10"],
          [2, "ann", "10", "5"],
        ],
      ],
      ["final", [[1, "ann", "7", "10"]]],
    ]);
    const current = ok(await a.get(affiliateId, "daily"));
    expect([current.race.id, current.state, raceTable(current)]).toEqual([ids[3], "live", [[1, "bob", "1", "10"]]]);

    const worker = quickDeliveryWorker(store, transport, "t");
    while ((await worker.runOnce()) > 0);
    const events = receiver.received.map(
      (request) => new Webhook(secret).verify(request.body, request.headers) as Received,
    );
    const iso = (seconds: number) => new Date(seconds * 1000).toISOString();
    const expected: [string, string, string, string][] = [];
    for (const [i, id] of ids.slice(0, 3).entries()) {
      const start = NOV_1 + i * DAY;
      expected.push(
        ["race.started", id, "live", iso(start)],
        ["race.ended", id, "reviewing", iso(start + DAY)],
        ["race.finalized", id, "final", iso(now)],
      );
    }
    expected.push(["race.started", ids[3] as string, "live", iso(NOV_1 + 3 * DAY)]);
    // In order per race (one race's next event waits for the one before; other races' are not held back).
    const perRace = ids.flatMap((id) => events.filter((e) => e.data.id === id));
    expect(perRace.map((e) => [e.type, e.data.id, e.data.state, e.timestamp])).toEqual(expected);
    expect(events).toHaveLength(expected.length);
    expect(new Set(receiver.received.map((request) => request.headers["webhook-id"])).size).toBe(expected.length);
  });

  it("starts a series created with a past anchor at the period holding now, on the anchor's cadence", async () => {
    const affiliateId = await affiliateKey(database.db.read, "series-aff");
    const races = instance();
    now = NOV_1 + 10 * DAY + 5 * 3600;
    // Anchored 9 days and 12 hours back, at noon: the period holding now is day 9's, 12:00 to day 10, 11:59:59.
    const created = ok(
      await races.create(
        affiliateId,
        raceNamed("noon", "Noon to noon", [NOV_1 + 12 * 3600], { repeat: "daily", prizes: ["1"], reviewSeconds: 0 }),
      ),
    );
    expect([created.state, created.race.startTimestamp, created.race.endTimestamp, created.race.anchorStart]).toEqual([
      "live",
      NOV_1 + 9 * DAY + 12 * 3600,
      NOV_1 + 10 * DAY + 12 * 3600 - 1,
      NOV_1 + 12 * 3600,
    ]);
    await races.tick();
    await races.tick();
    const listed = ok(await races.list(affiliateId, { slug: "noon" })).races.map((view) => [
      view.race.seriesIndex,
      view.race.startTimestamp,
      view.state,
    ]);
    expect(listed).toEqual([
      [10, NOV_1 + 10 * DAY + 12 * 3600, "scheduled"],
      [9, NOV_1 + 9 * DAY + 12 * 3600, "live"],
    ]);
  });
});
