/**
 * The schema, as the list of versioned migrations (applied by ./migrations.ts). Never edit a
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
import type { RollupTable } from "./rollups.js";
import { addColumnsIfMissing, addIndexIfMissing, dropIndexIfPresent, type MigrationContext } from "./schema-steps.js";
import {
  backfillWeightedSums,
  WEIGHTED_SUM_MIGRATION,
  weightedSumDefault,
  weightedSumTrigger,
} from "./weighted-backfill.js";

export type { MigrationContext };

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

/** One step: a statement, or code for a step that must check the schema first (./schema-steps.ts). */
export type MigrationStep = string | ((context: MigrationContext) => Promise<void>);

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
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "affiliates, users, wagers and api keys",
    statements: [
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
    ],
  },
  {
    version: 2,
    name: "hourly, daily and monthly wager totals per affiliate and user",
    // Maintained in the same transaction as the raw wagers (ingest), so they
    // never disagree with them. bucket = Unix second at which the UTC hour, day
    // or month starts. The read path answers a period from the coarsest aligned
    // buckets plus raw wagers for partial-hour edges.
    statements: ["wager_hourly", "wager_daily", "wager_monthly"].map(createTotalsTable),
  },
  {
    version: 3,
    name: "half-month wager totals (1st-15th and 16th-end) per affiliate and user",
    // Filled from the daily totals, which are exact: a day lies in one half-month. The bucket
    // expression is the half-month one of rollups.ts as it was when this migration shipped, written
    // out so that a later change there cannot change what this migration did.
    statements: [
      createTotalsTable("wager_halfmonthly"),
      `INSERT INTO wager_halfmonthly (affiliate_id, bucket, user_id, total, wagers)
       SELECT affiliate_id, (bucket DIV 86400 + 1 - DAYOFMONTH(DATE '1970-01-01' + INTERVAL bucket DIV 86400 DAY) + IF(DAYOFMONTH(DATE '1970-01-01' + INTERVAL bucket DIV 86400 DAY) >= 16, 15, 0)) * 86400 AS b, user_id, SUM(total), SUM(wagers)
         FROM wager_daily GROUP BY affiliate_id, b, user_id ORDER BY affiliate_id, b, user_id`,
    ],
  },
  {
    version: 4,
    name: "wager voids and the change feed",
    statements: [
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
      // exactly the cached answers a change touches (src/leaderboard/change-feed.ts).
      `CREATE TABLE data_changes (
        id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
        wager_spans MEDIUMTEXT CHARACTER SET ascii COLLATE ascii_bin NULL,
        user_external_id VARBINARY(256) NULL,
        created_at INT UNSIGNED NOT NULL,
        KEY ix_data_changes_created (created_at)
      ) ENGINE=InnoDB`,
    ],
  },
  {
    version: 5,
    name: "api key expiry",
    // A key is refused from expires_at on (NULL: never expires). Rotation sets it on the old key.
    statements: ["ALTER TABLE api_keys ADD COLUMN expires_at INT UNSIGNED NULL AFTER revoked_at"],
  },
  {
    version: 6,
    name: "publishable api keys, and api key changes in the change feed",
    // Metadata only (ALGORITHM=INSTANT), and each column added only when missing.
    statements: [
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
    ],
  },
  {
    version: 7,
    name: "wager weights (basis points) and weighted totals",
    // Metadata only (ALGORITHM=INSTANT: milliseconds at any size, no rows rewritten, no lock
    // held for long; refused rather than copying a large table where a server cannot do it).
    // Nothing to backfill: every wager recorded so far counts fully, which is what the defaults
    // say. Rollups store what the weights take off the total (`weight_discount`, 0 for every
    // existing row), and `weighted_total` is computed from it on read. An instance of the
    // previous version still writing during a rolling deploy records full-weight wagers and
    // leaves `weight_discount` alone, which is right for them. Weighted values have up to 12
    // fraction digits (amount × weight_bps / 10000), so DECIMAL(34,12) holds every total exactly.
    statements: [
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
    ],
  },
  {
    version: 8,
    name: "wager weights in the covering index of the raw edges",
    // The read path sums raw wagers for partial hours from this index alone; it needs the
    // weight too. Built online (ALGORITHM=INPLACE, LOCK=NONE): ingest and reads go on while it
    // builds, and readers use the old index until it is there. Its time grows with the wagers
    // (measured in docs/operations.md); the CLI's `migrate` prints a line while it runs.
    statements: [
      addIndexIfMissing(
        "wagers",
        "ix_wagers_affiliate_time_weight",
        "affiliate_id, placed_at, user_id, amount, weight_bps",
      ),
      dropIndexIfPresent("wagers", "ix_wagers_affiliate_time"),
    ],
  },
  {
    version: 9,
    name: "api key scopes",
    // A release without scopes answers a restricted key in full (issue 38): 0.2.0 is the first that reads them.
    oldestRelease: "0.2.0",
    // What a key may do: space-separated scope names (src/values/scopes.ts). Metadata only
    // (ALGORITHM=INSTANT), then every existing key gets what it could do before, written out: a
    // secret key every scope, a publishable key the read scopes. A key inserted by an instance of
    // the previous version during a rolling deploy has NULL, which reads the same way. The names
    // are written here as literals, so a later change of the catalogue cannot change what this
    // migration did. No change rows: every instance reads these keys exactly as before.
    statements: [
      addColumnsIfMissing("api_keys", {
        scopes: "VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NULL",
      }),
      `UPDATE api_keys SET scopes = IF(publishable = 1, 'boards:read races:read',
         'boards:read races:read races:write webhooks:write') WHERE scopes IS NULL`,
    ],
  },
  {
    version: 10,
    name: "races and their frozen results",
    // New tables only. A race is one period of a series (a one-off race is a series of one): the
    // series shares the slug, and (affiliate, slug, index) is unique, so two instances creating the
    // same next race insert it once. Each step that must happen once (announcing the start and the
    // end, creating the next race, the freeze) is a flag set by a conditional UPDATE in the same
    // transaction as its event, so it happens once however many instances try; `next_step_at` is
    // when the race next has such a step due (NULL: none), which the clock's scan reads by index.
    // Prizes and the excluded users are JSON arrays of strings, read and written whole.
    statements: [
      `CREATE TABLE races (
        id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
        public_id VARCHAR(40) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        affiliate_id INT UNSIGNED NOT NULL,
        slug VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        series_index INT UNSIGNED NOT NULL,
        anchor_start INT UNSIGNED NOT NULL,
        title VARBINARY(512) NOT NULL,
        start_ts INT UNSIGNED NOT NULL,
        end_ts INT UNSIGNED NOT NULL,
        rank_by VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        currency VARCHAR(12) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        prizes TEXT CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        min_wagered VARCHAR(40) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        excluded_user_ids MEDIUMBLOB NOT NULL,
        review_seconds INT UNSIGNED NOT NULL,
        shown SMALLINT UNSIGNED NOT NULL,
        repeat_every VARCHAR(8) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        time_zone VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        created_at INT UNSIGNED NOT NULL,
        updated_at INT UNSIGNED NOT NULL,
        cancelled_at INT UNSIGNED NULL,
        frozen_at INT UNSIGNED NULL,
        digest CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
        unallocated VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NULL,
        start_announced TINYINT(1) NOT NULL DEFAULT 0,
        end_announced TINYINT(1) NOT NULL DEFAULT 0,
        next_created TINYINT(1) NOT NULL DEFAULT 0,
        next_step_at INT UNSIGNED NULL,
        UNIQUE KEY ux_races_public_id (public_id),
        UNIQUE KEY ux_races_series (affiliate_id, slug, series_index),
        KEY ix_races_affiliate_start (affiliate_id, start_ts),
        KEY ix_races_next_step (next_step_at)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
      // The frozen result, one row per placed user shown, as it was at the freeze; never updated.
      `CREATE TABLE race_results (
        race_id INT UNSIGNED NOT NULL,
        position SMALLINT UNSIGNED NOT NULL,
        \`rank\` SMALLINT UNSIGNED NOT NULL,
        user_external_id VARBINARY(256) NOT NULL,
        username VARBINARY(256) NOT NULL,
        avatar_url VARBINARY(2048) NOT NULL,
        total DECIMAL(30,8) NOT NULL,
        weighted_total DECIMAL(34,12) NOT NULL,
        prize VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        PRIMARY KEY (race_id, position)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
    ],
  },
  {
    version: 11,
    name: "outgoing webhooks: endpoints, events (the outbox), deliveries and their attempts",
    // Standard Webhooks (docs/webhooks.md). An event is written in the same transaction as the state
    // change that causes it, with one delivery per subscribed endpoint (./webhook-outbox.ts); any
    // instance claims due deliveries (./webhooks.ts). Times the worker schedules by are Unix
    // milliseconds (BIGINT), so a test's scaled retry schedule of a few milliseconds still orders.
    statements: [
      // secret and previous_secret: the `whsec_…` signing secrets as ./webhook-secrets.ts stores them
      // (AES-256-GCM under WEBHOOK_SECRET_KEY, or marked plain when no key is set). After a rotation
      // the previous one keeps signing beside the new one until previous_secret_expires_at.
      // failing_since: the first failed attempt since the last delivered one (NULL while healthy);
      // an endpoint failing for 5 days is disabled with a reason.
      `CREATE TABLE webhook_endpoints (
        id VARCHAR(40) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
        affiliate_id INT UNSIGNED NOT NULL,
        url VARCHAR(2048) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
        description VARCHAR(500) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
        event_types TEXT CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        enabled TINYINT(1) NOT NULL DEFAULT 1,
        disabled_reason VARCHAR(500) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
        disabled_at INT UNSIGNED NULL,
        secret VARBINARY(255) NOT NULL,
        previous_secret VARBINARY(255) NULL,
        previous_secret_expires_at INT UNSIGNED NULL,
        failing_since_ms BIGINT UNSIGNED NULL,
        created_at INT UNSIGNED NOT NULL,
        updated_at INT UNSIGNED NOT NULL,
        KEY ix_webhook_endpoints_affiliate (affiliate_id, enabled)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
      // One row per event: message_id is the `webhook-id` (the receiver's idempotency key), body the
      // exact bytes sent (`{"type","timestamp","data"}`, at most 20 KB), so a redelivery is the same.
      `CREATE TABLE webhook_events (
        id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
        message_id VARCHAR(40) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        affiliate_id INT UNSIGNED NOT NULL,
        type VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        body BLOB NOT NULL,
        created_at INT UNSIGNED NOT NULL,
        UNIQUE KEY ux_webhook_events_message (message_id),
        KEY ix_webhook_events_affiliate (affiliate_id, id)
      ) ENGINE=InnoDB`,
      // One row per event and endpoint. state: pending (next_attempt_at_ms says when), delivered or
      // failed (after max_attempts, or the endpoint was disabled). A redelivery allows one attempt more
      // with the same message id. A worker claims a due
      // delivery by setting claim_token and claimed_until_ms (a lease): a claim whose instance died
      // expires and the delivery is due again. last_response: the first bytes of the receiver's answer.
      `CREATE TABLE webhook_deliveries (
        id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
        event_id BIGINT UNSIGNED NOT NULL,
        endpoint_id VARCHAR(40) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        state VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        attempts SMALLINT UNSIGNED NOT NULL DEFAULT 0,
        max_attempts SMALLINT UNSIGNED NOT NULL,
        next_attempt_at_ms BIGINT UNSIGNED NULL,
        claim_token VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
        claimed_until_ms BIGINT UNSIGNED NULL,
        last_attempt_at_ms BIGINT UNSIGNED NULL,
        last_status SMALLINT UNSIGNED NULL,
        last_error VARCHAR(500) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
        last_response VARBINARY(1024) NULL,
        delivered_at_ms BIGINT UNSIGNED NULL,
        failed_at_ms BIGINT UNSIGNED NULL,
        created_at INT UNSIGNED NOT NULL,
        KEY ix_webhook_deliveries_due (state, next_attempt_at_ms),
        KEY ix_webhook_deliveries_endpoint (endpoint_id, id),
        KEY ix_webhook_deliveries_event (event_id)
      ) ENGINE=InnoDB`,
      // Every attempt of a delivery, in order: when, how long, the HTTP status or the error.
      `CREATE TABLE webhook_attempts (
        delivery_id BIGINT UNSIGNED NOT NULL,
        attempt SMALLINT UNSIGNED NOT NULL,
        started_at_ms BIGINT UNSIGNED NOT NULL,
        duration_ms INT UNSIGNED NOT NULL,
        status SMALLINT UNSIGNED NULL,
        error VARCHAR(500) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
        response VARBINARY(1024) NULL,
        instance VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
        PRIMARY KEY (delivery_id, attempt)
      ) ENGINE=InnoDB`,
    ],
  },
  {
    version: WEIGHTED_SUM_MIGRATION,
    name: "the weighted total stored beside the plain one, backfilled in batches",
    // Ranking by the virtual `weighted_total` was slower than the plain board, because each row read computes
    // total - weight_discount (a DECIMAL subtraction, in the WHERE and again in the sort key); docs/benchmarks.md,
    // "Ranked by the plain and by the weighted total (issue 22)", has the figures.
    // `weighted_sum` holds the same value stored, so both boards read one stored column per row.
    // Added NULL by a metadata-only ALTER (no row rewritten, no lock held for long), then kept exact
    // for writers of any version (a default expression and a BEFORE UPDATE trigger, see
    // ./weighted-backfill.ts), then filled on existing rows in batches of 5,000 with a checkpoint
    // (resumable, progress lines in `migrate`). Boards read it once this migration is recorded,
    // i.e. once the backfill is done; the virtual column stays for instances of earlier versions.
    statements: [
      ...ROLLUP_TABLES.map((table) => addColumnsIfMissing(table, { weighted_sum: "DECIMAL(34,12) NULL" })),
      ...ROLLUP_TABLES.map(weightedSumDefault),
      ...ROLLUP_TABLES.map(weightedSumTrigger),
      backfillWeightedSums(),
    ],
  },
  {
    version: 13,
    name: "signing keys, and the signed final results chained per affiliate",
    // docs/verify.md. Ed25519 keys: `public_x` is the public key (RFC 8037 `x`, base64url), `private_sealed`
    // the private half as ./signing-keys.ts seals it (the webhook secrets' AES-256-GCM box). `active` is 1 on
    // the one key every instance signs with and NULL on the others (unique: at most one active).
    statements: [
      `CREATE TABLE signing_keys (
        kid VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
        public_x VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        private_sealed VARBINARY(512) NOT NULL,
        active TINYINT UNSIGNED NULL,
        created_at INT UNSIGNED NOT NULL,
        activated_at INT UNSIGNED NULL,
        retired_at INT UNSIGNED NULL,
        UNIQUE KEY ux_signing_keys_active (active)
      ) ENGINE=InnoDB`,
      // A final result as signed at the freeze (the compact JWS, answered byte for byte forever). `sequence`
      // counts an affiliate's signed results from 1; each names the previous one's SHA-256 (the chain), and
      // the unique key stops two freezes from both following the same result.
      `CREATE TABLE race_signed_results (
        race_id INT UNSIGNED NOT NULL PRIMARY KEY,
        affiliate_id INT UNSIGNED NOT NULL,
        sequence INT UNSIGNED NOT NULL,
        kid VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        sha256 CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        jws MEDIUMBLOB NOT NULL,
        UNIQUE KEY ux_race_signed_results_chain (affiliate_id, sequence)
      ) ENGINE=InnoDB`,
    ],
  },
  {
    version: 14,
    name: "a race's history: every change with when and by whom, and the voids that reached its standings",
    // docs/api.md "A race's history". One row per change to a race (created, updated, cancelled, frozen, …),
    // written in the change's own transaction and never changed: the two triggers refuse an UPDATE or DELETE
    // of a row, whoever asks. Keyed by the race's public id, so a race's history outlives its row.
    // `actor_kind`: key, admin, cli or clock; `actor_id` the key's id or the CLI's user. `detail`: JSON
    // (the fields changed; the freeze's count of what voids did).
    statements: [
      `CREATE TABLE race_history (
        id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
        race_public_id VARCHAR(40) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        at INT UNSIGNED NOT NULL,
        kind VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        actor_kind VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        actor_id VARBINARY(256) NOT NULL,
        detail MEDIUMBLOB NOT NULL,
        KEY ix_race_history_race (race_public_id, id)
      ) ENGINE=InnoDB`,
      `CREATE TRIGGER race_history_no_update BEFORE UPDATE ON race_history FOR EACH ROW
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'race_history is append-only'`,
      `CREATE TRIGGER race_history_no_delete BEFORE DELETE ON race_history FOR EACH ROW
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'race_history is append-only'`,
      // Per race and user: the wagers of the race's period voided while the race was live or reviewing, and
      // their sums, added to by each void's own transaction (storage/race-history.ts noteRaceVoids).
      `CREATE TABLE race_voids (
        race_id INT UNSIGNED NOT NULL,
        user_id INT UNSIGNED NOT NULL,
        wagers INT UNSIGNED NOT NULL,
        amount DECIMAL(30,8) NOT NULL,
        weighted DECIMAL(34,12) NOT NULL,
        PRIMARY KEY (race_id, user_id)
      ) ENGINE=InnoDB`,
    ],
  },
  {
    version: 15,
    name: "a cancelled or deleted race's slug can be used again",
    // A slug is held by the races whose `slug_released` is 0; `slug_key` is the slug while held and NULL once
    // released, and (affiliate, slug_key, index) is unique, so the held races of a slug are one series and two
    // instances creating the same next race still insert it once (NULLs never collide). A new race takes a slug
    // whose series' last race is cancelled by releasing the old races (./race-slugs.ts). An earlier release on
    // this schema writes no `slug_released` (0: held), so what it inserts holds its slug as before; the old
    // unique key goes, and a plain (affiliate, slug, index) index keeps its reads by slug (history included).
    statements: [
      addColumnsIfMissing("races", { slug_released: "TINYINT(1) NOT NULL DEFAULT 0" }),
      addColumnsIfMissing("races", {
        slug_key: "VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin AS (IF(slug_released = 0, slug, NULL)) VIRTUAL",
      }),
      addIndexIfMissing("races", "ux_races_held_slug", "affiliate_id, slug_key, series_index", true),
      addIndexIfMissing("races", "ix_races_slug", "affiliate_id, slug, series_index"),
      dropIndexIfPresent("races", "ux_races_series"),
    ],
  },
  {
    version: 16,
    name: "webhook events indexed by the race they are about",
    // Delivering one race's events in order (./webhook-race-order.ts) asks, at each claim, for the oldest
    // pending delivery of the candidates' races: by this index it reads those races' events only, instead of
    // parsing the body of every pending race event of the endpoints (4.5 ms a claim per 1,000 pending, measured).
    // A virtual column: nothing is written, rows of earlier releases are covered; the index is built online.
    statements: [
      addColumnsIfMissing("webhook_events", {
        race_id: `VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin
          AS (IF(type LIKE 'race.%', JSON_VALUE(CONVERT(body USING utf8mb4), '$.data.id'), NULL)) VIRTUAL`,
      }),
      addIndexIfMissing("webhook_events", "ix_webhook_events_race", "race_id"),
    ],
  },
];

export const LATEST_SCHEMA_VERSION = Math.max(...MIGRATIONS.map((m) => m.version));
