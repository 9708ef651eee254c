/**
 * A race's history (issue 36 item 5) on real sockets over MariaDB: every change made through RaceService on
 * one instance (an API key on the public port, the ADMIN_TOKEN on the internal listener) appears once, in
 * order, with its actor, when another instance over the same database reads it (REST
 * `GET /races/{id}/history` and GetRace); an excluded user's exclusion shows without their wagers; voids that
 * reach the race's standings while it runs are counted, and the freeze records which ranks they moved. A
 * publishable key (the public's) sees each actor by its kind, a secret key also which key it was.
 * Expected values are written out by hand from the changes and wagers this file makes.
 */
import { createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RaceService } from "../../gen/topwagers/v1/races_pb.js";
import { createPublicApp, type PublicApp } from "../../src/apps/public.js";
import { loadConfig } from "../../src/platform/config.js";
import { type Database, openDatabase } from "../../src/platform/database/database.js";
import { createOnePortServer, type OnePortServer } from "../../src/platform/transport/one-port-server.js";
import { bearerConnect } from "../support/calls.js";
import { addUsers, addWagers, createKey, secretAndPublishableKeys } from "../support/fixtures.js";
import { type IngestServers, startIngestServers, TEST_INGEST_TOKEN, wagerMessage } from "../support/ingest.js";
import { listenOnFreePort } from "../support/listen.js";
import { OpenApiChecker } from "../support/openapi.js";
import { instanceRaces, ok } from "../support/races.js";
import { restCall } from "../support/rest.js";

const ADMIN_TOKEN = "test-admin-token-history-0123456789";
const NOW = Math.floor(Date.now() / 1000);

/** Instance A: the public port, the internal listener and the database this file makes. */
let a: IngestServers;
/** Instance B: another public app with its own pool over the same database. */
let b: { app: PublicApp; db: Database; server: OnePortServer; url: string };

let checker: OpenApiChecker;

beforeAll(async () => {
  checker = await OpenApiChecker.load();
  a = await startIngestServers("race_history", { INGEST_TOKEN: TEST_INGEST_TOKEN, ADMIN_TOKEN });
  const db = await openDatabase({ url: a.database.url, poolSize: 2, queryTimeoutMs: 10_000 });
  const app = createPublicApp(loadConfig({ CACHE_TTL_MS: "0", DATABASE_URL: a.database.url }), db);
  await app.keysLoaded;
  const server = createOnePortServer(app.handler);
  b = { app, db, server, url: `http://127.0.0.1:${await listenOnFreePort(server.server)}` };
});

afterAll(async () => {
  b?.app.stopServing();
  await b?.server.close(5_000);
  await b?.db.close();
  await a?.close();
});

function raceClient(baseUrl: string, token: string) {
  return createClient(RaceService, bearerConnect(baseUrl, token));
}

/** The REST history, checked against docs/openapi.yaml. */
async function restHistory(baseUrl: string, id: string, key: string): Promise<{ status: number; text: string }> {
  const reply = await restCall(`${baseUrl}/races/${id}/history`, { method: "GET", key });
  expect(checker.check("/races/{slugOrId}/history", "get", reply), reply.text).toEqual([]);
  return { status: reply.status, text: reply.text };
}

