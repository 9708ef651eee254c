/**
 * The body of migration 21, the results log (docs/verify.md "The results log"); the list that numbers and names it
 * is ./schema-migrations.ts. Shipped migrations: never edit one (a new shape is a new migration), and keep every
 * statement byte for byte.
 *
 * New tables only (a release before this one ignores them). The log is append-only: its entries, tile hashes and
 * checkpoints refuse an UPDATE or a DELETE, whoever asks (triggers, as the race history's).
 * - `log_head`: one row, the number of entries appended. A freeze or a cancellation takes the next index by updating
 *   it in its own transaction (results-log/sql/log-append.ts), so indexes are dense and committed in order; its
 *   `began_at` says from when results are logged.
 * - `log_entries`: an entry's bytes (a BLOB: up to 65,535 bytes, what an entry bundle frames) and leaf hash at its
 *   index; one per race (the unique public id).
 * - `log_tile_hashes`: the roots of full tiles, at tile level 1 and up (level 0 is the entries' leaf hashes).
 * - `log_checkpoints`: every signed checkpoint, by tree size (one root per size, ever).
 * - `log_state`: one row, the integrated tree's size: the lock one sequencer at a time holds (results-log/sql/log-store.ts).
 * - `log_signing_keys`: the checkpoints' Ed25519 note key, `public_key` base64 of its 32 bytes, the private seed
 *   sealed by the webhook secrets' box with `log-signing-key:{key_id}` as additional data; one key, made once for
 *   the fleet (the unique index on `active` lets one in).
 */
import type { MigrationStep } from "../platform/database/schema-steps.js";

/** The triggers that make a table append-only. */
function appendOnly(table: string): MigrationStep[] {
  return ["UPDATE", "DELETE"].map(
    (what) =>
      `CREATE TRIGGER IF NOT EXISTS ${table}_no_${what.toLowerCase()} BEFORE ${what} ON ${table} FOR EACH ROW
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '${table} is append-only'`,
  );
}

export const RESULTS_LOG_TABLES: readonly MigrationStep[] = [
  `CREATE TABLE IF NOT EXISTS log_head (
        id TINYINT UNSIGNED NOT NULL PRIMARY KEY,
        size BIGINT UNSIGNED NOT NULL,
        began_at INT UNSIGNED NOT NULL
      ) ENGINE=InnoDB`,
  "INSERT IGNORE INTO log_head (id, size, began_at) VALUES (1, 0, UNIX_TIMESTAMP())",
  `CREATE TABLE IF NOT EXISTS log_entries (
        idx BIGINT UNSIGNED NOT NULL PRIMARY KEY,
        race_public_id VARCHAR(40) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        entry BLOB NOT NULL,
        leaf_hash BINARY(32) NOT NULL,
        UNIQUE KEY ux_log_entries_race (race_public_id)
      ) ENGINE=InnoDB`,
  ...appendOnly("log_entries"),
  `CREATE TABLE IF NOT EXISTS log_tile_hashes (
        level TINYINT UNSIGNED NOT NULL,
        idx BIGINT UNSIGNED NOT NULL,
        hash BINARY(32) NOT NULL,
        PRIMARY KEY (level, idx)
      ) ENGINE=InnoDB`,
  ...appendOnly("log_tile_hashes"),
  `CREATE TABLE IF NOT EXISTS log_checkpoints (
        tree_size BIGINT UNSIGNED NOT NULL PRIMARY KEY,
        root BINARY(32) NOT NULL,
        note VARBINARY(8192) NOT NULL,
        signed_at INT UNSIGNED NOT NULL
      ) ENGINE=InnoDB`,
  ...appendOnly("log_checkpoints"),
  `CREATE TABLE IF NOT EXISTS log_state (
        id TINYINT UNSIGNED NOT NULL PRIMARY KEY,
        tree_size BIGINT UNSIGNED NOT NULL
      ) ENGINE=InnoDB`,
  "INSERT IGNORE INTO log_state (id, tree_size) VALUES (1, 0)",
  `CREATE TABLE IF NOT EXISTS log_signing_keys (
        key_id CHAR(8) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
        name VARBINARY(1024) NOT NULL,
        public_key VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        private_sealed VARBINARY(512) NOT NULL,
        created_at INT UNSIGNED NOT NULL,
        active TINYINT UNSIGNED NULL,
        UNIQUE KEY ux_log_signing_keys_active (active)
      ) ENGINE=InnoDB`,
];
