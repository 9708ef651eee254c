/**
 * Boards ranked by the weighted total, over REST and Connect: exact totals
 * against BigInt sums computed here from what was sent, for a month, a
 * half-month and a misaligned period, with ties (weighted and plain), a user
 * whose wagers all had weight 0, voids before and after their wagers,
 * re-sent duplicates and a refused conflict. Without rankBy the REST body is
 * exactly the three fields it always was; the answer cache keys on the
 * ranking; a bad rankBy is refused naming the field.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  GetTopAffiliateWagersByPeriodRequestSchema,
  RankBy,
  TopWagersService,
} from "../../gen/topwagers/v1/top_wagers_pb.js";
import type { IngestWager } from "../../gen/topwagers/v1/wager_ingest_pb.js";
import { mulberry32 } from "../../src/ingest/core/seed-data.js";
import { NOV_1, OCT_1, OCT_16 } from "../support/dates.js";
import { picoUnitsToDecimal, toUnits, unitsToDecimal, weightedUnits } from "../support/decimals.js";
import { createKey } from "../support/fixtures.js";
import { type IngestServers, startIngestServers, TEST_INGEST_TOKEN } from "../support/ingest.js";

const DAY = 86_400;
const PERIODS: Record<string, [number, number]> = {
  month: [OCT_1, NOV_1 - 1],
  "half-month": [OCT_16, NOV_1 - 1],
  // 3 October 05:17:11 to 28 October 13:44:09: partial hours at both ends.
  misaligned: [OCT_1 + 2 * DAY + 5 * 3600 + 17 * 60 + 11, OCT_1 + 27 * DAY + 13 * 3600 + 44 * 60 + 9],
};

interface Sent {
  readonly id: string;
  readonly user: string;
  readonly amount: string;
  readonly placedAt: number;
  readonly weightBps: number | undefined;
}

const USERS: Record<string, string> = {
  "wb-0": "Zelda",
  "wb-1": "amber",
  "wb-2": "basil",
  "wb-3": "cedar",
  "wb-4": "dune",
  // Designed ties on 20 October: alpha and beta tie weighted (50), alpha and gamma tie plain (100).
  "wb-t1": "tie alpha",
  "wb-t2": "tie beta",
  "wb-t3": "tie gamma",
  // Only weight-0 wagers: on top by plain total, last by weighted.
  "wb-z": "zero weight",
};
const avatar = (user: string) => `https://avatars.example.com/${user}.png`;

let servers: IngestServers;
let key = "";
const counted = new Map<string, Sent>();

function message(w: Sent): IngestWager {
  return {
    $typeName: "topwagers.v1.IngestWager",
    id: w.id,
    userId: w.user,
    amount: w.amount,
    placedAt: BigInt(w.placedAt),
    ...(w.weightBps === undefined ? {} : { weightBps: w.weightBps }),
  };
}

beforeAll(async () => {
  // The answer cache on: every write happens here, before the first read.
  servers = await startIngestServers(
    "weighted_boards",
    { INGEST_TOKEN: TEST_INGEST_TOKEN, CACHE_TTL_MS: "60000" },
    { now: () => NOV_1 + 7 * DAY },
  );
  key = (await createKey(servers.database.db, "aff-wb")).secret;
  const client = servers.client("connect");
  await client.upsertUsers({
    users: Object.entries(USERS).map(([id, username]) => ({
      $typeName: "topwagers.v1.IngestUser" as const,
      id,
      affiliateId: "aff-wb",
      username,
      avatar: avatar(id),
    })),
  });
  const next = mulberry32(22);
  const weights = [undefined, 0, 1000, 2500, 5000, 7777, 10_000];
  const all: Sent[] = [];
  for (let n = 0; n < 700; n++) {
    all.push({
      id: `wb-w${n}`,
      user: `wb-${Math.floor(next() * 5)}`,
      amount: `${Math.floor(next() * 5000)}.${String(Math.floor(next() * 100_000_000)).padStart(8, "0")}`,
      // 25 September to 5 November, so every period has wagers outside it on both sides.
      placedAt: OCT_1 - 6 * DAY + Math.floor(next() * 41 * DAY),
      weightBps: weights[Math.floor(next() * weights.length)],
    });
  }
  const tie = OCT_1 + 19 * DAY + 12 * 3600;
  all.push(
    { id: "wb-ta", user: "wb-t1", amount: "60", placedAt: tie, weightBps: 5000 },
    { id: "wb-tb", user: "wb-t1", amount: "40", placedAt: tie + 60, weightBps: 5000 },
    { id: "wb-tc", user: "wb-t2", amount: "50", placedAt: tie + 120, weightBps: undefined },
    { id: "wb-td", user: "wb-t3", amount: "100", placedAt: tie + 180, weightBps: 2000 },
    { id: "wb-z1", user: "wb-z", amount: "99999", placedAt: tie + 240, weightBps: 0 },
  );
  // Voids among the random wagers (the designed ones above stay).
  const voidedBefore = all.filter((_, i) => i < 700 && i % 13 === 5).map((w) => w.id);
  const voidedAfter = all.filter((_, i) => i < 700 && i % 9 === 2).map((w) => w.id);
  await client.voidWagers({ wagerIds: voidedBefore });
  for (let i = 0; i < all.length; i += 200) await client.recordWagers({ wagers: all.slice(i, i + 200).map(message) });
  // Duplicates change nothing; a conflicting re-send (another weight) is refused whole.
  expect(await client.recordWagers({ wagers: all.slice(100, 300).map(message) })).toMatchObject({
    recorded: 0,
    duplicates: 200,
  });
  const first = all[0] as Sent;
  const conflict = await client
    .recordWagers({
      wagers: [
        message({ ...first, id: "wb-new", weightBps: 10_000 }),
        message({ ...first, weightBps: first.weightBps === 0 ? 1 : 0 }),
      ],
    })
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect((conflict as ConnectError).code).toBe(Code.AlreadyExists);
  await client.voidWagers({ wagerIds: voidedAfter });
  const voided = new Set([...voidedBefore, ...voidedAfter]);
  for (const w of all) if (!voided.has(w.id)) counted.set(w.id, w);
}, 60_000);

afterAll(async () => {
  await servers?.close();
});

interface Expected {
  readonly user: string;
  readonly plain: string;
  readonly weighted: string;
}

/** The board computed here: users who wagered in [start, end], by the chosen total, then username, then id. */
function expected(start: number, end: number, rankBy: "wagered" | "weighted"): Expected[] {
  const totals = new Map<string, { plain: bigint; weighted: bigint }>();
  for (const w of counted.values()) {
    if (w.placedAt < start || w.placedAt > end) continue;
    const t = totals.get(w.user) ?? { plain: 0n, weighted: 0n };
    t.plain += toUnits(w.amount) * 10_000n;
    t.weighted += weightedUnits(w.amount, w.weightBps ?? 10_000);
    totals.set(w.user, t);
  }
  const byName = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
  return [...totals.entries()]
    .sort(([ua, a], [ub, b]) => {
      const [x, y] = rankBy === "weighted" ? [a.weighted, b.weighted] : [a.plain, b.plain];
      return x !== y ? (x > y ? -1 : 1) : byName(USERS[ua] ?? "", USERS[ub] ?? "") || byName(ua, ub);
    })
    .map(([user, t]) => ({
      user,
      plain: unitsToDecimal(t.plain / 10_000n),
      weighted: picoUnitsToDecimal(t.weighted),
    }));
}