describe("changes made on one instance, read on another", () => {
  const affiliate = "rh-changes";
  // Scheduled: its period may still change.
  const start = NOW + 3_600;
  const end = NOW + 86_400;
  let secret = { id: "", secret: "" };
  let publishable = { id: "", secret: "" };
  let raceId = "";

  beforeAll(async () => {
    ({ secret, publishable } = await secretAndPublishableKeys(a.database.db, affiliate));
    await addUsers(a.database.db, [
      { id: "u-alice", affiliateId: affiliate, username: "alice", avatar: "" },
      { id: "u-bob", affiliateId: affiliate, username: "bob", avatar: "" },
    ]);
    await addWagers(a.database.db, [
      { id: "rh-w1", userId: "u-alice", amount: "4321.98", placedAt: NOW - 10 },
      { id: "rh-w2", userId: "u-bob", amount: "1234.56", placedAt: NOW - 20 },
    ]);
    const byKey = raceClient(a.publicUrl, secret.secret);
    const admin = raceClient(a.internalUrl, ADMIN_TOKEN);
    const created = await byKey.createRace({
      rules: {
        slug: "cup",
        title: "Cup",
        startTimestamp: BigInt(start),
        endTimestamp: BigInt(end),
        prizes: ["100", "50"],
      },
    });
    raceId = created.race?.id ?? "";
    await byKey.updateRace({ id: raceId, title: "Big cup" });
    await admin.updateRace({ affiliateId: affiliate, id: raceId, replacePrizes: true, prizes: ["80"] });
    await byKey.updateRace({ id: raceId, minWagered: "10", shown: 5 });
    // The same title again changes nothing: no entry.
    await byKey.updateRace({ id: raceId, title: "Big cup" });
    await byKey.updateRace({ id: raceId, replaceExcludedUserIds: true, excludedUserIds: ["u-alice"] });
    await byKey.updateRace({ id: raceId, endTimestamp: BigInt(end + 3_600) });
    await admin.cancelRace({ affiliateId: affiliate, id: raceId });
  });

  /** The REST body of the history, with `key` the actor of the changes made by the secret key. */
  function expectedHistory(at: readonly number[], key: { kind: string; id: string }) {
    const admin = { kind: "admin", id: "" };
    const changes = [
      { kind: "created", actor: key, fields: [] },
      { kind: "updated", actor: key, fields: [{ field: "title", before: "Cup", after: "Big cup" }] },
      { kind: "updated", actor: admin, fields: [{ field: "prizes", before: ["100", "50"], after: ["80"] }] },
      {
        kind: "updated",
        actor: key,
        fields: [
          { field: "minWagered", before: "0", after: "10" },
          // shown defaults to the number of prizes at creation (docs/api.md).
          { field: "shown", before: 2, after: 5 },
        ],
      },
      { kind: "updated", actor: key, fields: [{ field: "excludedUserIds", added: [""], removed: [] }] },
      { kind: "updated", actor: key, fields: [{ field: "endTimestamp", before: end, after: end + 3_600 }] },
      { kind: "cancelled", actor: admin, fields: [] },
    ].map((change, i) => ({ at: at[i], ...change }));
    return {
      data: {
        raceId,
        changes,
        standings: {
          voidedWagers: 0,
          usersAffected: 0,
          ranksMoved: null,
          lateWagers: { wagers: 0, usersAffected: 0, ranksMoved: null },
        },
      },
      errors: null,
    };
  }

  it("REST on the other instance lists each change once, in order, with its actor's kind, the exclusion as a count", async () => {
    const { status, text } = await restHistory(b.url, raceId, publishable.secret);
    expect(status).toBe(200);
    const body = JSON.parse(text) as { data: { changes: { at: number }[] } };
    const at = body.data.changes.map((change) => change.at);
    expect(at.every((t) => Math.abs(t - NOW) <= 60)).toBe(true);
    expect(at).toEqual([...at].sort((x, y) => x - y));
    // A publishable key's viewers are the public: the affiliate's key acted, but which one is not shown.
    expect(body).toEqual(expectedHistory(at, { kind: "key", id: "" }));
    // The excluded user is neither named nor are their wagers shown; nor is the acting key.
    expect(text).not.toContain("u-alice");
    expect(text).not.toContain("4321");
    expect(text).not.toContain(secret.id);
  });

  it("REST with a secret key shows which key made each change", async () => {
    const { status, text } = await restHistory(b.url, raceId, secret.secret);
    expect(status).toBe(200);
    const at = (JSON.parse(text) as { data: { changes: { at: number }[] } }).data.changes.map((change) => change.at);
    expect(JSON.parse(text)).toEqual(expectedHistory(at, { kind: "key", id: secret.id }));
    expect(text).not.toContain("u-alice");
  });

  it("GetRace on the other instance carries the history; a secret key sees who was excluded, not their wagers", async () => {
    const got = await raceClient(b.url, secret.secret).getRace({ idOrSlug: raceId });
    const history = got.history;
    expect(history?.changes.map((c) => [c.kind, c.actorKind, c.actorId, c.fields.map((f) => f.field)])).toEqual([
      ["created", "key", secret.id, []],
      ["updated", "key", secret.id, ["title"]],
      ["updated", "admin", "", ["prizes"]],
      ["updated", "key", secret.id, ["minWagered", "shown"]],
      ["updated", "key", secret.id, ["excludedUserIds"]],
      ["updated", "key", secret.id, ["endTimestamp"]],
      ["cancelled", "admin", "", []],
    ]);
    const exclusion = history?.changes[4]?.fields[0];
    expect([exclusion?.added, exclusion?.removed, exclusion?.before, exclusion?.after]).toEqual([
      ["u-alice"],
      [],
      [],
      [],
    ]);
    const end = history?.changes[5]?.fields[0];
    expect([end?.before, end?.after]).toEqual([[String(NOW + 86_400)], [String(NOW + 90_000)]]);
    expect(history?.standings).toMatchObject({ voidedWagers: 0, usersAffected: 0, final: false, ranksMoved: [] });
    expect(JSON.stringify(history, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v))).not.toContain("4321");
    const publicly = await raceClient(b.url, publishable.secret).getRace({ idOrSlug: raceId });
    expect(publicly.history?.changes[4]?.fields[0]?.added).toEqual([""]);
    // A publishable key sees who acted by kind only.
    expect(publicly.history?.changes.map((c) => [c.kind, c.actorKind, c.actorId])).toEqual([
      ["created", "key", ""],
      ["updated", "key", ""],
      ["updated", "admin", ""],
      ["updated", "key", ""],
      ["updated", "key", ""],
      ["updated", "key", ""],
      ["cancelled", "admin", ""],
    ]);
  });

  it("the history is append-only in the database itself", async () => {
    const write = a.database.db.write;
    await expect(write.query("UPDATE race_history SET kind = 'x'")).rejects.toThrow(/append-only/);
    await expect(write.query("DELETE FROM race_history")).rejects.toThrow(/append-only/);
  });
});

