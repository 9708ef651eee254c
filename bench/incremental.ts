/**
 * Incremental scenario (issue 31, item 3): what one change costs a big affiliate's board of the
 * current month, computed in full (every change recomputes the period, as before) and incrementally
 * (the held board reads only the changed users' totals by primary key), in the same run and on the
 * same changes.
 *
 *   npm run bench -- incremental [--database-url URL] [--batches 10,100,1000] [--changes 20] [--rank-by wagered|weighted]
 *
 * Each change is a RecordWagers batch of that many wagers of the affiliate's users (placed in the last
 * three days: late wagers too), followed by the change feed's poll; then each leaderboard answers the
 * month board, and the statements it sent and the time its load took are counted client-side (a pool
 * that counts), so other users of a shared server do not blur them. The answers must be equal.
 * The data: a database seeded with `npm run cli -- seed` ending now (see docs/benchmarks.md).
 */
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";
import { ChangeFeed } from "../src/boards/core/change-feed.js";
import { Leaderboard } from "../src/boards/core/leaderboard.js";
import { mariadbChanges } from "../src/boards/sql/change-store.js";
import { mariadbStandings } from "../src/boards/sql/standings-store.js";
import { WagerIngest } from "../src/ingest/core/wager-ingest.js";
import { mariadbIngest } from "../src/ingest/sql/ingest-store.js";
import { openDatabase } from "../src/platform/database/database.js";
import type { RankBy } from "../src/values/weights.js";
import { fmt, machineDescription, percentile, table } from "./support.js";

const DEFAULT_URL = "mysql://root@127.0.0.1:3306/topwagers_bench_incr";

/** A pool whose statements (query and execute, on it and on connections taken from it) are counted. */
function countingPool(pool: Pool): { pool: Pool; statements: () => number } {
  let statements = 0;
  const counted = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(object, property) {
        const value = Reflect.get(object, property) as unknown;
        if (property === "query" || property === "execute") {
          return (...args: unknown[]) => {
            statements += 1;
            return (value as (...a: unknown[]) => unknown).apply(object, args);
          };
        }
        if (property === "getConnection") {
          return async () => counted((await (value as () => Promise<PoolConnection>).apply(object)) as PoolConnection);
        }
        return typeof value === "function" ? value.bind(object) : value;
      },
    });
  return { pool: counted(pool), statements: () => statements };
}

interface Measured {
  readonly leaderboard: Leaderboard;
  readonly statements: () => number;
  readonly loadMs: number[];
  readonly perChange: number[];
}

