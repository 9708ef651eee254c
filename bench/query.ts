/**
 * Query scenario: cold (cache off) latency of the bucketed read path, ranked
 * by the plain and by the weighted total, against the naive GROUP BY over raw
 * wagers with each wager's weight applied, on the research-sized data set, in
 * the same run; and the same period at two data sizes to show cost follows
 * active users, not wagers. Each board is timed twice in the same run: `rollup`,
 * the plan that sums every user's rows of the period (forced), and `auto`, the
 * plan the service picks (the threshold plan for 3 whole months or more once
 * migration 24 is recorded); `plan` says which plan answered the auto runs.
 *
 *   npm run bench -- query [--wagers 50000000] [--compare-wagers 5000000] [--runs 20] [--naive-runs 5]
 *                          [--periods all|long] [--months 12]
 *
 * `--periods long`: only the month and the long periods (12 months aligned and misaligned, all time).
 *
 * Data is generated with `npm run cli -- seed` into topwagers_bench_<size>
 * databases, once; later runs reuse them.
 */
import { spawn } from "node:child_process";
import { loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import mysql from "mysql2/promise";
import { Leaderboard } from "../src/boards/core/leaderboard.js";
import { mariadbStandings } from "../src/boards/sql/standings-store.js";
import { connectionOptions, type Database, openDatabase } from "../src/platform/database/database.js";
import { type BoardPlan, boardPlansTaken } from "../src/values/board-plans.js";
import { EARLIEST_PERIOD_START } from "../src/values/calendar.js";
import { topUsersFromRawWagers } from "../test/support/naive-leaderboard.js";
import { fmt, machineDescription, percentile, table } from "./support.js";

const SERVER_URL = process.env.BENCH_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/topwagers_bench";

export function databaseUrl(wagers: number, months = 12): string {
  const url = new URL(SERVER_URL);
  const size = wagers >= 1e6 && wagers % 1e6 === 0 ? `${wagers / 1e6}m` : String(wagers);
  // 12 months (the research data set's span) keeps the name every earlier run seeded.
  url.pathname = `/topwagers_bench_${size}${months === 12 ? "" : `_${months}mo`}`;
  return url.toString();
}

/** Seeds the database for this size unless a previous run finished seeding it. */
export async function ensureSeeded(url: string, wagers: number, months = 12): Promise<void> {
  const { database, ...server } = connectionOptions(url);
  const admin = await mysql.createConnection(server);
  try {
    const [done] = await admin.query<mysql.RowDataPacket[]>(
      "SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = ? AND table_name = 'bench_seeded'",
      [database],
    );
    if (Number(done[0]?.n) > 0) {
      process.stderr.write(`reusing ${database} (seeded by an earlier run)\n`);
      return;
    }
    await admin.query(`DROP DATABASE IF EXISTS ${mysql.escapeId(database)}`);
  } finally {
    await admin.end();
  }
  const cli = join(new URL(".", import.meta.url).pathname, "../src/cli/main.js");
  const started = Date.now();
  await new Promise<void>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        ...[cli, "seed", "--seed", "42", "--wagers", String(wagers), "--affiliates", "2000"],
        ...["--months", String(months), "--end", "1795323600"],
      ],
      {
        env: { ...process.env, DATABASE_URL: url },
        stdio: ["ignore", "inherit", "inherit"],
      },
    );
    child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`seed exited with ${code}`))));
  });
  process.stderr.write(`seeded ${wagers} wagers in ${fmt((Date.now() - started) / 1000, 0)} s\n`);
  const db = await openDatabase({ url, poolSize: 1 });
  await db.write.query("CREATE TABLE bench_seeded (seeded_at INT UNSIGNED NOT NULL)");
  await db.write.query("INSERT INTO bench_seeded VALUES (UNIX_TIMESTAMP())");
  await db.close();
}

interface Dataset {
  readonly db: Database;
  readonly affiliates: { readonly name: string; readonly id: number; readonly users: number }[];
  /** Start of the last complete calendar month in the data. */
  readonly month: { readonly start: number; readonly end: number };
}

export async function describeDataset(url: string): Promise<Dataset> {
  const db = await openDatabase({ url, poolSize: 2, queryTimeoutMs: 600_000 });
  const [sizes] = await db.read.query<mysql.RowDataPacket[]>(
    "SELECT affiliate_id, COUNT(*) AS n FROM users GROUP BY affiliate_id ORDER BY n DESC, affiliate_id",
  );
  const pick = (index: number, name: string) => {
    const row = sizes[Math.min(sizes.length - 1, Math.max(0, index))];
    return { name, id: Number(row?.affiliate_id), users: Number(row?.n) };
  };
  const [range] = await db.read.query<mysql.RowDataPacket[]>("SELECT MAX(bucket) AS last FROM wager_monthly");
  const lastMonth = Number(range[0]?.last);
  const end = lastMonth; // the month holding the newest data may be partial: use the one before it
  const startDate = new Date(end * 1000);
  const start = Date.UTC(startDate.getUTCFullYear(), startDate.getUTCMonth() - 1, 1) / 1000;
  return {
    db,
    affiliates: [pick(0, "largest"), pick(Math.floor(sizes.length / 2), "median"), pick(sizes.length - 1, "small")],
    month: { start, end: end - 1 },
  };
}