/** The period of the races below: it ended ten minutes ago, and its review lasts a day (in review now). */
const start = NOW - 7_200;
const end = NOW - 600;
const review = 86_400;

/**
 * A key of `affiliate`, its users `names` (ids `${prefix}-${name}`), their wagers recorded before the race exists
 * (`[wager id, name, amount, placedAt]`), and a race "slug"/"Title" over the period above with prizes 100 and 50.
 * It ended before it was made (in review now): recorded as history on purpose.
 */
async function raceInReview(
  affiliate: string,
  prefix: string,
  names: readonly string[],
  wagers: readonly (readonly [string, string, string, number])[],
  slug: string,
  title: string,
): Promise<{ key: string; raceId: string }> {
  const key = (await createKey(a.database.db, affiliate)).secret;
  await addUsers(
    a.database.db,
    names.map((name) => ({ id: `${prefix}-${name}`, affiliateId: affiliate, username: name, avatar: "" })),
  );
  await addWagers(
    a.database.db,
    wagers.map(([id, name, amount, placedAt]) => ({ id, userId: `${prefix}-${name}`, amount, placedAt })),
  );
  const created = await raceClient(a.publicUrl, key).createRace({
    rules: {
      slug,
      title,
      startTimestamp: BigInt(start),
      endTimestamp: BigInt(end),
      prizes: ["100", "50"],
      reviewSeconds: review,
    },
    allowPast: true,
  });
  return { key, raceId: created.race?.id ?? "" };
}

