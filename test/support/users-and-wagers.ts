/**
 * Writing users and wagers from code that has already checked its data (test
 * fixtures, benches). Both go through the ingest write path (src/ingest/sql/users.ts and
 * src/ingest/sql/wagers.ts), so the hourly, daily, half-month and monthly totals are always maintained in the same
 * transaction as the raw wagers, and re-sent wager ids are recognised.
 */
import type { Pool } from "mysql2/promise";
import { upsertUserBatch } from "../../src/ingest/sql/users.js";
import { recordWagerBatch } from "../../src/ingest/sql/wagers.js";
import type { UserProfile, WagerRecord } from "../../src/values/records.js";

export type { UserProfile, WagerRecord };

/** Creates or updates users; the latest profile wins, including a move to another affiliate. */
export async function upsertUsers(pool: Pool, users: readonly UserProfile[]): Promise<void> {
  for (let i = 0; i < users.length; i += 1000) await upsertUserBatch(pool, users.slice(i, i + 1000));
}

/**
 * Records wagers (one transaction per call), each attributed to its user's
 * affiliate at this moment. Returns the external ids of users that do not exist
 * (nothing is written then). A wager id already recorded with the same content
 * is skipped; with different content this throws and writes nothing.
 */
export async function insertWagers(pool: Pool, wagers: readonly WagerRecord[]): Promise<string[]> {
  const outcome = await recordWagerBatch(pool, wagers);
  switch (outcome.kind) {
    case "recorded":
      return [];
    case "unknown_users":
      return [...outcome.userIds];
    case "conflict":
      throw new Error(`wagers already recorded with different content: ${outcome.wagerIds.join(", ")}`);
  }
}