interface Shape {
  readonly name: string;
  readonly start: number;
  readonly end: number;
}

function shapes(month: { start: number; end: number }, periods = "all"): Shape[] {
  const d = new Date(month.start * 1000);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  const at = (monthOffset: number, day: number) => Date.UTC(y, m + monthOffset, day) / 1000;
  const aligned: Shape[] = [
    { name: "day", start: at(0, 10), end: at(0, 11) - 1 },
    { name: "half-month", start: at(0, 16), end: at(1, 1) - 1 },
    { name: "month", start: month.start, end: month.end },
    { name: "12 months", start: at(-11, 1), end: month.end },
  ];
  // Worst case for the edges: partial hours at both ends.
  const misaligned = aligned.map((s) => ({ name: `${s.name} misaligned`, start: s.start + 1837, end: s.end - 911 }));
  // All time: from the earliest start a period may have to the data's last hour (the seed's window ends 22 days
  // into the month after `month`).
  const allTime = { name: "all time", start: EARLIEST_PERIOD_START, end: at(1, 22) + 5 * 3600 - 1 };
  const every = [...aligned.flatMap((s, i) => [s, misaligned[i] as Shape]), allTime];
  const long = ["month", "month misaligned", "12 months", "12 months misaligned", "all time"];
  return periods === "long" ? every.filter((s) => long.includes(s.name)) : every;
}

/** The plan that answered most of the boards counted since `before` (boardPlansTaken). */
function planSince(before: Readonly<Record<BoardPlan, number>>): string {
  const now = boardPlansTaken();
  const counts = (Object.keys(now) as BoardPlan[]).map((plan) => [plan, now[plan] - before[plan]] as const);
  return counts
    .filter(([, n]) => n > 0)
    .map(([plan, n]) => `${plan}${counts.filter(([, m]) => m > 0).length > 1 ? ` ${n}` : ""}`)
    .join(", ");
}

async function timeIt(runs: number, call: () => Promise<unknown>): Promise<number[]> {
  await call(); // warm-up, not counted
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await call();
    samples.push(performance.now() - started);
  }
  return samples.sort((a, b) => a - b);
}

