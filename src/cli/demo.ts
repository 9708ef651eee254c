/**
 * `npm run demo`: a newcomer's first run. Loads a small deterministic demo
 * data set (once), creates a fresh demo key and an overlay key, a monthly
 * demo race with prizes (once) and last month's race, finished (once), serves
 * (signing by default: the server makes the signing key), waits until last
 * month's result is frozen, signed and in a checkpoint of the results log,
 * prints its verify link (a green check at once), the race overlay's URL and
 * ready-to-paste curl and buf curl commands, and keeps wagers arriving so the
 * board and the race move.
 */

import { randomInt } from "node:crypto";
import { parseArgs } from "node:util";
import type { RowDataPacket } from "mysql2/promise";
import { mariadbStandings } from "../boards/sql/standings-store.js";
import type { SeedPlan } from "../ingest/core/seed-data.js";
import { WagerIngest } from "../ingest/core/wager-ingest.js";
import { ensureAffiliate, usersOfAffiliate } from "../ingest/sql/affiliates.js";
import { mariadbIngest } from "../ingest/sql/ingest-store.js";
import { KeyAdmin } from "../keys/core/key-admin.js";
import { mariadbApiKeys } from "../keys/sql/key-stores.js";
import { type Config, loadConfig } from "../platform/config.js";
import type { Database } from "../platform/database/database.js";
import { openDatabase } from "../platform/database/database.js";
import { silentLogger } from "../platform/logger.js";
import { serve } from "../server.js";
import { createRaces } from "../services/races.js";
import { resultSigner } from "../services/signing.js";
import { halfMonthOf, monthStart, nextMonthStart } from "../values/calendar.js";
import { UsageError, withDatabase } from "./common.js";
import { type SeedReport, seedDatabase } from "./seed.js";
import { RUN } from "./usage.js";

export const DEMO_AFFILIATE = "demo-affiliate";

/** The demo carries a few voided wagers, as a real casino's data does (1 in 1000). */
const DEMO_VOIDS = 1;

/**
 * The demo data set: `seed` at a small size (a few seconds), ending now, so the
 * current half-month has wagers. The largest of its affiliates is the one the
 * demo key reads.
 */
export function demoSeedPlan(nowSeconds: number): SeedPlan {
  return {
    seed: 20241202,
    affiliates: 4,
    users: 160,
    wagers: 20_000,
    months: 2,
    end: nowSeconds,
    prefix: "demo-",
    affiliateId: (rank) => (rank === 1 ? DEMO_AFFILIATE : `${DEMO_AFFILIATE}-${rank}`),
  };
}

/** Loads the demo data set ending at `end` (Unix seconds), as `demo` does with `end` = now. */
export function loadDemoData(db: Database, end: number): Promise<SeedReport> {
  return seedDatabase(db, demoSeedPlan(end), { method: "record", voidPerMille: DEMO_VOIDS });
}