describe("voids while a race runs", () => {
  let key = "";
  let raceId = "";

  beforeAll(async () => {
    ({ key, raceId } = await raceInReview(
      "rh-voids",
      "v",
      ["alice", "bob", "carol"],
      [
        ["v-a1", "alice", "300", start + 10],
        ["v-a2", "alice", "200", start + 20],
        ["v-b1", "bob", "400", start + 30],
        ["v-c1", "carol", "100", start + 40],
        // Before the race's period: voiding it does not touch the race.
        ["v-c0", "carol", "900", start - 10],
      ],
      "voided",
      "Voided",
    ));
    // In review: alice falls from 500 to 300, below bob's 400.
    await a.client("connect").voidWagers({ wagerIds: ["v-a2", "v-c0"] });
  });

  it("counts the voided wagers of the period while reviewing, the ranks not yet", async () => {
    const { text } = await restHistory(b.url, raceId, key);
    const body = JSON.parse(text) as { data: { standings: unknown } };
    expect(body.data.standings).toEqual({
      voidedWagers: 1,
      usersAffected: 1,
      ranksMoved: null,
      lateWagers: { wagers: 0, usersAffected: 0, ranksMoved: null },
    });
  });

  it("the freeze records which ranks the voids moved, read on the other instance", async () => {
    const clock = instanceRaces(a.database.db, { now: () => end + review + 1 });
    expect(ok({ kind: "ok", value: await clock.tick() })).toMatchObject({ frozen: 1 });
    const { text } = await restHistory(b.url, raceId, key);
    const body = JSON.parse(text) as { data: { changes: { kind: string; actor: unknown }[]; standings: unknown } };
    expect(body.data.changes.map((change) => [change.kind, change.actor])).toEqual([
      ["created", { kind: "key", id: expect.any(String) }],
      ["frozen", { kind: "clock", id: "" }],
    ]);
    // Without the void alice (500) was first and bob (400) second; with it bob is first and alice second.
    expect(body.data.standings).toEqual({
      voidedWagers: 1,
      usersAffected: 1,
      ranksMoved: [1, 2],
      lateWagers: { wagers: 0, usersAffected: 0, ranksMoved: [] },
    });
    const got = await raceClient(b.url, key).getRace({ idOrSlug: raceId });
    expect(got.history?.standings).toMatchObject({
      voidedWagers: 1,
      usersAffected: 1,
      final: true,
      ranksMoved: [1, 2],
    });
  });
});

describe("late wagers recorded during the review", () => {
  let key = "";
  let raceId = "";

  beforeAll(async () => {
    ({ key, raceId } = await raceInReview(
      "rh-late",
      "l",
      ["alice", "bob", "carol", "dave"],
      // Recorded before the race exists: none of these is late.
      [
        ["l-a1", "alice", "500", start + 10],
        ["l-b1", "bob", "400", start + 20],
        ["l-c1", "carol", "100", start + 30],
      ],
      "late",
      "Late",
    ));
    // In review: carol's 200 + 150 and dave's 30 (at the last second) are dated inside the period; alice's a
    // second after the end and bob's a second before the start are not.
    await a.client("connect").recordWagers({
      wagers: [
        wagerMessage("l-c2", "l-carol", "200", start + 40),
        wagerMessage("l-c3", "l-carol", "150", start + 50),
        wagerMessage("l-d1", "l-dave", "30", end),
        wagerMessage("l-a2", "l-alice", "999", end + 1),
        wagerMessage("l-b0", "l-bob", "5", start - 1),
      ],
    });
  });

  it("counts the late wagers of the period while reviewing, the ranks not yet", async () => {
    const { text } = await restHistory(b.url, raceId, key);
    const body = JSON.parse(text) as { data: { standings: unknown } };
    expect(body.data.standings).toEqual({
      voidedWagers: 0,
      usersAffected: 0,
      ranksMoved: null,
      lateWagers: { wagers: 3, usersAffected: 2, ranksMoved: null },
    });
    // No user and no amount is named.
    expect(text).not.toContain("carol");
    expect(text).not.toContain("450");
  });

  it("the freeze records which ranks the late wagers moved, read on the other instance", async () => {
    const clock = instanceRaces(a.database.db, { now: () => end + review + 1 });
    expect(ok({ kind: "ok", value: await clock.tick() })).toMatchObject({ frozen: 1 });
    // At the end: alice 500, bob 400 (second, 50), carol 100. With the late wagers carol has 450 and is second:
    // rank 2's user changed; alice stays first, and dave's 30 reaches no place.
    const { text } = await restHistory(b.url, raceId, key);
    const body = JSON.parse(text) as { data: { standings: unknown } };
    expect(body.data.standings).toEqual({
      voidedWagers: 0,
      usersAffected: 0,
      ranksMoved: [],
      lateWagers: { wagers: 3, usersAffected: 2, ranksMoved: [2] },
    });
    const got = await raceClient(b.url, key).getRace({ idOrSlug: raceId });
    expect(got.entries.map((entry) => [entry.rank, entry.username, entry.prize])).toEqual([
      [1, "alice", "100"],
      [2, "carol", "50"],
    ]);
    expect(got.history?.standings).toMatchObject({
      voidedWagers: 0,
      usersAffected: 0,
      final: true,
      ranksMoved: [],
      lateWagers: 3,
      lateUsersAffected: 2,
      lateRanksMoved: [2],
      lateCounted: true,
    });
  });
});