export async function runQueryBench(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      wagers: { type: "string", default: "50000000" },
      "compare-wagers": { type: "string", default: "5000000" },
      runs: { type: "string", default: "20" },
      "naive-runs": { type: "string", default: "5" },
      periods: { type: "string", default: "all" },
      // The seed's span in calendar months, ending in November 2026: 24 makes "all time" (from 2 December 2024) whole.
      months: { type: "string", default: "12" },
    },
  });
  const months = Number(values.months);
  const periods = values.periods === "long" ? "long" : "all";
  const wagers = Number(values.wagers);
  const compareWagers = Number(values["compare-wagers"]);
  const runs = Number(values.runs);
  const naiveRuns = Number(values["naive-runs"]);
  const mainUrl = databaseUrl(wagers, months);
  await ensureSeeded(mainUrl, wagers, months);
  const data = await describeDataset(mainUrl);
  const leaderboard = new Leaderboard({
    standings: mariadbStandings(data.db.read),
    defaultAvatarUrl: "https://x.example/a.png",
    cacheTtlMs: 0,
    now: () => data.month.end + 86_400 * 40,
  });
  const rollupBoard = new Leaderboard({
    standings: mariadbStandings(data.db.read, undefined, { plans: "rollup" }),
    defaultAvatarUrl: "https://x.example/a.png",
    cacheTtlMs: 0,
    now: () => data.month.end + 86_400 * 40,
  });
  const rows: (string | number)[][] = [];
  const summary: Record<string, number> = {};
  // The machine is shared: the load around the run says how quiet it was.
  const loadBefore = loadavg()
    .map((l) => l.toFixed(2))
    .join(", ");
  try {
    for (const affiliate of data.affiliates) {
      for (const shape of shapes(data.month, periods)) {
        let naiveP50 = Number.NaN;
        let naiveP95 = Number.NaN;
        for (const numUsers of [10, 100]) {
          const query = { start: shape.start, end: shape.end, numUsers };
          const weightedQuery = { ...query, rankBy: "weighted" as const };
          const rollupPlain = await timeIt(runs, () => rollupBoard.topWagersForPeriod(affiliate.id, query));
          const before = boardPlansTaken();
          const plain = await timeIt(runs, () => leaderboard.topWagersForPeriod(affiliate.id, query));
          const plan = planSince(before);
          const rollupWeighted = await timeIt(runs, () => rollupBoard.topWagersForPeriod(affiliate.id, weightedQuery));
          const beforeWeighted = boardPlansTaken();
          const weighted = await timeIt(runs, () => leaderboard.topWagersForPeriod(affiliate.id, weightedQuery));
          const weightedPlan = planSince(beforeWeighted);
          if (numUsers === 10 && naiveRuns > 0) {
            const naive = await timeIt(naiveRuns, () =>
              topUsersFromRawWagers(data.db.read, affiliate.id, shape.start, shape.end, numUsers, "weighted"),
            );
            naiveP50 = percentile(naive, 50);
            naiveP95 = percentile(naive, 95);
          }
          const p50 = percentile(weighted, 50);
          summary[`${affiliate.name}:${shape.name}:${numUsers}`] = percentile(weighted, 95);
          const pair = (samples: number[]) => `${fmt(percentile(samples, 50))} / ${fmt(percentile(samples, 95))}`;
          rows.push([
            `${affiliate.name} (${affiliate.users} users)`,
            shape.name,
            numUsers,
            pair(rollupPlain),
            pair(plain),
            pair(rollupWeighted),
            pair(weighted),
            plan === weightedPlan ? plan : `${plan} / ${weightedPlan}`,
            numUsers === 10 && naiveRuns > 0 ? `${fmt(naiveP50)} / ${fmt(naiveP95)}` : "",
            numUsers === 10 && naiveRuns > 0 ? `${fmt(naiveP50 / p50, 1)}x` : "",
          ]);
        }
      }
    }
    // Same affiliate rank and periods on a 10x smaller data set: cost should follow active users, not wagers.
    const scaleRows: (string | number)[][] = [];
    if (compareWagers > 0 && compareWagers !== wagers) {
      const smallUrl = databaseUrl(compareWagers, months);
      await ensureSeeded(smallUrl, compareWagers, months);
      const small = await describeDataset(smallUrl);
      const smallBoard = new Leaderboard({
        standings: mariadbStandings(small.db.read),
        defaultAvatarUrl: "https://x.example/a.png",
        cacheTtlMs: 0,
        now: () => small.month.end + 86_400 * 40,
      });
      try {
        for (const shape of shapes(data.month, periods).filter((s) => !s.name.includes("misaligned"))) {
          const largest = data.affiliates[0];
          const smallLargest = small.affiliates[0];
          if (largest === undefined || smallLargest === undefined) continue;
          const smallShape = shapes(small.month).find((s) => s.name === shape.name) ?? shape;
          const big = await timeIt(runs, () =>
            leaderboard.topWagersForPeriod(largest.id, { start: shape.start, end: shape.end, numUsers: 10 }),
          );
          const little = await timeIt(runs, () =>
            smallBoard.topWagersForPeriod(smallLargest.id, {
              start: smallShape.start,
              end: smallShape.end,
              numUsers: 10,
            }),
          );
          const change = (p: number) =>
            `${fmt((100 * (percentile(big, p) - percentile(little, p))) / percentile(little, p), 0)}%`;
          scaleRows.push([
            shape.name,
            `${fmt(percentile(little, 50))} / ${fmt(percentile(little, 95))}`,
            `${fmt(percentile(big, 50))} / ${fmt(percentile(big, 95))}`,
            `${change(50)} / ${change(95)}`,
          ]);
        }
      } finally {
        await small.db.close();
      }
    }
    const fmtCount = (n: number) => (n >= 1e6 ? `${n / 1e6}M` : String(n));
    process.stdout.write(
      [
        "",
        `command: npm run bench -- query --wagers ${wagers} --compare-wagers ${compareWagers} --runs ${runs} --naive-runs ${naiveRuns} --periods ${periods} --months ${months}`,
        `machine: ${await machineDescription(mainUrl)}`,
        `data: ${fmtCount(wagers)} wagers (npm run cli -- seed --seed 42 --wagers ${wagers} --affiliates 2000 --months ${months} --end 1795323600); month = ${new Date(data.month.start * 1000).toISOString().slice(0, 7)}`,
        "latency p50 / p95 in ms, cache off, client and server on the same 2 cores; plain / weighted = ranked by the plain / weighted total;",
        "rollup = the plan summing every user's rows of the period (forced); auto = the plan the service picks, `plan` says which answered",
        "(each answer carries both totals); naive = one GROUP BY over raw wagers with the weight applied, ranked by weight (N=10)",
        `load average before the run: ${loadBefore}; after: ${loadavg()
          .map((l) => l.toFixed(2))
          .join(", ")}`,
        "",
        table(
          [
            "affiliate",
            "period",
            "N",
            "plain: rollup",
            "plain: auto",
            "weighted: rollup",
            "weighted: auto",
            "plan (auto)",
            "naive",
            "speed-up (weighted auto p50)",
          ],
          rows,
        ),
        "",
        ...(scaleRows.length > 0
          ? [
              `largest affiliate, N=10, plain, p50 / p95 ms at ${fmtCount(compareWagers)} vs ${fmtCount(wagers)} wagers:`,
              "",
              table(["period", `${fmtCount(compareWagers)} wagers`, `${fmtCount(wagers)} wagers`, "change"], scaleRows),
              "",
            ]
          : []),
      ].join("\n"),
    );
  } finally {
    await data.db.close();
  }
}