export async function runDemo(args: string[]): Promise<void> {
  const config = demoConfig(args);
  // The demo always prepares its database, whatever MIGRATE_ON_START says.
  const { keys, lastMonth } = await withDatabase(
    async (db) => {
      await loadDemoDataOnce(db);
      const issued = await issueDemoKeys(db);
      await ensureDemoRace(db, config);
      return { keys: issued, lastMonth: await ensureLastMonthRace(db, config) };
    },
    { config, create: true, migrate: true },
  );
  // The server makes and activates the signing key at its first start, then its clock freezes last month's race.
  const running = await serve(config);
  const base = `http://localhost:${running.port}`;
  const verified = config.signing === "off" ? false : await inTheLog(`http://127.0.0.1:${running.port}`, lastMonth);
  const trickle = await startWagerTrickle(config.databaseUrl);
  process.stdout.write(demoWelcome(base, config.basePath, keys, { raceId: lastMonth, verified }));
  const stop = () => {
    trickle.stop();
    running.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

/** The settings, with `--port` over PORT. */
function demoConfig(args: string[]): Config {
  let values: { port?: string | undefined };
  try {
    ({ values } = parseArgs({ args, options: { port: { type: "string" } } }));
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  return loadConfig(values.port === undefined ? process.env : { ...process.env, PORT: values.port });
}

/** Loads the demo data set unless the demo affiliate has users already (an earlier demo loaded it). */
async function loadDemoDataOnce(db: Database): Promise<void> {
  if ((await usersOfAffiliate(db.read, DEMO_AFFILIATE)) !== 0) return;
  const plan = demoSeedPlan(Math.floor(Date.now() / 1000));
  process.stderr.write(
    `Loading demo data (${RUN} seed with --seed ${plan.seed} --affiliates ${plan.affiliates} ` +
      `--users ${plan.users} --wagers ${plan.wagers} --months ${plan.months} --void-per-mille ${DEMO_VOIDS})...\n`,
  );
  const report = await loadDemoData(db, plan.end);
  process.stderr.write(`Loaded ${report.users} users and ${report.wagers} wagers (${report.voided} voided).\n`);
}

/**
 * A new secret key for the demo affiliate, and an overlay-only publishable key (no origins: only the
 * service's own /board page uses it). Through KeyAdmin, as every key change: the same rules, the change row,
 * the event.
 */
async function issueDemoKeys(db: Database): Promise<{ secret: string; overlay: string }> {
  const issued = await new KeyAdmin(mariadbApiKeys(db.write)).create({
    affiliateId: DEMO_AFFILIATE,
    label: "demo",
  });
  if (issued.kind !== "issued") throw new Error(`the demo key was refused: ${JSON.stringify(issued)}`);
  const overlay = await new KeyAdmin(mariadbApiKeys(db.write)).create({
    affiliateId: DEMO_AFFILIATE,
    label: "demo overlay",
    publishable: true,
  });
  if (overlay.kind !== "issued") throw new Error(`the overlay key was refused: ${JSON.stringify(overlay)}`);
  return { secret: issued.secret, overlay: overlay.secret };
}

/**
 * What the demo prints once it runs: the keys, last month's result's verify link, and commands to try over REST,
 * gRPC, the browser, the overlay.
 */
function demoWelcome(
  base: string,
  basePath: string,
  key: { secret: string; overlay: string },
  lastMonth: { raceId: string; verified: boolean },
): string {
  const period = halfMonthOf(Math.floor(Date.now() / 1000));
  const body = JSON.stringify({ startTimestamp: period.start, endTimestamp: period.end, numUsers: 10 });
  return [
    "",
    `topwagers demo is running on ${base} (Ctrl-C to stop).`,
    "",
    `Demo API key for affiliate "${DEMO_AFFILIATE}" (shown once):`,
    `  ${key.secret}`,
    "",
    "Top 10 of the current half-month over REST:",
    `  curl -s ${base}${basePath}/top-affiliate-wagers-by-period \\`,
    `    -H 'Authorization: Bearer ${key.secret}' -H 'Content-Type: application/json' \\`,
    `    -d '${body}'`,
    "",
    "The same over gRPC (buf curl reads the API through server reflection):",
    `  npx buf curl --protocol grpc --http2-prior-knowledge \\`,
    `    -H 'Authorization: Bearer ${key.secret}' \\`,
    `    -d '${body}' \\`,
    `    ${base}/topwagers.v1.TopWagersService/GetTopAffiliateWagersByPeriod`,
    "",
    `Or try it in a browser: ${base}/docs (Authorize with the key above, then Try it out).`,
    "",
    lastMonth.verified
      ? "Last month's race is over: its result is signed and in the results log. Check it in a browser (a green check):"
      : "Last month's race is over; its result is not signed and logged yet (SIGNING=off, or still on its way):",
    `  ${base}/verify/${lastMonth.raceId}`,
    "",
    `The demo race "${DEMO_RACE_TITLE}" (slug ${DEMO_RACE_SLUG}, a new race every month, prizes for the top 5):`,
    `  curl -s ${base}${basePath}/races/${DEMO_RACE_SLUG} -H 'Authorization: Bearer ${key.secret}'`,
    "",
    "Its live overlay: paste this URL into OBS as a Browser Source (e.g. 800×480), or open it in a browser:",
    `  ${base}${basePath}/board?key=${key.overlay}&race=${DEMO_RACE_SLUG}&theme=transparent`,
    "",
    "A few wagers arrive every second, so the board and the race move.",
    "",
  ].join("\n");
}

export const DEMO_RACE_SLUG = "monthly";
const DEMO_RACE_TITLE = "$1,000 monthly race";
const DEMO_RACE_PRIZES = ["500.00", "250.00", "125.00", "75.00", "50.00"];

/**
 * The demo's monthly race series (UTC months, from this month), created once: a later demo finds
 * the slug taken and keeps the series it made.
 */
async function ensureDemoRace(db: Database, config: Config): Promise<void> {
  const now = Math.floor(Date.now() / 1000);
  const races = createRaces({ database: db, config, signer: resultSigner(config, db, silentLogger) });
  const affiliateId = await ensureAffiliate(db.write, DEMO_AFFILIATE);
  const created = await races.create(
    affiliateId,
    {
      slug: DEMO_RACE_SLUG,
      title: DEMO_RACE_TITLE,
      startTimestamp: monthStart(now),
      endTimestamp: nextMonthStart(now) - 1,
      prizes: DEMO_RACE_PRIZES,
      currency: "USD",
      repeat: "monthly",
      timeZone: "UTC",
      reviewSeconds: 3_600,
    },
    [],
    { kind: "cli", id: "demo" },
  );
  if (created.kind !== "ok" && created.kind !== "slug-taken") {
    throw new Error(`the demo race was refused: ${JSON.stringify(created)}`);
  }
}

/**
 * Last month's race (UTC), a one-off made as history (allowPast, no review), so the server's clock freezes it at
 * its first tick: signed and logged, a result to check at once. Made once a month: a later demo finds its slug and
 * answers the same race. Its id.
 */
async function ensureLastMonthRace(db: Database, config: Config): Promise<string> {
  const start = monthStart(monthStart(Math.floor(Date.now() / 1000)) - 1);
  const month = new Date(start * 1000).toISOString().slice(0, 7);
  const slug = `monthly-${month}`;
  const races = createRaces({ database: db, config, signer: resultSigner(config, db, silentLogger) });
  const affiliateId = await ensureAffiliate(db.write, DEMO_AFFILIATE);
  const name = new Date(start * 1000).toLocaleString("en", { month: "long", year: "numeric", timeZone: "UTC" });
  const definition = {
    ...{ slug, title: `${DEMO_RACE_TITLE} (${name})`, startTimestamp: start, endTimestamp: nextMonthStart(start) - 1 },
    ...{ prizes: DEMO_RACE_PRIZES, currency: "USD", repeat: "none" as const, timeZone: "UTC", reviewSeconds: 0 },
  };
  const created = await races.create(affiliateId, definition, [], { kind: "cli", id: "demo" }, true);
  if (created.kind === "ok") return created.value.race.id;
  const found = created.kind === "slug-taken" ? await races.get(affiliateId, slug) : created;
  if (found.kind !== "ok") throw new Error(`last month's demo race was refused: ${JSON.stringify(found)}`);
  return found.value.race.id;
}

/** How long the demo waits for last month's result to be frozen, signed and in a checkpoint of the log. */
const VERIFIED_WITHIN_MS = 30_000;

/** Whether race `raceId`'s signed result, with its inclusion proof, is answered by the server at `base` in time. */
async function inTheLog(base: string, raceId: string): Promise<boolean> {
  for (const until = Date.now() + VERIFIED_WITHIN_MS; Date.now() < until; ) {
    const answer = await fetch(`${base}/verify/${raceId}/signed`).catch(() => undefined);
    if (answer?.ok === true && ((await answer.json()) as { log?: { checkpoint?: unknown } }).log?.checkpoint) {
      return true;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return false;
}

/** How many of the month's leaders the demo's wagers go to: the race visibly moves (ranks swap, prizes change). */
const TRICKLE_USERS = 8;

/** The demo affiliate's leaders this month (the race's contenders), or its first users early in a month. */
async function trickleUsers(db: Database): Promise<string[]> {
  const now = Math.floor(Date.now() / 1000);
  const affiliateId = await ensureAffiliate(db.write, DEMO_AFFILIATE);
  const leaders = await mariadbStandings(db.read).topUsers(affiliateId, monthStart(now), now, TRICKLE_USERS, "wagered");
  if (leaders.length >= 2) return leaders.map((row) => row.userExternalId);
  const [rows] = await db.read.query<RowDataPacket[]>(
    `SELECT u.external_id FROM users u JOIN affiliates a ON a.id = u.affiliate_id
      WHERE a.external_id = ? ORDER BY u.id LIMIT ?`,
    [DEMO_AFFILIATE, TRICKLE_USERS],
  );
  return rows.map((row) =>
    Buffer.isBuffer(row.external_id) ? row.external_id.toString("utf8") : String(row.external_id),
  );
}

/** How often the demo records a few wagers, and how many at most each time. */
const TRICKLE_MS = 1_000;
const TRICKLE_MAX_WAGERS = 3;

/**
 * Records a few wagers a second for the demo affiliate's users, as the casino's pipeline would
 * (through the ingest rules), so the board and the race move while the demo runs.
 */
async function startWagerTrickle(databaseUrl: string): Promise<{ stop(): void }> {
  const db = await openDatabase({ url: databaseUrl, poolSize: 1 });
  const users = await trickleUsers(db);
  const ingest = new WagerIngest(mariadbIngest(db.write));
  let sequence = 0;
  const runId = Date.now().toString(36);
  let busy = false;
  const timer = setInterval(() => {
    if (busy || users.length === 0) return;
    busy = true;
    const now = Math.floor(Date.now() / 1000);
    const wagers = Array.from({ length: 1 + randomInt(TRICKLE_MAX_WAGERS) }, () => ({
      id: `demo-live-${runId}-${++sequence}`,
      userId: users[randomInt(users.length)] as string,
      // Whole cents from integers: no amount text comes from a float.
      amount: `${1 + randomInt(400)}.${String(randomInt(100)).padStart(2, "0")}`,
      placedAt: BigInt(now),
    }));
    ingest
      .recordWagers(wagers)
      .catch((error: unknown) => process.stderr.write(`demo wagers not recorded: ${String(error)}\n`))
      .finally(() => {
        busy = false;
      });
  }, TRICKLE_MS);
  return {
    stop() {
      clearInterval(timer);
      void db.close();
    },
  };
}
