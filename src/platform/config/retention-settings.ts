/** The retention job's settings: what it deletes, after how long, and how often it runs here. */

import type { EnvReader } from "./env-reader.js";

export interface RetentionSettings {
  /** WEBHOOK_DELIVERED_RETENTION_DAYS: delivered webhook deliveries (and attempts, events) kept this long; 0 forever. */
  readonly deliveredDays: number;
  /** WEBHOOK_FAILED_RETENTION_DAYS: failed deliveries kept this long, for redelivery; 0 forever. */
  readonly failedDays: number;
  /** RETENTION_EVERY_S: how often this instance runs the job (one instance at a time runs it); 0: never here. */
  readonly everySeconds: number;
  /** WAGER_RETENTION_DAYS: raw wagers kept this many days, then pruned (ingest/sql/wager-retention.ts); 0 forever. */
  readonly wagerDays: number;
  /** HOURLY_ROLLUP_RETENTION_DAYS: hourly rollup rows kept this many days, then pruned; 0 forever. */
  readonly hourlyDays: number;
}

export function readRetention(read: EnvReader): RetentionSettings {
  return {
    deliveredDays: read.integer("WEBHOOK_DELIVERED_RETENTION_DAYS", 30, 0, 36_500),
    failedDays: read.integer("WEBHOOK_FAILED_RETENTION_DAYS", 90, 0, 36_500),
    everySeconds: read.integer("RETENTION_EVERY_S", 600, 0, 86_400),
    wagerDays: read.integer("WAGER_RETENTION_DAYS", 0, 0, 36_500),
    hourlyDays: read.integer("HOURLY_ROLLUP_RETENTION_DAYS", 0, 0, 36_500),
  };
}
