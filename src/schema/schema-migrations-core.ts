/**
 * The bodies of the migrations of the wagers, their totals, the api keys, the change feed and retention (1-9, 12, 17,
 * 20, 24 and 25); the list that numbers and names them is ./schema-migrations.ts. Shipped migrations: never edit one (a new shape is a new
 * migration), and keep every statement byte for byte.
 */
import type { RollupTable } from "../ingest/sql/rollups.js";
import { backfillWeightedSums, weightedSumDefault, weightedSumTrigger } from "../ingest/sql/weighted-backfill.js";
import {
  addColumnsIfMissing,
  addIndexIfMissing,
  dropIndexIfPresent,
  type MigrationStep,
} from "../platform/database/schema-steps.js";

const ROLLUP_TABLES: readonly RollupTable[] = ["wager_hourly", "wager_daily", "wager_halfmonthly", "wager_monthly"];

/**
 * A table of totals per affiliate, bucket and user, as migrations 2 and 3 created it. Part of
 * those shipped migrations: never edit it (a new shape is a new migration).
 */
function createTotalsTable(table: string): string {
  return `CREATE TABLE ${table} (
        affiliate_id INT UNSIGNED NOT NULL,
        bucket INT UNSIGNED NOT NULL,
        user_id INT UNSIGNED NOT NULL,
        total DECIMAL(30,8) NOT NULL,
        wagers INT UNSIGNED NOT NULL,
        PRIMARY KEY (affiliate_id, bucket, user_id)
      ) ENGINE=InnoDB`;
}

