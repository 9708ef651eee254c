/** Test data written through the storage modules, and API keys made as the CLI makes them. */
import type { Pool, RowDataPacket } from "mysql2/promise";
import { generateApiKey } from "../../src/keys/core/api-key-secret.js";
import { insertApiKey } from "../../src/keys/sql/api-keys.js";
import type { Database } from "../../src/platform/database/database.js";
import type { Scope } from "../../src/values/scopes.js";
import { insertWagers, type UserProfile, upsertUsers, type WagerRecord } from "./users-and-wagers.js";

/** Apps of this test process that hold keys in memory: a key made here is waited for by each (keysFollowed). */
const followers = new Set<{ caughtUp(): Promise<void> }>();

/**
 * Makes `createKey` (and `keysFollowed`) wait until this app holds every key change committed so
 * far, as a running service does within a change-feed poll. Returns the undo.
 */
export function followKeys(app: { caughtUp(): Promise<void> }): () => void {
  followers.add(app);
  return () => followers.delete(app);
}

/** Resolves once every following app holds every key change committed before the call. */
export async function keysFollowed(): Promise<void> {
  await Promise.all(
    [...followers].map((app) =>
      Promise.race([app.caughtUp(), new Promise<void>((resolve) => setTimeout(resolve, 5_000).unref())]),
    ),
  );
}

/** The internal id of an affiliate (created with its first user) by its external id. */
export async function affiliateKey(pool: Pool, externalId: string): Promise<number> {
  const [rows] = await pool.query<RowDataPacket[]>("SELECT id FROM affiliates WHERE external_id = ?", [externalId]);
  if (rows[0] === undefined) throw new Error(`no affiliate ${externalId}`);
  return Number(rows[0].id);
}

export async function createKey(
  db: Database,
  affiliateId: string,
  rateLimit: { points: number; windowSeconds: number } | null = null,
  kind: { publishable: true; allowedOrigins: readonly string[] } | { publishable?: false } = {},
  /** What the key may do; absent: every scope of its kind. */
  scopes?: readonly Scope[],
): Promise<{ id: string; secret: string }> {
  const key = generateApiKey(kind.publishable === true ? "publishable" : "secret");
  await insertApiKey(db.write, {
    id: key.id,
    hash: key.hash,
    affiliateExternalId: affiliateId,
    label: "test",
    rateLimit,
    ...(kind.publishable === true ? { publishable: true, allowedOrigins: kind.allowedOrigins } : {}),
    ...(scopes === undefined ? {} : { scopes }),
  });
  await keysFollowed();
  return { id: key.id, secret: key.secret };
}

/** A secret key and a publishable key (no origins) of `affiliateId`: what a race's owner and its viewers read with. */
export async function secretAndPublishableKeys(
  db: Database,
  affiliateId: string,
): Promise<{ secret: { id: string; secret: string }; publishable: { id: string; secret: string } }> {
  const secret = await createKey(db, affiliateId);
  const publishable = await createKey(db, affiliateId, null, { publishable: true, allowedOrigins: [] });
  return { secret, publishable };
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

/** `count` users without an avatar, the i-th with the id, affiliate and username `user(i)` gives. */
export function usersWithoutAvatar(
  count: number,
  user: (i: number) => { id: string; affiliateId: string; username: string },
): UserProfile[] {
  return Array.from({ length: count }, (_, i) => ({ ...user(i), avatar: "" }));
}

let wagerSequence = 0;
/** A wager with a fresh id. */
export function wager(userId: string, amount: string, placedAt: number): WagerRecord {
  wagerSequence += 1;
  return { id: `w-${wagerSequence}-${Math.random().toString(36).slice(2, 8)}`, userId, amount, placedAt };
}

/** A user and their wagers: id, username, avatar, then each wager as [amount, placedAt]. */
export type UserRow = readonly [id: string, username: string, avatar: string, ...wagers: (readonly [string, number])[]];

/** Adds users of one affiliate, one row each, and their wagers (each with a fresh id). */
export async function addBoard(db: Database, affiliateId: string, rows: readonly UserRow[]): Promise<void> {
  await addUsers(
    db,
    rows.map(([id, username, avatar]) => ({ id, affiliateId, username, avatar })),
  );
  await addWagers(
    db,
    rows.flatMap(([id, , , ...wagers]) => wagers.map(([amount, placedAt]) => wager(id, amount, placedAt))),
  );
}
