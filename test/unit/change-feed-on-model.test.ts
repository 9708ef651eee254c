/**
 * The change feed on the reference model's change rows (test/support/reference-model.ts), with no
 * database: a subscriber sees each recorded wager, void and rename once, with the affiliate it
 * touches, and the boards it must drop follow from that (ChangeSet). The same feed on MariaDB,
 * with ids that commit out of order, is test/integration/change-feed.test.ts.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ChangeFeed } from "../../src/boards/core/change-feed.js";
import { ChangeSet } from "../../src/boards/core/change-set.js";
import type { DataChange } from "../../src/ports/changes.js";
import { JAN_1_2026 as JAN_1 } from "../support/dates.js";
import { ReferenceModel } from "../support/reference-model.js";

const DAY = 86_400;
let feed: ChangeFeed | undefined;

afterEach(async () => {
  await feed?.stop();
  feed = undefined;
});

/** A model with two affiliates' users, and a started feed whose changes land in `seen`. */
async function following() {
  const model = new ReferenceModel({ now: () => JAN_1 });
  await model.ingest.upsertUsers([
    { id: "u1", affiliateId: "aff-a", username: "alice", avatar: "" },
    { id: "u2", affiliateId: "aff-b", username: "bob", avatar: "" },
  ]);
  const seen: DataChange[] = [];
  feed = new ChangeFeed(model.changeRows, { onChanges: (changes) => seen.push(...changes), intervalMs: 10_000 });
  feed.start();
  await feed.caughtUp();
  return { model, seen, feed, a: model.affiliateKey("aff-a"), b: model.affiliateKey("aff-b") };
}

describe("the change feed on the reference model", () => {
  it("tells a subscriber of recorded wagers with their affiliate and placement span", async () => {
    const { model, seen, feed, a, b } = await following();
    expect(seen).toEqual([]); // nothing committed since the feed started
    await model.ingest.recordWagers([
      { id: "w1", userId: "u1", amount: "10", placedAt: JAN_1 + DAY },
      { id: "w2", userId: "u1", amount: "5", placedAt: JAN_1 + 3 * DAY },
      { id: "w3", userId: "u2", amount: "7", placedAt: JAN_1 + 2 * DAY },
    ]);
    await feed.caughtUp();
    expect(seen.map((c) => [c.affiliateId, c.firstAt, c.lastAt, c.userExternalId])).toEqual([
      [a, JAN_1 + DAY, JAN_1 + 3 * DAY, undefined],
      [b, JAN_1 + 2 * DAY, JAN_1 + 2 * DAY, undefined],
    ]);
    const changed = new ChangeSet(seen);
    expect([...changed.affiliates()]).toEqual([a, b]);
    expect(changed.touchesPeriod(a as number, JAN_1 + 2 * DAY, JAN_1 + 2 * DAY)).toBe(true);
    expect(changed.touchesPeriod(a as number, JAN_1 + 4 * DAY, JAN_1 + 5 * DAY)).toBe(false);
  });

  it("tells a subscriber of a void with the voided wager's affiliate, and only that one", async () => {
    const { model, seen, feed, a, b } = await following();
    await model.ingest.recordWagers([
      { id: "w1", userId: "u1", amount: "10", placedAt: JAN_1 + DAY },
      { id: "w2", userId: "u2", amount: "7", placedAt: JAN_1 + 2 * DAY },
    ]);
    await feed.caughtUp();
    seen.length = 0;
    await model.ingest.voidWagers(["w2"]);
    await feed.caughtUp();
    expect(seen.map((c) => [c.affiliateId, c.firstAt, c.lastAt])).toEqual([[b, JAN_1 + 2 * DAY, JAN_1 + 2 * DAY]]);
    expect(new ChangeSet(seen).touchesPeriod(a as number, JAN_1, JAN_1 + 31 * DAY)).toBe(false);
  });

  it("tells a subscriber of a rename as a profile change of that user, touching the boards that list them", async () => {
    const { model, seen, feed } = await following();
    await model.ingest.upsertUsers([{ id: "u1", affiliateId: "aff-a", username: "alicia", avatar: "" }]);
    await feed.caughtUp();
    expect(seen.map((c) => [c.affiliateId, c.userExternalId])).toEqual([[undefined, "u1"]]);
    const changed = new ChangeSet(seen);
    expect([changed.touchesUsers([{ userId: "u1" }]), changed.touchesUsers([{ userId: "u2" }])]).toEqual([true, false]);
  });
});
