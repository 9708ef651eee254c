/**
 * Query-layers scenario: where a small affiliate's board spends the time the naive GROUP BY does not. The same
 * board (the median affiliate of the query bench's seed, weighted, N = 10) four ways, in alternated rounds: the
 * naive statement (test/support/naive-leaderboard.ts), the service's one statement over raw wagers called
 * directly, the standings (retention guard, period pieces, plan choice, then that statement), and the whole
 * Leaderboard call the query bench times (cache off); then the in-process steps alone.
 *
 *   npm run bench -- query-layers [--wagers 5000000] [--months 12] [--calls 5000] [--rounds 3]
 */
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { Leaderboard } from "../src/boards/core/leaderboard.js";
import { smallBoardPieces } from "../src/boards/core/small-board-plan.js";
import { keyedTopUsersFromBuckets } from "../src/boards/sql/leaderboard-queries.js";
import { mariadbStandings } from "../src/boards/sql/standings-store.js";
import { AffiliateSizes } from "../src/boards/sql/threshold-board.js";
import { bucketRanges } from "../src/ingest/sql/period-buckets.js";
import { guardedPeriods, HorizonWatch } from "../src/ingest/sql/retention-horizon.js";
import { topUsersFromRawWagers } from "../test/support/naive-leaderboard.js";
import { databaseUrl, describeDataset, ensureSeeded } from "./query.js";
import { fmt, machineDescription, table } from "./support.js";

async function microsPerCall(calls: number, call: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < Math.min(200, calls); i++) await call();
  const started = performance.now();
  for (let i = 0; i < calls; i++) await call();
  return ((performance.now() - started) * 1000) / calls;
}

export async function runQueryLayersBench(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      wagers: { type: "string", default: "5000000" },
      months: { type: "string", default: "12" },
      calls: { type: "string", default: "5000" },
      rounds: { type: "string", default: "3" },
    },
  });
  const wagers = Number(values.wagers);
  const months = Number(values.months);
  const calls = Number(values.calls);
  const rounds = Number(values.rounds);
  const url = databaseUrl(wagers, months);
  await ensureSeeded(url, wagers, months);
  const data = await describeDataset(url);
  try {
    const median = data.affiliates[1];
    if (median === undefined) throw new Error("no affiliate in the data set");
    // The query bench's "month misaligned": a partial hour at each end, three pieces, answered from raw wagers.
    const start = data.month.start + 1837;
    const end = data.month.end - 911;
    const pool = data.db.read;
    const standings = mariadbStandings(pool);
    const leaderboard = new Leaderboard({
      standings,
      defaultAvatarUrl: "https://x.example/a.png",
      cacheTtlMs: 0,
      now: () => data.month.end + 86_400 * 40,
    });
    const raw = [{ source: "raw" as const, sign: 1 as const, from: start, to: end + 1 }];
    const ways: [string, () => Promise<unknown>][] = [
      ["naive GROUP BY (one statement)", () => topUsersFromRawWagers(pool, median.id, start, end, 10, "weighted")],
      [
        "the service's raw statement, called directly",
        () =>
          keyedTopUsersFromBuckets(pool, {
            affiliateId: median.id,
            ranges: raw,
            limit: 10,
            rankBy: "weighted",
            weighted: "weighted_sum",
            scope: { kind: "small", months: new Map(), rawHeldFrom: 0 },
          }),
      ],
      [
        "the standings (guard, pieces, plan, statement)",
        () => standings.topUsers(median.id, start, end, 10, "weighted"),
      ],
      [
        "the Leaderboard call (what the query bench times)",
        () => leaderboard.topWagersForPeriod(median.id, { start, end, numUsers: 10, rankBy: "weighted" }),
      ],
    ];
    const loadBefore = loadavg()
      .map((l) => l.toFixed(2))
      .join(", ");
    const measured = new Map<string, number[]>(ways.map(([name]) => [name, []]));
    for (let round = 0; round < rounds; round++) {
      for (const [name, call] of ways) measured.get(name)?.push(await microsPerCall(calls, call));
    }
    const periods = guardedPeriods(new HorizonWatch(pool));
    const profile = (await new AffiliateSizes(pool).of(median.id)).months ?? new Map();
    const steps: [string, () => unknown][] = [
      ["the period's pieces (bucketRanges)", () => bucketRanges(start, end)],
      ["the retention guard and pieces (guardedPeriods)", () => periods(median.id, start, end)],
      ["the plan's estimate (smallBoardPieces)", () => smallBoardPieces(profile, bucketRanges(start, end), 0)],
    ];
    const stepRows: string[][] = [];
    for (const [name, step] of steps) stepRows.push([name, fmt(await microsPerCall(100_000, async () => step()))]);
    const middleOf = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
    process.stdout.write(
      [
        "",
        `command: npm run bench -- query-layers --wagers ${wagers} --months ${months} --calls ${calls} --rounds ${rounds}`,
        `machine: ${await machineDescription(url)}`,
        `board: affiliate ${median.id} (${median.users} users), weighted, N = 10, [${start}, ${end}] (month misaligned)`,
        `load average before: ${loadBefore}; after: ${loadavg()
          .map((l) => l.toFixed(2))
          .join(", ")}`,
        "",
        table(
          ["way", ...Array.from({ length: rounds }, (_, r) => `round ${r + 1} µs/call`), "median"],
          ways.map(([name]) => {
            const xs = measured.get(name) ?? [];
            return [name, ...xs.map((x) => fmt(x, 1)), fmt(middleOf(xs), 1)];
          }),
        ),
        "",
        table(["in-process step alone", "µs/call"], stepRows),
        "",
      ].join("\n"),
    );
  } finally {
    await data.db.close();
  }
}
