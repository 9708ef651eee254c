/**
 * Wager weights on the write side: RecordWagers takes weight_bps (0 to 10000,
 * absent = 10000), refuses a bad one naming the item and the bound, treats a
 * re-send with another weight as a conflict, and every rollup row holds the
 * exact weighted total beside the plain one (checked row by row against
 * BigInt sums computed here, through voids before and after their wagers);
 * verify stays clean.
 */

import { Code } from "@connectrpc/connect";
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IngestWager } from "../../gen/topwagers/v1/wager_ingest_pb.js";
import { mulberry32 } from "../../src/ingest/core/seed-data.js";
import { ROLLUPS } from "../../src/ingest/sql/rollups.js";
import { verifyRollups } from "../../src/ingest/sql/verify.js";
import { bucketStart } from "../../src/values/calendar.js";
import { refusal } from "../support/calls.js";
import { NOV_1, OCT_1 } from "../support/dates.js";
import { picoUnitsToDecimal, toPicoUnits, toUnits, unitsToDecimal, weightedUnits } from "../support/decimals.js";
import { type IngestServers, startIngestServers, TEST_INGEST_TOKEN, wagerMessage } from "../support/ingest.js";

const USERS = 8;

let servers: IngestServers;

async function storedWeights(ids: readonly string[]): Promise<Record<string, number>> {
  const [rows] = await servers.database.db.read.query<RowDataPacket[]>(
    "SELECT external_id, weight_bps FROM wagers WHERE external_id IN (?)",
    [ids],
  );
  return Object.fromEntries(rows.map((r) => [String(r.external_id), Number(r.weight_bps)]));
}

beforeAll(async () => {
  servers = await startIngestServers("ingest_weights", { INGEST_TOKEN: TEST_INGEST_TOKEN }, { now: () => NOV_1 });
  const users = Array.from({ length: USERS }, (_, i) => ({
    id: `wt-u${i}`,
    affiliateId: "aff-wt",
    username: `weighted ${i}`,
    avatar: "",
  }));
  await servers.client("grpc").upsertUsers({ users });
}, 60_000);

afterAll(async () => {
  await servers?.close();
});

describe("weight_bps on RecordWagers", () => {
  it("stores each wager's weight; a wager without one counts fully (10000)", async () => {
    const answer = await servers.client("connect").recordWagers({
      wagers: [
        wagerMessage("s-1", "wt-u0", "10", OCT_1 + 10, 0),
        wagerMessage("s-2", "wt-u0", "10", OCT_1 + 20, 2500),
        wagerMessage("s-3", "wt-u0", "10", OCT_1 + 30),
        wagerMessage("s-4", "wt-u0", "10", OCT_1 + 40, 10_000),
      ],
    });
    expect(answer.recorded).toBe(4);
    expect(await storedWeights(["s-1", "s-2", "s-3", "s-4"])).toEqual({
      "s-1": 0,
      "s-2": 2500,
      "s-3": 10_000,
      "s-4": 10_000,
    });
  });

  it("refuses a weight above 10000 naming the item, its id and the bound, and writes nothing", async () => {
    const error = await refusal(
      servers.client("grpc").recordWagers({
        wagers: [
          wagerMessage("b-1", "wt-u1", "5", OCT_1 + 50, 9_999),
          wagerMessage("b-2", "wt-u1", "5", OCT_1 + 60, 10_001),
        ],
      }),
    );
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toBe(
      'wagers[1] (id "b-2") weightBps must be a whole number from 0 to 10000 basis points (got 10001)',
    );
    expect(await storedWeights(["b-1", "b-2"])).toEqual({});
  });

  it("counts a re-send with the same weight (absent = 10000) as a duplicate, and another weight as a conflict", async () => {
    const client = servers.client("connect");
    expect(
      await client.recordWagers({
        wagers: [
          wagerMessage("s-3", "wt-u0", "10", OCT_1 + 30, 10_000),
          wagerMessage("s-2", "wt-u0", "10.000", OCT_1 + 20, 2500),
        ],
      }),
    ).toMatchObject({ recorded: 0, duplicates: 2 });
    const record = (...wagers: IngestWager[]) => refusal(client.recordWagers({ wagers }));
    const conflict = await record(
      wagerMessage("n-1", "wt-u0", "1", OCT_1 + 70, 5000),
      wagerMessage("s-2", "wt-u0", "10", OCT_1 + 20, 2501),
    );
    expect(conflict.code).toBe(Code.AlreadyExists);
    expect(conflict.rawMessage).toContain('"s-2"');
    const absent = await record(wagerMessage("s-1", "wt-u0", "10", OCT_1 + 10));
    expect(absent.code).toBe(Code.AlreadyExists);
    // A repeat inside one call with another weight is a conflict too.
    const inBatch = await record(
      wagerMessage("n-2", "wt-u0", "1", OCT_1 + 80, 100),
      wagerMessage("n-2", "wt-u0", "1", OCT_1 + 80, 200),
    );
    expect(inBatch.code).toBe(Code.AlreadyExists);
    expect(await storedWeights(["n-1", "n-2"])).toEqual({});
  });

  it("checks a voided wager's weight when it is sent again", async () => {
    const client = servers.client("grpc");
    await client.recordWagers({ wagers: [wagerMessage("vv-1", "wt-u2", "3.5", OCT_1 + 90, 4000)] });
    expect(await client.voidWagers({ wagerIds: ["vv-1"] })).toMatchObject({ voided: 1 });
    expect(
      await client.recordWagers({ wagers: [wagerMessage("vv-1", "wt-u2", "3.5", OCT_1 + 90, 4000)] }),
    ).toMatchObject({
      recorded: 0,
      duplicates: 1,
    });
    const error = await refusal(
      client.recordWagers({ wagers: [wagerMessage("vv-1", "wt-u2", "3.5", OCT_1 + 90, 4001)] }),
    );
    expect(error.code).toBe(Code.AlreadyExists);
    const [rows] = await servers.database.db.read.query<RowDataPacket[]>(
      "SELECT weight_bps FROM wager_voids WHERE external_id = 'vv-1'",
    );
    expect(rows.map((r) => Number(r.weight_bps))).toEqual([4000]);
  });
});

