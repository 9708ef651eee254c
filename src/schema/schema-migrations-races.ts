/**
 * The bodies of the migrations of races, their signed results and their history (10 and 13-15); the list that
 * numbers and names them is ./schema-migrations.ts. Shipped migrations: never edit one (a new shape is a new
 * migration), and keep every statement byte for byte.
 */
import {
  addColumnsIfMissing,
  addIndexIfMissing,
  dropIndexIfPresent,
  type MigrationStep,
} from "../platform/database/schema-steps.js";

/**
 * Migration 10, "races and their frozen results".
 * New tables only. A race is one period of a series (a one-off race is a series of one): the
 * series shares the slug, and (affiliate, slug, index) is unique, so two instances creating the
 * same next race insert it once. Each step that must happen once (announcing the start and the
 * end, creating the next race, the freeze) is a flag set by a conditional UPDATE in the same
 * transaction as its event, so it happens once however many instances try; `next_step_at` is
 * when the race next has such a step due (NULL: none), which the clock's scan reads by index.
 * Prizes and the excluded users are JSON arrays of strings, read and written whole.
 */
export const RACE_TABLES: readonly MigrationStep[] = [
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
];

/**
 * Migration 13, "signing keys, and the signed final results chained per affiliate".
 * docs/verify.md. Ed25519 keys: `public_x` is the public key (RFC 8037 `x`, base64url), `private_sealed`
 * the private half as ../signing/sql/signing-keys.ts seals it (the webhook secrets' AES-256-GCM box). `active` is 1 on
 * the one key every instance signs with and NULL on the others (unique: at most one active).
 */
export const SIGNING_TABLES: readonly MigrationStep[] = [
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
];

/**
 * Migration 14, "a race's history: every change with when and by whom, and the voids that reached its standings".
 * docs/api.md "A race's history". One row per change to a race (created, updated, cancelled, frozen, …),
 * written in the change's own transaction and never changed: the two triggers refuse an UPDATE or DELETE
 * of a row, whoever asks. Keyed by the race's public id, so a race's history outlives its row.
 * `actor_kind`: key, admin, cli or clock; `actor_id` the key's id or the CLI's user. `detail`: JSON
 * (the fields changed; the freeze's count of what voids did).
 */
export const RACE_HISTORY_TABLES: readonly MigrationStep[] = [
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
  // their sums, added to by each void's own transaction (races/sql/race-history.ts noteRaceVoids).
  `CREATE TABLE race_voids (
        race_id INT UNSIGNED NOT NULL,
        user_id INT UNSIGNED NOT NULL,
        wagers INT UNSIGNED NOT NULL,
        amount DECIMAL(30,8) NOT NULL,
        weighted DECIMAL(34,12) NOT NULL,
        PRIMARY KEY (race_id, user_id)
      ) ENGINE=InnoDB`,
];

/**
 * Migration 15, "a cancelled or deleted race's slug can be used again".
 * A slug is held by the races whose `slug_released` is 0; `slug_key` is the slug while held and NULL once
 * released, and (affiliate, slug_key, index) is unique, so the held races of a slug are one series and two
 * instances creating the same next race still insert it once (NULLs never collide). A new race takes a slug
 * whose series' last race is cancelled by releasing the old races (../races/sql/race-slugs.ts). An earlier release on
 * this schema writes no `slug_released` (0: held), so what it inserts holds its slug as before; the old
 * unique key goes, and a plain (affiliate, slug, index) index keeps its reads by slug (history included).
 */
export const RELEASABLE_SLUGS: readonly MigrationStep[] = [
  addColumnsIfMissing("races", { slug_released: "TINYINT(1) NOT NULL DEFAULT 0" }),
  addColumnsIfMissing("races", {
    slug_key: "VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin AS (IF(slug_released = 0, slug, NULL)) VIRTUAL",
  }),
  addIndexIfMissing("races", "ux_races_held_slug", "affiliate_id, slug_key, series_index", true),
  addIndexIfMissing("races", "ix_races_slug", "affiliate_id, slug, series_index"),
  dropIndexIfPresent("races", "ux_races_series"),
];

/**
 * Migration 18, "late wagers of a race's period recorded during its review". Per race and user: the wagers dated
 * inside the race's period that were recorded after its end and before its freeze, and their sums, added to by
 * each recording's own transaction (races/sql/race-history.ts noteLateRaceWagers), as race_voids is by voids. The
 * (affiliate, end) index lets that note read only the races that ended between a wager's time and now.
 */
export const RACE_LATE_WAGERS: readonly MigrationStep[] = [
  `CREATE TABLE IF NOT EXISTS race_late_wagers (
        race_id INT UNSIGNED NOT NULL,
        user_id INT UNSIGNED NOT NULL,
        wagers INT UNSIGNED NOT NULL,
        amount DECIMAL(30,8) NOT NULL,
        weighted DECIMAL(34,12) NOT NULL,
        PRIMARY KEY (race_id, user_id)
      ) ENGINE=InnoDB`,
  addIndexIfMissing("races", "ix_races_affiliate_end", "affiliate_id, end_ts"),
];

/**
 * Migration 19, "the live signing key, apart from the results' keys". The key that signs live race versions and
 * live boards (docs/verify.md), shaped as signing_keys, in its own table so that a release that reads
 * signing_keys (0.4.0, still running during a rolling upgrade) never publishes it beside the results' keys nor
 * signs a result with it (RFC 8725 §3.12). Made by the first instance that signs something live.
 */
export const LIVE_SIGNING_KEYS: readonly MigrationStep[] = [
  `CREATE TABLE IF NOT EXISTS live_signing_keys (
        kid VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
        public_x VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        private_sealed VARBINARY(512) NOT NULL,
        active TINYINT UNSIGNED NULL,
        created_at INT UNSIGNED NOT NULL,
        activated_at INT UNSIGNED NULL,
        retired_at INT UNSIGNED NULL,
        UNIQUE KEY ux_live_signing_keys_active (active)
      ) ENGINE=InnoDB`,
];
