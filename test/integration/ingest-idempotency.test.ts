/**
 * RecordWagers is idempotent by wager id, also under concurrent callers:
 * four callers send overlapping batches (every wager four times, some twice in
 * one batch) at once, over different protocols. Every wager is recorded
 * exactly once, each call's recorded + duplicates equals what it sent, totals
 * are exact and every rollup equals the raw wagers. A re-sent id with other
 * content is refused whole (already_exists) and changes nothing.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IngestWager } from "../../gen/topwagers/v1/wager_ingest_pb.js";
import { verifyRollups } from "../../src/ingest/sql/verify.js";
import { refusal } from "../support/calls.js";
import { OCT_1 } from "../support/dates.js";
import { toUnits, unitsToDecimal } from "../support/decimals.js";
import { type IngestProtocol, type IngestServers, startIngestServers, TEST_INGEST_TOKEN } from "../support/ingest.js";

const NOW = Date.UTC(2026, 10, 1) / 1000;
const POOL = 3000;
const BATCH = 500;

let servers: IngestServers;
const pool: IngestWager[] = [];

function wager(id: string, userId: string, amount: string, placedAt: number): IngestWager {
  return { $typeName: "topwagers.v1.IngestWager", id, userId, amount, placedAt: BigInt(placedAt) };
}

async function snapshot(): Promise<string> {
  const parts: unknown[] = [];
  for (const table of ["wagers", "wager_hourly", "wager_daily", "wager_halfmonthly", "wager_monthly"]) {
    const [rows] = await servers.database.db.read.query<RowDataPacket[]>(`SELECT * FROM ${table} ORDER BY 1, 2, 3`);
    parts.push(rows);
  }
  return JSON.stringify(parts);
}

async function userTotals(): Promise<[string, string, number][]> {
  const [rows] = await servers.database.db.read.query<RowDataPacket[]>(
    `SELECT u.external_id AS user, SUM(w.amount) AS total, COUNT(*) AS n
       FROM wagers w JOIN users u ON u.id = w.user_id GROUP BY u.external_id ORDER BY u.external_id`,
  );
  return rows.map((r) => [String(r.user), unitsToDecimal(toUnits(String(r.total))), Number(r.n)]);
}

function expectedTotals(wagers: readonly IngestWager[]): [string, string, number][] {
  const totals = new Map<string, [bigint, number]>();
  for (const w of wagers) {
    const [units, n] = totals.get(w.userId) ?? [0n, 0];
    totals.set(w.userId, [units + toUnits(w.amount), n + 1]);
  }
  return [...totals.entries()]
    .sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
    .map(([user, [units, n]]) => [user, unitsToDecimal(units), n]);
}

beforeAll(async () => {
  servers = await startIngestServers("ingest_idempotency", { INGEST_TOKEN: TEST_INGEST_TOKEN }, { now: () => NOW });
  await servers.client("grpc").upsertUsers({
    users: Array.from({ length: 12 }, (_, i) => ({
      id: `u${i}`,
      affiliateId: i < 8 ? "aff-1" : "aff-2",
      username: `user ${i}`,
      avatar: "",
    })),
  });
  for (let n = 0; n < POOL; n++) {
    // Few users and hours: the callers' upserts fight over the same rollup rows.
    const amount =
      n === 7 ? "12.50000000" : `${(n * 7919) % 1000}.${String((n * 104_729 + 13) % 100_000_000).padStart(8, "0")}`;
    pool.push(wager(`w-${n}`, `u${(n * 31) % 12}`, amount, OCT_1 + ((n * 7_777) % (20 * 3600))));
  }
});

afterAll(async () => {
  await servers?.close();
});

describe("four concurrent callers with overlapping batches", () => {
  const protocols: IngestProtocol[] = ["grpc", "connect", "grpc-web", "grpc"];
  const answers: { sent: number; recorded: number; duplicates: number }[] = [];

  beforeAll(async () => {
    await Promise.all(
      protocols.map(async (protocol, caller) => {
        const client = servers.client(protocol);
        // Each caller sends the whole pool once, from its own starting point, plus 40 repeats per batch.
        for (let b = 0; b < POOL / BATCH; b++) {
          const start = (caller * 750 + b * BATCH) % POOL;
          const batch = Array.from({ length: BATCH }, (_, i) => pool[(start + i) % POOL] as IngestWager);
          for (let r = 0; r < 40; r++) batch.push(batch[(r * 13 + caller) % BATCH] as IngestWager);
          const answer = await client.recordWagers({ wagers: batch });
          answers.push({ sent: batch.length, recorded: answer.recorded, duplicates: answer.duplicates });
        }
      }),
    );
  }, 60_000);

  it("records every wager exactly once and counts every other copy as a duplicate", () => {
    expect(answers).toHaveLength(24);
    for (const a of answers) expect(a.recorded + a.duplicates).toBe(a.sent);
    const sent = answers.reduce((n, a) => n + a.sent, 0);
    expect(sent).toBe(4 * (POOL + 6 * 40));
    expect(answers.reduce((n, a) => n + a.recorded, 0)).toBe(POOL);
    expect(answers.reduce((n, a) => n + a.duplicates, 0)).toBe(sent - POOL);
  });

  it("has exact totals, and every rollup equals the raw wagers", async () => {
    expect(await userTotals()).toEqual(expectedTotals(pool));
    const report = await verifyRollups(servers.database.db.read);
    expect({ mismatches: report.mismatchCount, wagers: report.wagers }).toEqual({ mismatches: 0, wagers: POOL });
  });

  it("answers a complete re-send with duplicates only", async () => {
    const before = await snapshot();
    const answer = await servers.client("grpc").recordWagers({ wagers: pool.slice(0, 1000) });
    expect(answer).toMatchObject({ recorded: 0, duplicates: 1000 });
    expect(await snapshot()).toBe(before);
  });
});

describe("a re-sent id with different content", () => {
  it.each([
    ["amount", { amount: "1.00000001" }],
    ["user", { userId: "u0" }],
    ["time", { placedAt: BigInt(OCT_1 + 1) }],
  ])("refuses the whole call when the %s differs and writes nothing", async (_what, change) => {
    const before = await snapshot();
    const original = pool[5] as IngestWager;
    const fresh = Array.from({ length: 10 }, (_, i) => wager(`new-${i}`, "u1", "2.5", OCT_1));
    const error = await refusal(
      servers
        .client("connect")
        .recordWagers({ wagers: [...fresh, { ...original, ...change }, pool[6] as IngestWager] }),
    );
    expect(error.code).toBe(Code.AlreadyExists);
    expect(error.rawMessage).toBe(
      'wagers already recorded with different content "w-5". A wager id must never be reused. Nothing was written',
    );
    expect(await snapshot()).toBe(before);
  });

  it("treats the same amount written differently as the same content", async () => {
    const original = pool[7] as IngestWager;
    expect(original.amount).toBe("12.50000000");
    const answer = await servers.client("grpc").recordWagers({
      wagers: [
        { ...original, amount: "12.5" },
        { ...original, amount: "12.50" },
      ],
    });
    expect(answer).toMatchObject({ recorded: 0, duplicates: 2 });
  });

  it("refuses an id repeated with different content inside one call", async () => {
    const before = await snapshot();
    const error = await refusal(
      servers.client("grpc").recordWagers({
        wagers: [wager("twice", "u1", "1", OCT_1), wager("ok", "u1", "1", OCT_1), wager("twice", "u1", "2", OCT_1)],
      }),
    );
    expect(error.code).toBe(Code.AlreadyExists);
    expect(error.rawMessage).toContain('"twice"');
    expect(await snapshot()).toBe(before);
  });

  it("lets exactly one of two concurrent callers record a contested id", async () => {
    const first = servers.client("grpc");
    const second = servers.client("connect");
    for (let i = 0; i < 15; i++) {
      const results = await Promise.allSettled([
        first.recordWagers({ wagers: [wager(`race-${i}`, "u2", "1", OCT_1)] }),
        second.recordWagers({ wagers: [wager(`race-${i}`, "u2", "2", OCT_1)] }),
      ]);
      const won = results.flatMap((r, caller) => (r.status === "fulfilled" ? [[caller, r.value.recorded]] : []));
      const lost = results.flatMap((r) => (r.status === "rejected" ? [ConnectError.from(r.reason).code] : []));
      expect(won).toHaveLength(1);
      expect(won[0]?.[1]).toBe(1);
      expect(lost).toEqual([Code.AlreadyExists]);
      const [rows] = await servers.database.db.read.query<RowDataPacket[]>(
        "SELECT amount FROM wagers WHERE external_id = ?",
        [`race-${i}`],
      );
      expect(rows).toEqual([{ amount: won[0]?.[0] === 0 ? "1.00000000" : "2.00000000" }]);
    }
    const report = await verifyRollups(servers.database.db.read);
    expect(report.mismatchCount).toBe(0);
  });
});