describe("weighted totals in every rollup", () => {
  interface Sent {
    readonly id: string;
    readonly userId: string;
    readonly amount: string;
    readonly placedAt: number;
    readonly weightBps: number | undefined;
  }

  it("equal the BigInt sums row by row through weights, voids before and after, and re-sends; verify is clean", async () => {
    const next = mulberry32(2022);
    const weights = [undefined, 0, 1, 1000, 3333, 5000, 9999, 10_000];
    const all: Sent[] = [];
    for (let n = 0; n < 900; n++) {
      const whole = Math.floor(next() * 50_000);
      const fraction = String(Math.floor(next() * 100_000_000)).padStart(8, "0");
      all.push({
        id: `r-${n}`,
        userId: `wt-u${3 + Math.floor(next() * (USERS - 3))}`,
        amount: `${whole}.${fraction}`,
        // October, with hours shared by several wagers.
        placedAt: OCT_1 + Math.floor(next() * 30 * 24) * 3600 + Math.floor(next() * 7) * 17,
        weightBps: weights[Math.floor(next() * weights.length)],
      });
    }
    const voidedFirst = all.filter((_, i) => i % 11 === 0).map((w) => w.id);
    const voidedAfter = all.filter((_, i) => i % 7 === 3).map((w) => w.id);
    const client = servers.client("connect");
    // Voids before their wagers (pending), then the wagers in batches (with a re-sent batch), then more voids.
    expect(await client.voidWagers({ wagerIds: voidedFirst })).toMatchObject({ pending: voidedFirst.length });
    const messages = all.map((w) => wagerMessage(w.id, w.userId, w.amount, w.placedAt, w.weightBps));
    for (let i = 0; i < messages.length; i += 250) {
      await servers.client(i % 500 === 0 ? "grpc" : "connect").recordWagers({ wagers: messages.slice(i, i + 250) });
    }
    expect(await client.recordWagers({ wagers: messages.slice(0, 250) })).toMatchObject({
      recorded: 0,
      duplicates: 250,
    });
    expect(await client.voidWagers({ wagerIds: voidedAfter })).toMatchObject({
      voided: voidedAfter.filter((id) => !voidedFirst.includes(id)).length,
    });

    const voided = new Set([...voidedFirst, ...voidedAfter]);
    const userIds = Object.fromEntries(
      (
        await servers.database.db.read.query<RowDataPacket[]>(
          "SELECT id, external_id FROM users WHERE external_id LIKE 'wt-u%'",
        )
      )[0].map((r) => [String(r.external_id), Number(r.id)]),
    );
    for (const rollup of ROLLUPS) {
      const expected = new Map<string, { plain: bigint; weighted: bigint; wagers: number }>();
      for (const w of all) {
        if (voided.has(w.id)) continue;
        const key = `${bucketStart(rollup.level, w.placedAt)}:${userIds[w.userId]}`;
        const row = expected.get(key) ?? { plain: 0n, weighted: 0n, wagers: 0 };
        row.plain += toUnits(w.amount);
        row.weighted += weightedUnits(w.amount, w.weightBps ?? 10_000);
        row.wagers += 1;
        expected.set(key, row);
      }
      const [rows] = await servers.database.db.read.query<RowDataPacket[]>(
        `SELECT bucket, user_id, total, weighted_total, wagers FROM ${rollup.table}
          WHERE user_id IN (?) ORDER BY bucket, user_id`,
        [
          Object.entries(userIds)
            .filter(([id]) => Number(id.slice(4)) >= 3)
            .map(([, internal]) => internal),
        ],
      );
      const found = Object.fromEntries(
        rows.map((r) => [
          `${r.bucket}:${r.user_id}`,
          [
            unitsToDecimal(toUnits(String(r.total))),
            picoUnitsToDecimal(toPicoUnits(String(r.weighted_total))),
            Number(r.wagers),
          ],
        ]),
      );
      const want = Object.fromEntries(
        [...expected.entries()].map(([key, v]) => [
          key,
          [unitsToDecimal(v.plain), picoUnitsToDecimal(v.weighted), v.wagers],
        ]),
      );
      expect(found, rollup.table).toEqual(want);
    }
    const report = await verifyRollups(servers.database.db.read);
    expect(report.mismatchCount).toBe(0);
  }, 60_000);
});