/** Migration 1, "affiliates, users, wagers and api keys". */
export const CORE_TABLES: readonly MigrationStep[] = [
  `CREATE TABLE affiliates (
        id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
        external_id VARBINARY(256) NOT NULL,
        created_at INT UNSIGNED NOT NULL,
        UNIQUE KEY ux_affiliates_external (external_id)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
  `CREATE TABLE users (
        id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
        external_id VARBINARY(256) NOT NULL,
        affiliate_id INT UNSIGNED NOT NULL,
        username VARBINARY(256) NOT NULL,
        avatar_url VARCHAR(2048) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
        updated_at INT UNSIGNED NOT NULL,
        UNIQUE KEY ux_users_external (external_id),
        KEY ix_users_affiliate (affiliate_id)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
  // affiliate_id is the user's affiliate when the wager was recorded, so a
  // user who moves keeps their old wagers with the old affiliate.
  `CREATE TABLE wagers (
        id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
        external_id VARBINARY(256) NOT NULL,
        user_id INT UNSIGNED NOT NULL,
        affiliate_id INT UNSIGNED NOT NULL,
        amount DECIMAL(20,8) NOT NULL,
        placed_at INT UNSIGNED NOT NULL,
        UNIQUE KEY ux_wagers_external (external_id),
        KEY ix_wagers_affiliate_time (affiliate_id, placed_at, user_id, amount)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
  // Keys are stored only as SHA-256 hashes of the secret.
  `CREATE TABLE api_keys (
        id VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
        key_hash BINARY(32) NOT NULL,
        affiliate_id INT UNSIGNED NOT NULL,
        label VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
        created_at INT UNSIGNED NOT NULL,
        revoked_at INT UNSIGNED NULL,
        rate_limit_points INT UNSIGNED NULL,
        rate_limit_window_s INT UNSIGNED NULL,
        UNIQUE KEY ux_api_keys_hash (key_hash),
        KEY ix_api_keys_affiliate (affiliate_id)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
];

/**
 * Migration 2, "hourly, daily and monthly wager totals per affiliate and user".
 * Maintained in the same transaction as the raw wagers (ingest), so they
 * never disagree with them. bucket = Unix second at which the UTC hour, day
 * or month starts. The read path answers a period from the coarsest aligned
 * buckets plus raw wagers for partial-hour edges.
 */
export const TOTALS_TABLES: readonly MigrationStep[] = ["wager_hourly", "wager_daily", "wager_monthly"].map(
  createTotalsTable,
);

/**
 * Migration 3, "half-month wager totals (1st-15th and 16th-end) per affiliate and user".
 * Filled from the daily totals, which are exact: a day lies in one half-month. The bucket
 * expression is the half-month one of rollups.ts as it was when this migration shipped, written
 * out so that a later change there cannot change what this migration did.
 */
export const HALF_MONTH_TOTALS: readonly MigrationStep[] = [
  createTotalsTable("wager_halfmonthly"),
  `INSERT INTO wager_halfmonthly (affiliate_id, bucket, user_id, total, wagers)
       SELECT affiliate_id, (bucket DIV 86400 + 1 - DAYOFMONTH(DATE '1970-01-01' + INTERVAL bucket DIV 86400 DAY) + IF(DAYOFMONTH(DATE '1970-01-01' + INTERVAL bucket DIV 86400 DAY) >= 16, 15, 0)) * 86400 AS b, user_id, SUM(total), SUM(wagers)
         FROM wager_daily GROUP BY affiliate_id, b, user_id ORDER BY affiliate_id, b, user_id`,
];

/** Migration 4, "wager voids and the change feed". */
export const VOIDS_AND_CHANGE_FEED: readonly MigrationStep[] = [
  // Every void ever asked for, by wager id; a void is final. While the wager is unknown the
  // row is a pending void (applied_at NULL); once the wager is recorded and taken out of the
  // totals the row holds its content (moved here from `wagers`). So `wagers` and the rollups
  // only ever hold wagers that count, and the read path and `verify` need no filter.
  `CREATE TABLE wager_voids (
        external_id VARBINARY(256) NOT NULL PRIMARY KEY,
        requested_at INT UNSIGNED NOT NULL,
        applied_at INT UNSIGNED NULL,
        user_id INT UNSIGNED NULL,
        affiliate_id INT UNSIGNED NULL,
        amount DECIMAL(20,8) NULL,
        placed_at INT UNSIGNED NULL
      ) ENGINE=InnoDB`,
  // One row per committed write that can alter a leaderboard, written in the same transaction
  // as the change: the affiliates and time spans of the wagers it changed (`wager_spans`, text
  // "affiliate,first,last;…" with internal affiliate keys and Unix seconds), or a user whose
  // profile changed (user_external_id). Every instance reads it a few times a second to drop
  // exactly the cached answers a change touches (src/boards/core/change-feed.ts).
  `CREATE TABLE data_changes (
        id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
        wager_spans MEDIUMTEXT CHARACTER SET ascii COLLATE ascii_bin NULL,
        user_external_id VARBINARY(256) NULL,
        created_at INT UNSIGNED NOT NULL,
        KEY ix_data_changes_created (created_at)
      ) ENGINE=InnoDB`,
];

/**
 * Migration 5, "api key expiry".
 * A key is refused from expires_at on (NULL: never expires). Rotation sets it on the old key.
 */
export const API_KEY_EXPIRY: readonly MigrationStep[] = [
  "ALTER TABLE api_keys ADD COLUMN expires_at INT UNSIGNED NULL AFTER revoked_at",
];

/**
 * Migration 6, "publishable api keys, and api key changes in the change feed".
 * Metadata only (ALGORITHM=INSTANT), and each column added only when missing.
 */
export const PUBLISHABLE_KEYS: readonly MigrationStep[] = [
  // A publishable key (browser-safe) may be used only from its allowed origins: a JSON array of
  // exact origins ("https://board.example.com"); NULL for a secret key.
  addColumnsIfMissing("api_keys", {
    publishable: "TINYINT(1) NOT NULL DEFAULT 0",
    allowed_origins: "TEXT CHARACTER SET ascii COLLATE ascii_bin NULL",
  }),
  // Every key change (create, revoke, rotate, new rate limit) adds a row with the key's id in
  // its own transaction, so each instance's in-memory key set follows it within a poll.
  addColumnsIfMissing("data_changes", {
    api_key_id: "VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL",
  }),
];

/**
 * Migration 7, "wager weights (basis points) and weighted totals".
 * Metadata only (ALGORITHM=INSTANT: milliseconds at any size, no rows rewritten, no lock
 * held for long; refused rather than copying a large table where a server cannot do it).
 * Nothing to backfill: every wager recorded so far counts fully, which is what the defaults
 * say. Rollups store what the weights take off the total (`weight_discount`, 0 for every
 * existing row), and `weighted_total` is computed from it on read. An instance of the
 * previous version still writing during a rolling deploy records full-weight wagers and
 * leaves `weight_discount` alone, which is right for them. Weighted values have up to 12
 * fraction digits (amount × weight_bps / 10000), so DECIMAL(34,12) holds every total exactly.
 */
export const WAGER_WEIGHTS: readonly MigrationStep[] = [
  addColumnsIfMissing("wagers", {
    weight_bps: "SMALLINT UNSIGNED NOT NULL DEFAULT 10000",
  }),
  // A void's copy of its wager: NULL while pending, and for voids applied before weights (full weight).
  addColumnsIfMissing("wager_voids", { weight_bps: "SMALLINT UNSIGNED NULL" }),
  ...ROLLUP_TABLES.map((table) =>
    addColumnsIfMissing(table, {
      weight_discount: "DECIMAL(34,12) NOT NULL DEFAULT 0",
      weighted_total: "DECIMAL(34,12) AS (total - weight_discount) VIRTUAL",
    }),
  ),
  // 'wagered' or 'weighted': how this key's boards rank when a request does not say; NULL: wagered.
  addColumnsIfMissing("api_keys", {
    default_rank_by: "VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NULL",
  }),
];

/**
 * Migration 8, "wager weights in the covering index of the raw edges".
 * The read path sums raw wagers for partial hours from this index alone; it needs the
 * weight too. Built online (ALGORITHM=INPLACE, LOCK=NONE): ingest and reads go on while it
 * builds, and readers use the old index until it is there. Its time grows with the wagers
 * (measured in docs/operations.md); the CLI's `migrate` prints a line while it runs.
 */
export const WEIGHTS_IN_EDGE_INDEX: readonly MigrationStep[] = [
  addIndexIfMissing(
    "wagers",
    "ix_wagers_affiliate_time_weight",
    "affiliate_id, placed_at, user_id, amount, weight_bps",
  ),
  dropIndexIfPresent("wagers", "ix_wagers_affiliate_time"),
];

/**
 * Migration 9, "api key scopes".
 * What a key may do: space-separated scope names (src/values/scopes.ts). Metadata only
 * (ALGORITHM=INSTANT), then every existing key gets what it could do before, written out: a
 * secret key every scope, a publishable key the read scopes. A key inserted by an instance of
 * the previous version during a rolling deploy has NULL, which reads the same way. The names
 * are written here as literals, so a later change of the catalogue cannot change what this
 * migration did. No change rows: every instance reads these keys exactly as before.
 */
export const API_KEY_SCOPES: readonly MigrationStep[] = [
  addColumnsIfMissing("api_keys", {
    scopes: "VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NULL",
  }),
  `UPDATE api_keys SET scopes = IF(publishable = 1, 'boards:read races:read',
         'boards:read races:read races:write webhooks:write') WHERE scopes IS NULL`,
];

/**
 * Migration 12, "the weighted total stored beside the plain one, backfilled in batches".
 * Ranking by the virtual `weighted_total` was slower than the plain board, because each row read computes
 * total - weight_discount (a DECIMAL subtraction, in the WHERE and again in the sort key); docs/benchmarks.md,
 * "Ranked by the plain and by the weighted total (issue 22)", has the figures.
 * `weighted_sum` holds the same value stored, so both boards read one stored column per row.
 * Added NULL by a metadata-only ALTER (no row rewritten, no lock held for long), then kept exact
 * for writers of any version (a default expression and a BEFORE UPDATE trigger, see
 * ../ingest/sql/weighted-backfill.ts), then filled on existing rows in batches of 5,000 with a checkpoint
 * (resumable, progress lines in `migrate`). Boards read it once this migration is recorded,
 * i.e. once the backfill is done; the virtual column stays for instances of earlier versions.
 */
export const WEIGHTED_SUM_STORED: readonly MigrationStep[] = [
  ...ROLLUP_TABLES.map((table) => addColumnsIfMissing(table, { weighted_sum: "DECIMAL(34,12) NULL" })),
  ...ROLLUP_TABLES.map(weightedSumDefault),
  ...ROLLUP_TABLES.map(weightedSumTrigger),
  backfillWeightedSums(),
];

/**
 * Migration 17: where the retention job has pruned raw wagers and hourly rows (../ingest/sql/retention-horizon.ts), so every
 * instance refuses the same periods, and 8 bytes per pruned wager so that a void of one is refused
 * (../ingest/sql/retention-guards.ts). Two new tables: nothing is copied; older releases ignore them.
 */
export const RETENTION_HORIZONS: readonly MigrationStep[] = [
  `CREATE TABLE IF NOT EXISTS retention_horizons (
    kind VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
    horizon INT UNSIGNED NOT NULL,
    moved_at INT UNSIGNED NOT NULL
  ) ENGINE=InnoDB`,
  "INSERT IGNORE INTO retention_horizons (kind, horizon, moved_at) VALUES ('wagers', 0, 0), ('hourly', 0, 0)",
  `CREATE TABLE IF NOT EXISTS pruned_wagers (
    id_hash BINARY(8) NOT NULL PRIMARY KEY
  ) ENGINE=InnoDB`,
];

/**
 * Migration 22, "a counter on each affiliate that every capped create bumps". A create that a cap limits (a race,
 * a webhook endpoint) adds 1 to its affiliate's `capped_creates` before counting what the affiliate has, in the
 * same transaction as its insert (../ingest/sql/affiliates.ts lockForCappedCreate): the write holds the
 * affiliate's row until the commit on one server, and makes two such creates on two Galera nodes conflict at
 * certification (a locking read alone would not: Galera certifies writes only), so the count and the insert are
 * one step and racing creates never pass a cap. A column with a default, added in place; older releases ignore it.
 */
export const AFFILIATE_CAPPED_CREATES: readonly MigrationStep[] = [
  addColumnsIfMissing("affiliates", { capped_creates: "BIGINT UNSIGNED NOT NULL DEFAULT 0" }),
];

/**
 * Migration 22, "retention held per affiliate by its races that are not final". An affiliate with a race not final
 * yet that started before the horizons keeps its raw wagers and hourly rows from `held_from` (a UTC day start) on,
 * while the horizons (migration 17) move on for everyone else: each affiliate's own horizon is the lower of the
 * two (../ingest/sql/retention-horizon.ts). `held_from` 4294967295 is a hold released (its race is final), kept
 * until PRUNE_GRACE_S has passed so every instance has read the release before anything below it goes; `moved_at`
 * is when it last changed. A new table; older releases ignore it (they refuse by the horizons alone, which is
 * more, never less).
 */
export const RETENTION_HOLDS: readonly MigrationStep[] = [
  `CREATE TABLE IF NOT EXISTS retention_holds (
    affiliate_id INT UNSIGNED NOT NULL PRIMARY KEY,
    held_from INT UNSIGNED NOT NULL,
    moved_at INT UNSIGNED NOT NULL
  ) ENGINE=InnoDB`,
];

/**
 * Migration 23, "every process that uses the database registers itself, and how far retention has deleted". Each
 * server and CLI command of this release and later writes one row of `instances` (./instance-registry.ts) every
 * 5 s: its release, its database connections, the retention horizons it answers under (and their generation) and the
 * fingerprints of the WEBHOOK_SECRET_KEY it seals and opens with; the retention job deletes only once every live
 * server has read the horizons' current generation, and waits while a connection that no live row names is open (an older release, which registers
 * nothing). `retention_horizons.pruned_below`: the pruning run has deleted, or is deleting, rows below it, so a
 * refusal can say whether they were deleted or will be. Older releases ignore both (a new table, a column with a
 * default they never read).
 */
export const INSTANCES: readonly MigrationStep[] = [
  `CREATE TABLE IF NOT EXISTS instances (
    id CHAR(24) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
    role VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    release_version VARCHAR(40) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    release_commit VARCHAR(40) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    host VARCHAR(255) NOT NULL,
    pid INT UNSIGNED NOT NULL,
    started_at INT UNSIGNED NOT NULL,
    seen_at INT UNSIGNED NOT NULL,
    horizon_wagers INT UNSIGNED NULL,
    horizon_hourly INT UNSIGNED NULL,
    horizons_generation BIGINT UNSIGNED NULL,
    connections TEXT CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    seals_with VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    opens_with VARCHAR(400) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    KEY ix_instances_seen (seen_at)
  ) ENGINE=InnoDB`,
  addColumnsIfMissing("retention_horizons", { pruned_below: "INT UNSIGNED NOT NULL DEFAULT 0" }),
];

/**
 * Migration 24, "each month's totals indexed by affiliate, month and total (plain and weighted)". A long period's
 * board (a year, all time) reads each month's leading rows in order and stops once the rest cannot reach the board
 * (../boards/sql/threshold-board.ts), instead of summing every user of every month: these two indexes hand it a
 * month's rows best first, from the index alone (a secondary index holds the primary key, so user_id is in it).
 * Built online (ALGORITHM=INPLACE, LOCK=NONE): ingest and reads go on while they build, and every writer (ingest,
 * voids, late corrections, seed) keeps them current like any index. Older releases ignore them.
 */
export const MONTHLY_TOTAL_INDEXES: readonly MigrationStep[] = [
  addIndexIfMissing("wager_monthly", "ix_monthly_by_total", "affiliate_id, bucket, total DESC"),
  addIndexIfMissing("wager_monthly", "ix_monthly_by_weighted", "affiliate_id, bucket, weighted_sum DESC"),
];

/**
 * Migration 25, "one index of each month's totals for both rankings". Migration 24's two indexes cost ingest 19-23 %
 * (docs/benchmarks.md, issue 49 part 1): every batch changes the totals of the monthly rows it touches, and each
 * change moved the row's entry in both. One index ordered by the plain total and holding the weighted one serves
 * both rankings (a user's weighted total never exceeds the plain one, so the plain order bounds the weighted
 * values: ../boards/core/threshold-plan.ts) at half the writes. Built online before the two are dropped, so boards
 * keep an index throughout; older releases ignore it.
 */
export const MONTHLY_RANKING_INDEX: readonly MigrationStep[] = [
  addIndexIfMissing("wager_monthly", "ix_monthly_ranked", "affiliate_id, bucket, total DESC, weighted_sum"),
  dropIndexIfPresent("wager_monthly", "ix_monthly_by_total"),
  dropIndexIfPresent("wager_monthly", "ix_monthly_by_weighted"),
];
