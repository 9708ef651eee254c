/**
 * VoidWagers: voided wagers never count. Exact totals (computed here with
 * BigInt) over REST and Connect after four concurrent callers void
 * overlapping batches; the three counts add up; a void that arrives before its
 * wager; re-sends; bad ids write nothing; verify stays clean.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IngestWager } from "../../gen/topwagers/v1/wager_ingest_pb.js";
import { mulberry32 } from "../../src/ingest/core/seed-data.js";
import { ROLLUPS } from "../../src/ingest/sql/rollups.js";
import { verifyRollups } from "../../src/ingest/sql/verify.js";
import { NOV_1, OCT_1 } from "../support/dates.js";
import { canonical, toUnits, unitsToDecimal } from "../support/decimals.js";
import { createKey } from "../support/fixtures.js";
import { type IngestServers, startIngestServers, TEST_INGEST_TOKEN } from "../support/ingest.js";

const USERS = 12;

interface Sent {
  readonly id: string;
  readonly userId: string;
  readonly units: bigint;
  readonly placedAt: number;
  voided: boolean;
}

let servers: IngestServers;
let key = "";
const sent = new Map<string, Sent>();

function wagerMessage(w: Sent, amount: string): IngestWager {
  return {
    $typeName: "topwagers.v1.IngestWager",
    id: w.id,
    userId: w.userId,
    amount,
    placedAt: BigInt(w.placedAt),
  };
}

const amounts = new Map<string, string>();

beforeAll(async () => {
  servers = await startIngestServers("ingest_voids", { INGEST_TOKEN: TEST_INGEST_TOKEN }, { now: () => NOV_1 });
  key = (await createKey(servers.database.db, "aff-v")).secret;
  const users = Array.from({ length: USERS }, (_, i) => ({
    id: `v-u${i}`,
    affiliateId: "aff-v",
    username: `voider ${String(i).padStart(2, "0")}`,
    avatar: "",
  }));
  await servers.client("grpc").upsertUsers({ users });
  const next = mulberry32(77);
  const wagers: IngestWager[] = [];
  for (let n = 0; n < 600; n++) {
    const amount = `${Math.floor(next() * 100_000)}.${String(Math.floor(next() * 100_000_000)).padStart(8, "0")}`;
    const w: Sent = {
      id: `vw-${n}`,
      userId: `v-u${Math.floor(next() * USERS)}`,
      units: toUnits(amount),
      // Spread over October, with some in the same hour so rollup rows hold several wagers.
      placedAt: OCT_1 + Math.floor(next() * 30 * 86_400),
      voided: false,
    };
    sent.set(w.id, w);
    amounts.set(w.id, amount);
    wagers.push(wagerMessage(w, amount));
  }
  await servers.client("grpc").recordWagers({ wagers: wagers.slice(0, 300) });
  await servers.client("connect").recordWagers({ wagers: wagers.slice(300) });
}, 60_000);

afterAll(async () => {
  await servers?.close();
});

function expected(start: number, end: number): [string, string][] {
  const totals = new Map<string, bigint>();
  for (const w of sent.values()) {
    if (w.voided || w.placedAt < start || w.placedAt > end) continue;
    totals.set(w.userId, (totals.get(w.userId) ?? 0n) + w.units);
  }
  return [...totals.entries()]
    .filter(([, units]) => units > 0n)
    .sort(([ua, a], [ub, b]) => (a < b ? 1 : a > b ? -1 : 0) || (ua < ub ? -1 : 1))
    .map(([user, units]) => [`voider ${user.slice(3).padStart(2, "0")}`, unitsToDecimal(units)]);
}

async function restStandings(start: number, end: number): Promise<[string, string][]> {
  const response = await fetch(`${servers.publicUrl}/top-affiliate-wagers-by-period`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ startTimestamp: start, endTimestamp: end, numUsers: 100 }),
  });
  expect(response.status).toBe(200);
  const text = await response.text();
  return [...text.matchAll(/"username":("(?:[^"\\]|\\.)*")[^}]*"totalWagered":([0-9.eE+-]+)\}/g)].map((m) => [
    JSON.parse(m[1] ?? '""') as string,
    canonical(m[2] ?? "0"),
  ]);
}

async function connectStandings(start: number, end: number): Promise<[string, string][]> {
  const answer = await servers.publicClient(key).getTopAffiliateWagersByPeriod({
    startTimestamp: BigInt(start),
    endTimestamp: BigInt(end),
    numUsers: 100,
  });
  return answer.data.map((e) => [e.username, canonical(e.totalWageredDecimal)]);
}

const PERIODS: [string, number, number][] = [
  ["October (monthly)", OCT_1, NOV_1 - 1],
  ["the first half of October", OCT_1, OCT_1 + 15 * 86_400 - 1],
  ["a misaligned span (hours and raw edges)", OCT_1 + 3 * 86_400 + 5 * 3600 + 77, OCT_1 + 19 * 86_400 + 40_000],
];

describe("four concurrent callers voiding overlapping batches", () => {
  it("void each wager exactly once, and the counts add up", async () => {
    // Caller k voids recorded wagers 100k .. 100k+179 (neighbours overlap by 80) and ghosts.
    const calls = Array.from({ length: 4 }, (_, k) => {
      const ids = Array.from({ length: 180 }, (_, i) => `vw-${100 * k + i}`);
      ids.push(`ghost-${k}`, "ghost-shared", `vw-${100 * k}`); // the last repeats an id of the call
      return ids;
    });
    const protocols = ["grpc", "connect", "grpc-web", "grpc"] as const;
    const results = await Promise.all(
      calls.map((wagerIds, k) => servers.client(protocols[k]).voidWagers({ wagerIds })),
    );
    for (const [k, result] of results.entries()) {
      const distinct = new Set(calls[k]).size;
      expect(result.voided + result.alreadyVoided + result.pending).toBe(distinct);
      expect(result.pending).toBe(2);
    }
    const union = new Set(calls.flat().filter((id) => sent.has(id)));
    expect(results.reduce((s, r) => s + r.voided, 0)).toBe(union.size);
    const mentions = calls.reduce((s, ids) => s + new Set(ids.filter((id) => sent.has(id))).size, 0);
    expect(results.reduce((s, r) => s + r.alreadyVoided, 0)).toBe(mentions - union.size);
    for (const id of union) (sent.get(id) as Sent).voided = true;
  });

  it.each(PERIODS)("leave exact totals over REST and Connect for %s", async (_name, start, end) => {
    const want = expected(start, end);
    expect(want.length).toBeGreaterThan(0);
    expect(await restStandings(start, end)).toEqual(want);
    expect(await connectStandings(start, end)).toEqual(want);
  });

  it("keep every rollup equal to the counted raw wagers (verify is clean)", async () => {
    const report = await verifyRollups(servers.database.db.read);
    expect(report.mismatchCount).toBe(0);
    expect(report.wagers).toBe([...sent.values()].filter((w) => !w.voided).length);
    // No rollup row is left with zero wagers.
    for (const { table } of ROLLUPS) {
      const [rows] = await servers.database.db.read.query<RowDataPacket[]>(
        `SELECT COUNT(*) AS n FROM ${table} WHERE wagers = 0`,
      );
      expect([table, Number(rows[0]?.n)]).toEqual([table, 0]);
    }
  });

  it("answer a second void of the same ids with alreadyVoided and change nothing", async () => {
    const again = await servers.client("connect").voidWagers({ wagerIds: ["vw-0", "vw-1", "vw-2"] });
    expect(again).toMatchObject({ voided: 0, alreadyVoided: 3, pending: 0 });
    expect(await restStandings(OCT_1, NOV_1 - 1)).toEqual(expected(OCT_1, NOV_1 - 1));
  });

  it("count a re-sent voided wager as a duplicate that stays voided, and refuse other content", async () => {
    const w = sent.get("vw-5") as Sent;
    const resend = await servers.client("grpc").recordWagers({ wagers: [wagerMessage(w, amounts.get(w.id) ?? "")] });
    expect(resend).toMatchObject({ recorded: 0, duplicates: 1 });
    const changed = servers.client("grpc").recordWagers({ wagers: [wagerMessage(w, "1.5")] });
    await expect(changed).rejects.toMatchObject({ code: Code.AlreadyExists });
    await expect(changed).rejects.toThrow(/"vw-5"/);
    expect(await restStandings(OCT_1, NOV_1 - 1)).toEqual(expected(OCT_1, NOV_1 - 1));
  });
});

describe("a void that arrives before its wager", () => {
  it("is pending, and the wager is recorded as voided and never counts", async () => {
    const early = await servers.client("grpc").voidWagers({ wagerIds: ["late-1", "late-2"] });
    expect(early).toMatchObject({ voided: 0, alreadyVoided: 0, pending: 2 });
    // Voiding a pending id again: still never recorded, still pending.
    expect(await servers.client("grpc").voidWagers({ wagerIds: ["late-1"] })).toMatchObject({ pending: 1 });
    const counted: Sent = {
      id: "late-3",
      userId: "v-u0",
      units: toUnits("100000"),
      placedAt: OCT_1 + 7,
      voided: false,
    };
    const late = [
      { id: "late-1", userId: "v-u1", units: toUnits("500000"), placedAt: OCT_1 + 5, voided: true },
      { id: "late-2", userId: "v-u2", units: toUnits("400000.5"), placedAt: OCT_1 + 6, voided: true },
      counted,
    ];
    const result = await servers.client("connect").recordWagers({
      wagers: late.map((w) => wagerMessage(w, unitsToDecimal(w.units))),
    });
    expect(result).toMatchObject({ recorded: 3, duplicates: 0 });
    for (const w of late) {
      sent.set(w.id, w);
      amounts.set(w.id, unitsToDecimal(w.units));
    }
    for (const [, start, end] of PERIODS) expect(await restStandings(start, end)).toEqual(expected(start, end));
    // A re-send is a duplicate, and the void is now an applied one.
    expect(
      await servers.client("grpc").recordWagers({ wagers: [wagerMessage(late[0] as Sent, "500000")] }),
    ).toMatchObject({ recorded: 0, duplicates: 1 });
    expect(await servers.client("grpc").voidWagers({ wagerIds: ["late-1", "late-3"] })).toMatchObject({
      voided: 1,
      alreadyVoided: 1,
      pending: 0,
    });
    counted.voided = true;
    expect(await connectStandings(OCT_1, NOV_1 - 1)).toEqual(expected(OCT_1, NOV_1 - 1));
    expect((await verifyRollups(servers.database.db.read)).mismatchCount).toBe(0);
  });

  it("races its wager's first recording and still never counts it (20 rounds)", async () => {
    for (let round = 0; round < 20; round++) {
      const id = `race-${round}`;
      const w: Sent = { id, userId: "v-u3", units: toUnits("12345.6789"), placedAt: OCT_1 + 100 + round, voided: true };
      const [voided, recorded] = await Promise.all([
        servers.client("connect").voidWagers({ wagerIds: [id] }),
        servers.client("grpc").recordWagers({ wagers: [wagerMessage(w, "12345.6789")] }),
      ]);
      expect(recorded).toMatchObject({ recorded: 1, duplicates: 0 });
      expect(voided.voided + voided.pending).toBe(1);
      sent.set(id, w);
    }
    expect(await restStandings(OCT_1, NOV_1 - 1)).toEqual(expected(OCT_1, NOV_1 - 1));
    expect((await verifyRollups(servers.database.db.read)).mismatchCount).toBe(0);
  });
});

describe("validation", () => {
  it("refuses the whole call for one bad id, naming index and id, and voids nothing", async () => {
    const call = servers.client("connect").voidWagers({ wagerIds: ["vw-550", "", "x".repeat(65), "vw-551"] });
    await expect(call).rejects.toBeInstanceOf(ConnectError);
    await expect(call).rejects.toMatchObject({ code: Code.InvalidArgument });
    const error = (await call.catch((e: unknown) => e)) as ConnectError;
    expect(error.rawMessage).toBe(
      `wagerIds[1] (id "") id is required. wagerIds[2] (id "${"x".repeat(65)}") id must be at most 64 characters`,
    );
    const [rows] = await servers.database.db.read.query<RowDataPacket[]>(
      "SELECT COUNT(*) AS n FROM wager_voids WHERE external_id IN ('vw-550', 'vw-551')",
    );
    expect(Number(rows[0]?.n)).toBe(0);
    expect(await restStandings(OCT_1, NOV_1 - 1)).toEqual(expected(OCT_1, NOV_1 - 1));
  });

  it("refuses more than 1000 ids and accepts an empty list", async () => {
    const many = Array.from({ length: 1001 }, (_, i) => `m-${i}`);
    await expect(servers.client("grpc").voidWagers({ wagerIds: many })).rejects.toMatchObject({
      code: Code.InvalidArgument,
    });
    expect(await servers.client("grpc").voidWagers({ wagerIds: [] })).toMatchObject({
      voided: 0,
      alreadyVoided: 0,
      pending: 0,
    });
  });

  it("needs the ingest token like every ingest call", async () => {
    await expect(servers.client("grpc", null).voidWagers({ wagerIds: ["vw-9"] })).rejects.toMatchObject({
      code: Code.Unauthenticated,
    });
    await expect(servers.client("connect", key).voidWagers({ wagerIds: ["vw-9"] })).rejects.toMatchObject({
      code: Code.Unauthenticated,
    });
  });
});
