/**
 * SQL that records user profiles (the ingest service's UpsertUsers, `import`, `seed`): all or
 * nothing per batch, affiliates created on first sight, and a change row for every user whose
 * name, avatar or affiliate changed (data-changes.ts).
 */
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";
import { byCodePoint } from "../../platform/database/lock-order.js";
import { DEFAULT_RETRY_POLICY, inTransaction, type RetryPolicy } from "../../platform/database/transactions.js";
import type { UserProfile } from "../../values/records.js";
import { ensureAffiliates } from "./affiliates.js";
import { noteUserChanges } from "./data-changes.js";

export interface InternalUser {
  readonly id: number;
  readonly affiliateId: number;
}

interface StoredProfile extends InternalUser {
  readonly username: string;
  /** "" for none, as profiles are given. */
  readonly avatar: string;
}

/** The stored users of these platform ids: internal keys (all a wager batch needs) and profile. */
export async function usersByExternalId(
  connection: PoolConnection,
  externalIds: readonly string[],
): Promise<Map<string, StoredProfile>> {
  const [rows] = await connection.query<RowDataPacket[]>(
    "SELECT id, external_id, affiliate_id, username, avatar_url FROM users WHERE external_id IN (?)",
    [externalIds],
  );
  return byExternalId(rows, (r) => ({
    id: Number(r.id),
    affiliateId: Number(r.affiliate_id),
    username: String(r.username),
    avatar: r.avatar_url === null ? "" : String(r.avatar_url),
  }));
}

/** Rows keyed by their `external_id` column. */
export function byExternalId<T>(rows: readonly RowDataPacket[], value: (row: RowDataPacket) => T): Map<string, T> {
  return new Map(rows.map((row) => [String(row.external_id), value(row)]));
}

/**
 * Creates or replaces user profiles all or nothing; the last profile of an id
 * in the batch wins. Affiliates are created on first sight. Returns the number
 * of distinct users written.
 */
export async function upsertUserBatch(
  pool: Pool,
  users: readonly UserProfile[],
  policy: RetryPolicy = DEFAULT_RETRY_POLICY,
): Promise<number> {
  if (users.length === 0) return 0;
  const latest = new Map<string, UserProfile>();
  for (const user of users) {
    latest.delete(user.id);
    latest.set(user.id, user);
  }
  const profiles = [...latest.values()].sort((a, b) => byCodePoint(a.id, b.id));
  const now = Math.floor(Date.now() / 1000);
  await inTransaction(pool, (connection) => writeProfiles(connection, profiles, now), policy);
  return profiles.length;
}

const UPSERT_PROFILE = `ON DUPLICATE KEY UPDATE affiliate_id = VALUES(affiliate_id), username = VALUES(username),
        avatar_url = VALUES(avatar_url), updated_at = VALUES(updated_at)`;

/** Writes the profiles (known users by their internal id, new ones after) and notes the changed ones. */
async function writeProfiles(connection: PoolConnection, profiles: readonly UserProfile[], now: number): Promise<void> {
  const affiliates = await ensureAffiliates(connection, [...new Set(profiles.map((u) => u.affiliateId))]);
  const existing = await usersByExternalId(
    connection,
    profiles.map((u) => u.id),
  );
  const values = (u: UserProfile) => [
    u.id,
    affiliates.get(u.affiliateId),
    u.username,
    u.avatar === "" ? null : u.avatar,
    now,
  ];
  // Known users are written with their internal id, so updating them allocates no
  // AUTO_INCREMENT values (an upsert by external id alone would burn one per row).
  const known = profiles.filter((u) => existing.has(u.id));
  if (known.length > 0) {
    await connection.query(
      `INSERT INTO users (id, external_id, affiliate_id, username, avatar_url, updated_at) VALUES ? ${UPSERT_PROFILE}`,
      [known.map((u) => [existing.get(u.id)?.id, ...values(u)])],
    );
  }
  await noteUserChanges(
    connection,
    changedProfiles(known, existing, affiliates).map((u) => u.id),
  );
  const created = profiles.filter((u) => !existing.has(u.id));
  if (created.length > 0) {
    // Still an upsert: a concurrent call may create the same user first.
    await connection.query(
      `INSERT INTO users (external_id, affiliate_id, username, avatar_url, updated_at) VALUES ? ${UPSERT_PROFILE}`,
      [created.map(values)],
    );
  }
}

/**
 * The known users whose name, avatar or affiliate changed: that alters every answer that lists them. A new
 * user has no wagers yet, so it alters none.
 */
function changedProfiles(
  known: readonly UserProfile[],
  existing: ReadonlyMap<string, StoredProfile>,
  affiliates: ReadonlyMap<string, number>,
): UserProfile[] {
  return known.filter((u) => {
    const before = existing.get(u.id);
    return (
      before !== undefined &&
      (before.username !== u.username ||
        before.avatar !== u.avatar ||
        before.affiliateId !== affiliates.get(u.affiliateId))
    );
  });
}
