/**
 * `npm run demo`: a newcomer's first run. Loads a small deterministic demo
 * data set (once), creates a fresh demo key, prints ready-to-paste curl and
 * buf curl commands for the current half-month, and serves.
 */
import { parseArgs } from "node:util";
import { KeyAdmin } from "../auth/key-admin.js";
import { loadConfig } from "../config.js";
import type { SeedPlan } from "../ingest/seed-data.js";
import { serve } from "../server.js";
import { usersOfAffiliate } from "../storage/affiliates.js";
import type { Database } from "../storage/database.js";
import { mariadbApiKeys } from "../storage/stores.js";
import { halfMonthOf } from "../values/calendar.js";
import { UsageError, withDatabase } from "./common.js";
import { type SeedReport, seedDatabase } from "./seed.js";

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
  let values: { port?: string | undefined };
  try {
    ({ values } = parseArgs({ args, options: { port: { type: "string" } } }));
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const config = loadConfig(values.port === undefined ? process.env : { ...process.env, PORT: values.port });
  // The demo always prepares its database, whatever MIGRATE_ON_START says.
  const key = await withDatabase(
    async (db) => {
      if ((await usersOfAffiliate(db.read, DEMO_AFFILIATE)) === 0) {
        const plan = demoSeedPlan(Math.floor(Date.now() / 1000));
        process.stderr.write(
          `Loading demo data (npm run cli -- seed with --seed ${plan.seed} --affiliates ${plan.affiliates} ` +
            `--users ${plan.users} --wagers ${plan.wagers} --months ${plan.months} --void-per-mille ${DEMO_VOIDS})...\n`,
        );
        const report = await loadDemoData(db, plan.end);
        process.stderr.write(`Loaded ${report.users} users and ${report.wagers} wagers (${report.voided} voided).\n`);
      }
      // Through KeyAdmin, as every key change: the same rules, the change row, the event.
      const issued = await new KeyAdmin(mariadbApiKeys(db.write)).create({
        affiliateId: DEMO_AFFILIATE,
        label: "demo",
      });
      if (issued.kind !== "issued") throw new Error(`the demo key was refused: ${JSON.stringify(issued)}`);
      return issued;
    },
    { config, create: true, migrate: true },
  );
  const running = await serve(config);
  const period = halfMonthOf(Math.floor(Date.now() / 1000));
  const body = JSON.stringify({ startTimestamp: period.start, endTimestamp: period.end, numUsers: 10 });
  const base = `http://localhost:${running.port}`;
  process.stdout.write(
    [
      "",
      `topwagers demo is running on ${base} (Ctrl-C to stop).`,
      "",
      `Demo API key for affiliate "${DEMO_AFFILIATE}" (shown once):`,
      `  ${key.secret}`,
      "",
      "Top 10 of the current half-month over REST:",
      `  curl -s ${base}${config.basePath}/top-affiliate-wagers-by-period \\`,
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
    ].join("\n"),
  );
  const stop = () => {
    running.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}
