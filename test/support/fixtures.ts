/** Test data written through the storage modules, and API keys made as the CLI makes them. */
import { generateApiKey } from "../../src/auth/api-key-secret.js";
import { insertApiKey } from "../../src/storage/api-keys.js";
import type { Database } from "../../src/storage/database.js";
import { insertWagers, type UserProfile, upsertUsers, type WagerRecord } from "../../src/storage/users-and-wagers.js";

export async function createKey(
  db: Database,
  affiliateId: string,
  rateLimit: { points: number; windowSeconds: number } | null = null,
): Promise<{ id: string; secret: string }> {
  const key = generateApiKey();
  await insertApiKey(db.write, {
    id: key.id,
    hash: key.hash,
    affiliateExternalId: affiliateId,
    label: "test",
    rateLimit,
  });
  return { id: key.id, secret: key.secret };
}

export async function addUsers(db: Database, users: readonly UserProfile[]): Promise<void> {
  await upsertUsers(db.write, users);
}

export async function addWagers(db: Database, wagers: readonly WagerRecord[]): Promise<void> {
  for (let i = 0; i < wagers.length; i += 1000) {
    const unknown = await insertWagers(db.write, wagers.slice(i, i + 1000));
    if (unknown.length > 0) throw new Error(`unknown users in test data: ${unknown.join(", ")}`);
  }
}

let wagerSequence = 0;
/** A wager with a fresh id. */
export function wager(userId: string, amount: string, placedAt: number): WagerRecord {
  wagerSequence += 1;
  return { id: `w-${wagerSequence}-${Math.random().toString(36).slice(2, 8)}`, userId, amount, placedAt };
}
