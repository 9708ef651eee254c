/** The retention job's settings: what it deletes, after how long, and how often it runs here. */

import type { EnvReader } from "./env-reader.js";

export interface RetentionSettings {
  /** WEBHOOK_DELIVERED_RETENTION_DAYS: delivered webhook deliveries (and attempts, events) kept this long; 0 forever. */
  readonly deliveredDays: number;
  /** WEBHOOK_FAILED_RETENTION_DAYS: failed deliveries kept this long, for redelivery; 0 forever. */
  readonly failedDays: number;
  /** RETENTION_EVERY_S: how often this instance runs the job (one instance at a time runs it); 0: never here. */
  readonly everySeconds: number;
}

export function readRetention(read: EnvReader): RetentionSettings {
  return {
    deliveredDays: read.integer("WEBHOOK_DELIVERED_RETENTION_DAYS", 30, 0, 36_500),
    failedDays: read.integer("WEBHOOK_FAILED_RETENTION_DAYS", 90, 0, 36_500),
    everySeconds: read.integer("RETENTION_EVERY_S", 600, 0, 86_400),
  };
}