async function rest(body: Record<string, unknown>): Promise<{ status: number; text: string }> {
  const response = await fetch(`${servers.publicUrl}/top-affiliate-wagers-by-period`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

/** The exact REST body for these entries: three fields, or four with the weighted total. */
function restBody(entries: readonly Expected[], weighted: boolean): string {
  const items = entries.map(
    (e) =>
      `{"username":${JSON.stringify(USERS[e.user])},"avatar":${JSON.stringify(avatar(e.user))},"totalWagered":${e.plain}` +
      `${weighted ? `,"weightedWagered":${e.weighted}` : ""}}`,
  );
  return `{"data":[${items.join(",")}],"errors":null}`;
}

describe.each(Object.entries(PERIODS))("the %s period", (_name, [start, end]) => {
  it("REST without rankBy: exactly the three fields of before, ranked by total wagered", async () => {
    const answer = await rest({ startTimestamp: start, endTimestamp: end, numUsers: 100 });
    expect(answer).toEqual({ status: 200, text: restBody(expected(start, end, "wagered"), false) });
  });

  it("REST rankBy weighted: ranked by the weighted total, with weightedWagered", async () => {
    const board = expected(start, end, "weighted");
    const answer = await rest({ startTimestamp: start, endTimestamp: end, numUsers: 100, rankBy: "weighted" });
    expect(answer).toEqual({ status: 200, text: restBody(board, true) });
    // The orders differ: weights changed the board.
    expect(board.map((e) => e.user)).not.toEqual(expected(start, end, "wagered").map((e) => e.user));
  });

  it("REST rankBy wagered: ranked by total wagered, with weightedWagered", async () => {
    const answer = await rest({ startTimestamp: start, endTimestamp: end, numUsers: 100, rankBy: "wagered" });
    expect(answer).toEqual({ status: 200, text: restBody(expected(start, end, "wagered"), true) });
  });

  it("Connect: both orders, every entry with both exact totals, top 3 the head of the list", async () => {
    const client = servers.publicClient(key);
    for (const [rankBy, message] of [
      ["wagered", RankBy.WAGERED],
      ["weighted", RankBy.WEIGHTED],
      ["wagered", undefined],
      ["wagered", RankBy.UNSPECIFIED],
    ] as const) {
      const board = expected(start, end, rankBy);
      for (const numUsers of [100, 3]) {
        const answer = await client.getTopAffiliateWagersByPeriod({
          startTimestamp: BigInt(start),
          endTimestamp: BigInt(end),
          numUsers,
          ...(message === undefined ? {} : { rankBy: message }),
        });
        expect(
          answer.data.map((e) => [e.rank, e.userId, e.totalWageredDecimal, e.weightedWageredDecimal]),
          `${rankBy} ${message} N=${numUsers}`,
        ).toEqual(board.slice(0, numUsers).map((e, i) => [i + 1, e.user, e.plain, e.weighted]));
        for (const e of answer.data) {
          expect(e.weightedWagered).toBe(Number(e.weightedWageredDecimal));
          expect(e.totalWagered).toBe(Number(e.totalWageredDecimal));
        }
      }
    }
  });
});

describe("ties and weight 0", () => {
  it("breaks weighted and plain ties by username, and lists a weight-0 user last with 0", async () => {
    const day = OCT_1 + 19 * DAY;
    const [start, end] = [day, day + DAY - 1];
    const weighted = expected(start, end, "weighted").filter((e) => e.user.startsWith("wb-t") || e.user === "wb-z");
    expect(weighted.map((e) => [USERS[e.user], e.plain, e.weighted])).toEqual([
      ["tie alpha", "100", "50"],
      ["tie beta", "50", "50"],
      ["tie gamma", "100", "20"],
      ["zero weight", "99999", "0"],
    ]);
    const answer = await rest({ startTimestamp: start, endTimestamp: end, numUsers: 100, rankBy: "weighted" });
    expect(answer.text).toBe(restBody(expected(start, end, "weighted"), true));
    const names = [...answer.text.matchAll(/"username":"([^"]*)"/g)].map((m) => m[1]);
    expect(names.indexOf("tie alpha") + 1).toBe(names.indexOf("tie beta"));
    expect(names.at(-1)).toBe("zero weight");
    const plain = await rest({ startTimestamp: start, endTimestamp: end, numUsers: 100 });
    const plainNames = [...plain.text.matchAll(/"username":"([^"]*)"/g)].map((m) => m[1]);
    expect(plainNames[0]).toBe("zero weight");
    expect(plainNames.indexOf("tie alpha") + 1).toBe(plainNames.indexOf("tie gamma"));
  });

  it("served the same period from the cache for both rankings without mixing them", async () => {
    const stats = servers.app.leaderboard.cacheStats;
    expect(stats.hits).toBeGreaterThan(0);
    const [start, end] = PERIODS.month as [number, number];
    const weighted = await rest({ startTimestamp: start, endTimestamp: end, numUsers: 5, rankBy: "weighted" });
    const plain = await rest({ startTimestamp: start, endTimestamp: end, numUsers: 5 });
    expect(weighted.text).toBe(restBody(expected(start, end, "weighted").slice(0, 5), true));
    expect(plain.text).toBe(restBody(expected(start, end, "wagered").slice(0, 5), false));
    expect(servers.app.leaderboard.cacheStats.hits).toBeGreaterThan(stats.hits);
  });
});

describe("a bad rankBy", () => {
  it("is a 400 on REST naming the field", async () => {
    for (const value of ["WEIGHTED", "weight", 2, null, true]) {
      const answer = await rest({ startTimestamp: OCT_1, endTimestamp: NOV_1 - 1, numUsers: 10, rankBy: value });
      expect(answer.status).toBe(400);
      const body = JSON.parse(answer.text) as { data: unknown; errors: { field?: string; message: string }[] };
      expect(body.data).toBeNull();
      expect(body.errors).toEqual([
        expect.objectContaining({
          field: "rankBy",
          message: `rankBy must be "wagered" or "weighted", got ${JSON.stringify(value)}`,
        }),
      ]);
    }
  });

  it("is INVALID_ARGUMENT over Connect naming the field, with the other fields' problems", async () => {
    const transport = createConnectTransport({ baseUrl: servers.publicUrl, httpVersion: "1.1" });
    const client = createClient(TopWagersService, transport);
    const error = await client
      .getTopAffiliateWagersByPeriod(
        create(GetTopAffiliateWagersByPeriodRequestSchema, {
          startTimestamp: BigInt(OCT_1),
          endTimestamp: BigInt(NOV_1),
          rankBy: 7 as RankBy,
        }),
        { headers: { authorization: `Bearer ${key}` } },
      )
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.InvalidArgument);
    expect((error as ConnectError).rawMessage).toBe(
      "numUsers is required. rankBy must be RANK_BY_WAGERED or RANK_BY_WEIGHTED (got 7)",
    );
  });
});
