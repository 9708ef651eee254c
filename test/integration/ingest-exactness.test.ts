/**
 * Ingested wagers come back exact to the last of 8 fraction digits: thousands
 * of random amounts sent over gRPC, summed here with integer (BigInt)
 * arithmetic, read back through the public REST path and over RPC for
 * aligned, half-month and misaligned periods, and every rollup row equal to
 * the raw wagers. A user who moves keeps old wagers with the old affiliate.
 */

import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IngestWager } from "../../gen/topwagers/v1/wager_ingest_pb.js";
import { mulberry32 } from "../../src/ingest/core/seed-data.js";
import { ROLLUPS } from "../../src/ingest/sql/rollups.js";
import { verifyRollups } from "../../src/ingest/sql/verify.js";
import { bucketStart } from "../../src/values/calendar.js";
import { NOV_1, OCT_1, OCT_16, SEP_1 } from "../support/dates.js";
import { canonical, toUnits, unitsToDecimal } from "../support/decimals.js";
import { createKey } from "../support/fixtures.js";
import { type IngestServers, startIngestServers, TEST_INGEST_TOKEN } from "../support/ingest.js";

const MOVE_AT = Date.UTC(2026, 9, 10) / 1000; // mover switches affiliates here
const AFFILIATES = ["aff-a", "aff-b", "aff-c"];

interface Sent {
  readonly userId: string;
  readonly affiliate: string;
  readonly units: bigint;
  readonly placedAt: number;
}

let servers: IngestServers;
const keys = new Map<string, string>();
const usernames = new Map<string, string>();
const sent: Sent[] = [];

beforeAll(async () => {
  servers = await startIngestServers("ingest_exactness", { INGEST_TOKEN: TEST_INGEST_TOKEN }, { now: () => NOV_1 });
  const ingest = servers.client("grpc");
  const users = [];
  for (const [a, affiliate] of AFFILIATES.entries()) {
    keys.set(affiliate, (await createKey(servers.database.db, affiliate)).secret);
    for (let i = 0; i < 20; i++) {
      const id = `${affiliate}-u${i}`;
      usernames.set(id, `player ${a}-${String(i).padStart(2, "0")}`);
      users.push({ id, affiliateId: affiliate, username: usernames.get(id) ?? "", avatar: "" });
    }
  }
  usernames.set("mover", "the mover");
  users.push({ id: "mover", affiliateId: "aff-a", username: "the mover", avatar: "https://img.example.com/m.png" });
  expect((await ingest.upsertUsers({ users })).upserted).toBe(61);

  const next = mulberry32(2026);
  const wager = (n: number, userId: string, affiliate: string, placedAt: number, amount?: string): IngestWager => {
    const text =
      amount ?? `${Math.floor(next() ** 4 * 1_000_000)}.${String(Math.floor(next() * 100_000_000)).padStart(8, "0")}`;
    sent.push({ userId, affiliate, units: toUnits(text), placedAt });
    return { $typeName: "topwagers.v1.IngestWager", id: `x-${n}`, userId, amount: text, placedAt: BigInt(placedAt) };
  };
  const before: IngestWager[] = [];
  for (let n = 0; n < 6000; n++) {
    const affiliate = AFFILIATES[Math.floor(next() * 3)] ?? "aff-a";
    const userId = `${affiliate}-u${Math.floor(next() ** 2 * 20)}`;
    before.push(wager(n, userId, affiliate, SEP_1 + Math.floor(next() * (NOV_1 - SEP_1))));
  }
  // Extremes: the smallest amount, and the largest ones whose sum exceeds a single amount's range.
  before.push(wager(6000, "aff-c-u19", "aff-c", OCT_16, "0.00000001"));
  for (let n = 6001; n < 6004; n++) before.push(wager(n, "aff-c-u18", "aff-c", OCT_16 + n, "999999999999.99999999"));
  // The mover wagers for aff-a until MOVE_AT, then moves to aff-b.
  for (let n = 0; n < 50; n++) before.push(wager(7000 + n, "mover", "aff-a", MOVE_AT - 1 - n * 3600));
  const batches: IngestWager[][] = [];
  for (let i = 0; i < before.length; i += 1000) batches.push(before.slice(i, i + 1000));
  // Two concurrent senders, as the platform might run them.
  const clients = [servers.client("grpc"), servers.client("connect")];
  let index = 0;
  await Promise.all(
    clients.map(async (client) => {
      for (let i = index++; i < batches.length; i = index++) {
        const result = await client.recordWagers({ wagers: batches[i] ?? [] });
        expect(result).toMatchObject({ recorded: batches[i]?.length, duplicates: 0 });
      }
    }),
  );
  await ingest.upsertUsers({
    users: [{ id: "mover", affiliateId: "aff-b", username: "the mover", avatar: "https://img.example.com/m.png" }],
  });
  const after = Array.from({ length: 40 }, (_, n) => wager(8000 + n, "mover", "aff-b", MOVE_AT + n * 3600));
  expect(await ingest.recordWagers({ wagers: after })).toMatchObject({ recorded: 40, duplicates: 0 });
}, 60_000);

afterAll(async () => {
  await servers?.close();
});

