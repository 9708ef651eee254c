/**
 * The bodies of the migrations of outgoing webhooks (11 and 16); the list that numbers and names them is
 * ./schema-migrations.ts. Shipped migrations: never edit one (a new shape is a new migration), and keep every
 * statement byte for byte.
 */
import { addColumnsIfMissing, addIndexIfMissing, type MigrationStep } from "../platform/database/schema-steps.js";

/**
 * Migration 11, "outgoing webhooks: endpoints, events (the outbox), deliveries and their attempts".
 * Standard Webhooks (docs/webhooks.md). An event is written in the same transaction as the state
 * change that causes it, with one delivery per subscribed endpoint (../webhooks/sql/webhook-outbox.ts); any
 * instance claims due deliveries (../webhooks/sql/webhooks.ts). Times the worker schedules by are Unix
 * milliseconds (BIGINT), so a test's scaled retry schedule of a few milliseconds still orders.
 */
export const WEBHOOK_TABLES: readonly MigrationStep[] = [
  // secret and previous_secret: the `whsec_…` signing secrets as ../platform/database/secret-box.ts stores them
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
];

/**
 * Migration 16, "webhook events indexed by the race they are about".
 * Delivering one race's events in order (../webhooks/sql/webhook-race-order.ts) asks, at each claim, for the oldest
 * pending delivery of the candidates' races: by this index it reads those races' events only, instead of
 * parsing the body of every pending race event of the endpoints (4.5 ms a claim per 1,000 pending, measured).
 * A virtual column: nothing is written, rows of earlier releases are covered; the index is built online.
 */
export const WEBHOOK_EVENTS_BY_RACE: readonly MigrationStep[] = [
  addColumnsIfMissing("webhook_events", {
    race_id: `VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin
          AS (IF(type LIKE 'race.%', JSON_VALUE(CONVERT(body USING utf8mb4), '$.data.id'), NULL)) VIRTUAL`,
  }),
  addIndexIfMissing("webhook_events", "ix_webhook_events_race", "race_id"),
];
