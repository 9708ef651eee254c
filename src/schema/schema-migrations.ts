/**
 * The schema, as the list of versioned migrations (applied by ./migration-runner.ts). Never edit a
 * shipped migration: add a new one.
 *
 * Ids of affiliates, users and wagers are the platform's opaque strings,
 * stored as their UTF-8 bytes (`external_id`, VARBINARY): compared and ordered
 * byte by byte, which is code point order, with no trailing-space padding
 * ("pid" and "pid " are different ids). Usernames are stored the same way so
 * the leaderboard's tie-break is code point order. 256 bytes hold 64 code
 * points; the 64 limit itself is enforced where data comes in. Internally every row has a compact integer key, so the large tables
 * and their indexes stay small. Times are Unix seconds in INT UNSIGNED (no time
 * zone conversion, no 2038 limit); money is DECIMAL and is only ever summed by
 * the database.
 */

import { WEIGHTED_SUM_MIGRATION } from "../ingest/sql/weighted-backfill.js";
import type { MigrationContext, MigrationStep } from "../platform/database/schema-steps.js";
import {
  AFFILIATE_CAPPED_CREATES,
  API_KEY_EXPIRY,
  API_KEY_SCOPES,
  CORE_TABLES,
  HALF_MONTH_TOTALS,
  INSTANCES,
  MONTHLY_RANKING_INDEX,
  MONTHLY_TOTAL_INDEXES,
  PUBLISHABLE_KEYS,
  RETENTION_HOLDS,
  RETENTION_HORIZONS,
  TOTALS_TABLES,
  VOIDS_AND_CHANGE_FEED,
  WAGER_WEIGHTS,
  WEIGHTED_SUM_STORED,
  WEIGHTS_IN_EDGE_INDEX,
} from "./schema-migrations-core.js";
import { RESULTS_LOG_TABLES } from "./schema-migrations-log.js";
import {
  LIVE_SIGNING_KEYS,
  RACE_HISTORY_TABLES,
  RACE_LATE_WAGERS,
  RACE_TABLES,
  RELEASABLE_SLUGS,
  SIGNING_TABLES,
} from "./schema-migrations-races.js";
import { WEBHOOK_EVENTS_BY_RACE, WEBHOOK_TABLES } from "./schema-migrations-webhooks.js";

export type { MigrationContext, MigrationStep };

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly statements: readonly MigrationStep[];
  /**
   * The oldest release that may still use the schema once this migration is applied, when older releases would
   * misread what it brings (see the rule above MIGRATIONS). Recorded in `schema_release_floor` (./release-floor.ts),
   * never lowered; an older release then refuses to start and to migrate.
   */
  readonly oldestRelease?: string;
}

/**
 * Version safety, the rule for a new migration: ask "would a release from before this migration, running on the
 * schema after it, answer wrongly or write data this release misreads?" (a key restricted by scopes answered in
 * full by a release that knows no scopes; a row an older release would delete or overwrite). If yes, set
 * `oldestRelease` to the first release that understands it (the version package.json will have when it ships,
 * see CHANGELOG.md [Unreleased]), and list the migration in docs/operations.md "Version safety". If older
 * releases merely ignore it (a new table, a column with a default, a trigger that keeps an older writer exact),
 * leave it unset: rolling deploys and rollbacks stay open. Take the next free version when you rebase.
 *
 * Each entry numbers and names a migration here; its statements live with the others of its area
 * (./schema-migrations-core.ts, ./schema-migrations-races.ts, ./schema-migrations-webhooks.ts, or a new file for a
 * new area), each with the comment that says why it is written so.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "affiliates, users, wagers and api keys",
    statements: CORE_TABLES,
  },
  {
    version: 2,
    name: "hourly, daily and monthly wager totals per affiliate and user",
    statements: TOTALS_TABLES,
  },
  {
    version: 3,
    name: "half-month wager totals (1st-15th and 16th-end) per affiliate and user",
    statements: HALF_MONTH_TOTALS,
  },
  {
    version: 4,
    name: "wager voids and the change feed",
    statements: VOIDS_AND_CHANGE_FEED,
  },
  {
    version: 5,
    name: "api key expiry",
    statements: API_KEY_EXPIRY,
  },
  {
    version: 6,
    name: "publishable api keys, and api key changes in the change feed",
    statements: PUBLISHABLE_KEYS,
  },
  {
    version: 7,
    name: "wager weights (basis points) and weighted totals",
    statements: WAGER_WEIGHTS,
  },
  {
    version: 8,
    name: "wager weights in the covering index of the raw edges",
    statements: WEIGHTS_IN_EDGE_INDEX,
  },
  {
    version: 9,
    name: "api key scopes",
    // A release without scopes answers a restricted key in full (issue 38): 0.2.0 is the first that reads them.
    oldestRelease: "0.2.0",
    statements: API_KEY_SCOPES,
  },
  {
    version: 10,
    name: "races and their frozen results",
    statements: RACE_TABLES,
  },
  {
    version: 11,
    name: "outgoing webhooks: endpoints, events (the outbox), deliveries and their attempts",
    statements: WEBHOOK_TABLES,
  },
  {
    version: WEIGHTED_SUM_MIGRATION,
    name: "the weighted total stored beside the plain one, backfilled in batches",
    statements: WEIGHTED_SUM_STORED,
  },
  {
    version: 13,
    name: "signing keys, and the signed final results chained per affiliate",
    statements: SIGNING_TABLES,
  },
  {
    version: 14,
    name: "a race's history: every change with when and by whom, and the voids that reached its standings",
    statements: RACE_HISTORY_TABLES,
  },
  {
    version: 15,
    name: "a cancelled or deleted race's slug can be used again",
    statements: RELEASABLE_SLUGS,
  },
  {
    version: 16,
    name: "webhook events indexed by the race they are about",
    statements: WEBHOOK_EVENTS_BY_RACE,
  },
  {
    version: 17,
    name: "retention horizons and the hashes of pruned wagers",
    statements: RETENTION_HORIZONS,
  },
  {
    version: 18,
    name: "late wagers of a race's period recorded during its review",
    statements: RACE_LATE_WAGERS,
  },
  {
    version: 19,
    name: "the live signing key, apart from the results' keys",
    statements: LIVE_SIGNING_KEYS,
  },
  {
    version: 20,
    name: "a counter on each affiliate that every capped create bumps",
    statements: AFFILIATE_CAPPED_CREATES,
  },
  {
    version: 21,
    name: "the results log: its entries, tile hashes, checkpoints and note key",
    statements: RESULTS_LOG_TABLES,
  },
  {
    version: 22,
    name: "retention held per affiliate by its races that are not final",
    statements: RETENTION_HOLDS,
  },
  {
    version: 23,
    name: "every process registers itself, and how far retention has deleted",
    statements: INSTANCES,
  },
  {
    version: 24,
    name: "each month's totals indexed by affiliate, month and total (plain and weighted)",
    statements: MONTHLY_TOTAL_INDEXES,
  },
  {
    version: 25,
    name: "one index of each month's totals for both rankings",
    statements: MONTHLY_RANKING_INDEX,
  },
];

export const LATEST_SCHEMA_VERSION = Math.max(...MIGRATIONS.map((m) => m.version));
