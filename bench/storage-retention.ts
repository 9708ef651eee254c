/**
 * The storage scenario's retention section (issue 38): what pruning raw wagers and hourly rows
 * (WAGER_RETENTION_DAYS, HOURLY_ROLLUP_RETENTION_DAYS) deletes on the seeded data set, how fast, what every table
 * costs per wager afterwards and after OPTIMIZE TABLE gives the freed pages back, and whether boards of whole
 * months and days before the horizon answer exactly as before. It deletes data: it runs on the storage scenario's
 * own database, never the query bench's.
 */
import type { RowDataPacket } from "mysql2/promise";
import { Registry } from "prom-client";
import { mariadbStandings } from "../src/boards/sql/standings-store.js";
import { startRetention } from "../src/jobs/retention.js";
import type { Database } from "../src/platform/database/database.js";
import { createLogger } from "../src/platform/logger.js";
import { DAY, dayStart, monthStart } from "../src/values/calendar.js";
import { fmt } from "./support.js";

export interface RetentionChoice {
  readonly wagerDays: number;
  readonly hourlyDays: number;
}

/** Boards that must answer the same before and after: whole months and days of the largest affiliates. */
async function sampleBoards(db: Database, end: number): Promise<string[]> {
  const [largest] = await db.read.query<RowDataPacket[]>(
    "SELECT affiliate_id, COUNT(*) AS n FROM users GROUP BY affiliate_id ORDER BY n DESC, affiliate_id LIMIT 3",
  );
  const standings = mariadbStandings(db.read);
  const firstMonth = monthStart(end - 330 * DAY);
  const periods: [number, number][] = [
    [firstMonth, monthStart(firstMonth + 40 * DAY) - 1],
    [dayStart(end - 200 * DAY), dayStart(end - 190 * DAY) - 1],
  ];
  const out: string[] = [];
  for (const row of largest) {
    for (const [start, stop] of periods) {
      for (const rankBy of ["wagered", "weighted"] as const) {
        out.push(JSON.stringify(await standings.topUsers(Number(row.affiliate_id), start, stop, 100, rankBy)));
      }
    }
  }
  return out;
}

/**
 * Runs the retention job as the service would, at the day after the last wager: a first run records the horizons,
 * then runs a minute apart delete until nothing is left below them. Returns what it printed.
 */
export async function pruneAsTheServiceWould(db: Database, choice: RetentionChoice): Promise<string> {
  const [last] = await db.write.query<RowDataPacket[]>("SELECT MAX(placed_at) AS t FROM wagers");
  const now = dayStart(Number(last[0]?.t)) + DAY;
  const boardsBefore = await sampleBoards(db, now);
  const job = startRetention(
    { deliveredDays: 0, failedDays: 0, everySeconds: 0, ...choice },
    db,
    new Registry(),
    createLogger("silent"),
  );
  const first = await job.runOnce(now * 1000);
  const started = Date.now();
  let runs = 0;
  const deleted = { wagers: 0, hourly: 0 };
  for (;;) {
    runs += 1;
    const run = await job.runOnce((now + 60 + runs) * 1000);
    deleted.wagers += run?.wagers?.wagers ?? 0;
    deleted.hourly += run?.wagers?.hourly ?? 0;
    if (run?.wagers === undefined || (run.wagers.wagers === 0 && run.wagers.hourly === 0)) break;
  }
  const seconds = (Date.now() - started) / 1000;
  await job.stop();
  const same = JSON.stringify(await sampleBoards(db, now)) === JSON.stringify(boardsBefore);
  const horizons = first?.wagers?.horizons;
  return (
    `retention at ${new Date(now * 1000).toISOString().slice(0, 10)} with WAGER_RETENTION_DAYS ${choice.wagerDays}` +
    ` and HOURLY_ROLLUP_RETENTION_DAYS ${choice.hourlyDays}: horizons wagers ${horizons?.wagers} hourly ${horizons?.hourly}\n` +
    `deleted ${deleted.wagers.toLocaleString("en-US")} wagers and ${deleted.hourly.toLocaleString("en-US")} hourly rows` +
    ` in ${runs} runs, ${fmt(seconds, 1)} s (${fmt((deleted.wagers + deleted.hourly) / seconds, 0)} rows/s)\n` +
    `${boardsBefore.length} boards of whole months and days before the horizon (3 largest affiliates, both rankings)` +
    ` ${same ? "identical" : "DIFFERENT"} before and after\n`
  );
}