export async function runIncrementalBench(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      "database-url": { type: "string", default: process.env.BENCH_INCREMENTAL_URL ?? DEFAULT_URL },
      batches: { type: "string", default: "10,100,1000" },
      changes: { type: "string", default: "20" },
      "rank-by": { type: "string", default: "wagered" },
    },
  });
  const url = values["database-url"];
  const rankBy = values["rank-by"] as RankBy;
  const db = await openDatabase({ url, poolSize: 4, queryTimeoutMs: 600_000 });
  const now = Math.floor(Date.now() / 1000);
  const month = currentMonth(now);
  const [biggest] = await db.read.query<RowDataPacket[]>(
    "SELECT affiliate_id, COUNT(*) AS n FROM users GROUP BY affiliate_id ORDER BY n DESC LIMIT 1",
  );
  const affiliateId = Number(biggest[0]?.affiliate_id);
  const [members] = await db.read.query<RowDataPacket[]>("SELECT external_id FROM users WHERE affiliate_id = ?", [
    affiliateId,
  ]);
  const userIds = members.map((r) => String(r.external_id));
  const [active] = await db.read.query<RowDataPacket[]>(
    "SELECT COUNT(*) AS n FROM wager_monthly WHERE affiliate_id = ? AND bucket = ?",
    [affiliateId, month.start],
  );
  const feed = new ChangeFeed(mariadbChanges(db.read), { intervalMs: 60_000 });
  const sides = { full: side(db.read, false, now), incremental: side(db.read, true, now) };
  feed.follow((changes) => {
    sides.full.leaderboard.applyChanges(changes);
    sides.incremental.leaderboard.applyChanges(changes);
  });
  feed.start();
  await feed.caughtUp();
  const ingest = new WagerIngest(mariadbIngest(db.write), { now: () => now });
  const query = { start: month.start, end: month.end, numUsers: 100, rankBy };
  for (const s of Object.values(sides)) await s.leaderboard.topWagersForPeriod(affiliateId, query);
  const rows: (string | number)[][] = [];
  let wagerNumber = 0;
  const prefix = `bench-incr-${now}-`;
  for (const size of values.batches.split(",").map(Number)) {
    for (const s of Object.values(sides)) {
      s.loadMs.splice(0);
      s.perChange.splice(0);
    }
    for (let change = 0; change < Number(values.changes); change++) {
      const batch = Array.from({ length: size }, () => {
        wagerNumber += 1;
        return {
          id: `${prefix}${wagerNumber}`,
          userId: userIds[Math.floor(Math.random() * userIds.length)] as string,
          amount: String(1 + Math.floor(Math.random() * 500)),
          placedAt: BigInt(Math.max(month.start, now - Math.floor(Math.random() * 3 * 86_400))),
        };
      });
      const outcome = await ingest.recordWagers(batch);
      if (outcome.kind !== "recorded") throw new Error(`RecordWagers: ${outcome.kind}`);
      await feed.caughtUp();
      const answers = [];
      // Alternate which side goes first, so neither always finds the pages warm.
      const order = change % 2 === 0 ? [sides.full, sides.incremental] : [sides.incremental, sides.full];
      for (const s of order) answers.push(await measure(s, affiliateId, query));
      if (JSON.stringify(answers[0]) !== JSON.stringify(answers[1])) throw new Error("the two boards differ");
    }
    for (const [mode, s] of Object.entries(sides)) rows.push(resultRow(size, mode, s));
  }
  await feed.stop();
  await db.close();
  process.stdout.write(
    [
      `incremental: ${await machineDescription(url)}; load ${loadavg()
        .map((l) => fmt(l))
        .join(" ")}`,
      `affiliate ${affiliateId}: ${userIds.length} users, ${Number(active[0]?.n)} with wagers this month; month board` +
        ` [${month.start}, ${month.end}] ranked ${rankBy}, ${values.changes} changes per batch size`,
      table(["batch", "mode", "statements/change", "load p50 ms", "load p95 ms", "load mean ms"], rows),
      `computations: full ${JSON.stringify(sides.full.leaderboard.computations)}, incremental ${JSON.stringify(sides.incremental.leaderboard.computations)}`,
      "",
    ].join("\n"),
  );
}

function side(pool: Pool, incremental: boolean, now: number): Measured {
  const counting = countingPool(pool);
  const leaderboard = new Leaderboard({
    standings: mariadbStandings(counting.pool),
    defaultAvatarUrl: "https://cdn.example.test/d.png",
    cacheTtlMs: 600_000,
    now: () => now,
    freshness: { isCurrent: () => true },
    ...(incremental ? {} : { incremental: false }),
  });
  return { leaderboard, statements: counting.statements, loadMs: [], perChange: [] };
}

async function measure(s: Measured, affiliateId: number, query: Parameters<Leaderboard["topWagersForPeriod"]>[1]) {
  const before = s.statements();
  const started = process.hrtime.bigint();
  const answer = await s.leaderboard.topWagersForPeriod(affiliateId, query);
  s.loadMs.push(Number(process.hrtime.bigint() - started) / 1e6);
  s.perChange.push(s.statements() - before);
  return answer.ranked;
}

function resultRow(size: number, mode: string, s: Measured): (string | number)[] {
  const sorted = [...s.loadMs].sort((a, b) => a - b);
  const mean = sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length);
  const statements = s.perChange.reduce((a, b) => a + b, 0) / Math.max(1, s.perChange.length);
  return [size, mode, fmt(statements, 1), fmt(percentile(sorted, 50)), fmt(percentile(sorted, 95)), fmt(mean)];
}

/** The UTC calendar month holding `now`, as an inclusive period. */
function currentMonth(now: number): { start: number; end: number } {
  const date = new Date(now * 1000);
  const start = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1) / 1000;
  const end = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1) / 1000 - 1;
  return { start, end };
}