/** The exact standings: [username, canonical total] by total desc, then username and user id in code point order. */
function expectedStandings(affiliate: string, start: number, end: number): [string, string][] {
  const totals = new Map<string, bigint>();
  for (const w of sent) {
    if (w.affiliate !== affiliate || w.placedAt < start || w.placedAt > end) continue;
    totals.set(w.userId, (totals.get(w.userId) ?? 0n) + w.units);
  }
  const bytes = (s: string) => Buffer.from(s, "utf8");
  return [...totals.entries()]
    .sort(
      ([ua, a], [ub, b]) =>
        (a < b ? 1 : a > b ? -1 : 0) ||
        Buffer.compare(bytes(usernames.get(ua) ?? ""), bytes(usernames.get(ub) ?? "")) ||
        Buffer.compare(bytes(ua), bytes(ub)),
    )
    .map(([user, units]) => [usernames.get(user) ?? "", unitsToDecimal(units)]);
}

const PERIODS: [string, number, number][] = [
  ["September and October (monthly buckets)", SEP_1, NOV_1 - 1],
  ["the second half of October (daily buckets)", OCT_16, NOV_1 - 1],
  ["a misaligned span (hourly buckets and raw edges)", SEP_1 + 9 * 86_400 + 13 * 3600 + 17 * 60 + 5, OCT_1 + 36_359],
  ["one second holding the largest amounts", OCT_16 + 6001, OCT_16 + 6001],
];

describe.each(PERIODS)("totals for %s", (_name, start, end) => {
  it.each(AFFILIATES)("equal the integer sums over REST for %s", async (affiliate) => {
    const response = await fetch(`${servers.publicUrl}/top-affiliate-wagers-by-period`, {
      method: "POST",
      headers: { authorization: `Bearer ${keys.get(affiliate)}`, "content-type": "application/json" },
      body: JSON.stringify({ startTimestamp: start, endTimestamp: end, numUsers: 100 }),
    });
    expect(response.status).toBe(200);
    // Read the totals from the text: JSON.parse would round them to doubles.
    const text = await response.text();
    const got = [...text.matchAll(/"username":("(?:[^"\\]|\\.)*")[^}]*"totalWagered":([0-9.eE+-]+)\}/g)].map((m) => [
      JSON.parse(m[1] ?? '""') as string,
      canonical(m[2] ?? "0"),
    ]);
    expect(got).toEqual(expectedStandings(affiliate, start, end));
  });

  it.each(AFFILIATES)("equal the integer sums over gRPC for %s", async (affiliate) => {
    const client = servers.publicClient(keys.get(affiliate) ?? "");
    const answer = await client.getTopAffiliateWagersByPeriod({
      startTimestamp: BigInt(start),
      endTimestamp: BigInt(end),
      numUsers: 100,
    });
    expect(answer.data.map((e) => [e.username, canonical(e.totalWageredDecimal)])).toEqual(
      expectedStandings(affiliate, start, end),
    );
  });
});

it("keeps a moved user's earlier wagers with the old affiliate", () => {
  const a = expectedStandings("aff-a", SEP_1, NOV_1 - 1).find(([name]) => name === "the mover");
  const b = expectedStandings("aff-b", SEP_1, NOV_1 - 1).find(([name]) => name === "the mover");
  expect(a?.[1]).toBe(
    unitsToDecimal(sent.filter((w) => w.userId === "mover" && w.placedAt < MOVE_AT).reduce((s, w) => s + w.units, 0n)),
  );
  expect(b?.[1]).toBe(
    unitsToDecimal(sent.filter((w) => w.userId === "mover" && w.placedAt >= MOVE_AT).reduce((s, w) => s + w.units, 0n)),
  );
});

it("has every rollup row equal to the raw wagers, and raw sums equal to the integer sums", async () => {
  const report = await verifyRollups(servers.database.db.read);
  expect(report.mismatchCount).toBe(0);
  expect(report.wagers).toBe(sent.length);
  for (const rollup of ROLLUPS) {
    const [rows] = await servers.database.db.read.query<RowDataPacket[]>(
      `SELECT a.external_id AS affiliate, SUM(r.total) AS total, SUM(r.wagers) AS n
         FROM ${rollup.table} r JOIN affiliates a ON a.id = r.affiliate_id GROUP BY a.external_id ORDER BY a.external_id`,
    );
    expect(rows.map((r) => [r.affiliate, canonical(String(r.total)), Number(r.n)])).toEqual(
      AFFILIATES.map((affiliate) => {
        const mine = sent.filter((w) => w.affiliate === affiliate);
        return [affiliate, unitsToDecimal(mine.reduce((s, w) => s + w.units, 0n)), mine.length];
      }),
    );
  }
});

it("puts every wager in the bucket where its UTC hour, day and month start", async () => {
  const times = [
    0,
    59,
    3599,
    3600,
    86_399,
    86_400,
    SEP_1 - 1,
    SEP_1,
    NOV_1 - 1,
    Date.UTC(2028, 1, 29, 23, 59, 59) / 1000, // leap day
    Date.UTC(2028, 2, 1) / 1000,
    Date.UTC(2026, 11, 31, 23, 59, 59) / 1000,
    Date.UTC(2027, 0, 1) / 1000,
    Date.UTC(2100, 1, 28, 12) / 1000, // 2100 is not a leap year
    4_294_967_295,
  ];
  for (const rollup of ROLLUPS) {
    for (const t of times) {
      const [rows] = await servers.database.db.read.query<RowDataPacket[]>(
        `SELECT ${rollup.bucketOf("placed_at")} AS b FROM (SELECT CAST(? AS UNSIGNED) AS placed_at) t`,
        [t],
      );
      expect([rollup.level, t, Number(rows[0]?.b)]).toEqual([rollup.level, t, bucketStart(rollup.level, t)]);
    }
  }
});
