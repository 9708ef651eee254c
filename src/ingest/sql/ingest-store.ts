/**
 * The MariaDB adapter of the ingest port (src/ports/ingest.ts): the recording, voiding and user statements
 * beside this file bound to a pool.
 */
import type { Pool } from "mysql2/promise";
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from "../../platform/database/transactions.js";
import type { IngestStore } from "../../ports/ingest.js";
import { upsertUserBatch } from "./users.js";
import { voidWagerBatch } from "./voids.js";
import { recordWagerBatch } from "./wagers.js";

/** Each batch one transaction, retried on deadlock and lock wait timeout by `retry`. */
export function mariadbIngest(pool: Pool, retry: RetryPolicy = DEFAULT_RETRY_POLICY): IngestStore {
  return {
    upsertUsers: (users) => upsertUserBatch(pool, users, retry),
    recordWagers: (wagers) => recordWagerBatch(pool, wagers, retry),
    voidWagers: (ids) => voidWagerBatch(pool, ids, retry),
  };
}
