/**
 * SQL for API keys. Keys are stored only as SHA-256 hashes; this module never sees a secret.
 * Every change of a key writes a change row with the key's id in the same transaction
 * (data-changes.ts), so every instance's in-memory key set follows it within a poll.
 */
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";
import { ensureAffiliate } from "../../ingest/sql/affiliates.js";
import { noteKeyChanges } from "../../ingest/sql/data-changes.js";
import { numberOrNull } from "../../platform/database/row-values.js";
import { inTransaction } from "../../platform/database/transactions.js";
import type { NewStoredKey, StoredApiKey, StoredKeyWithHash } from "../../ports/api-keys.js";
import { normalScopes, type Scope, scopesOfKind } from "../../values/scopes.js";
import { isRankBy, type RankBy } from "../../values/weights.js";

export type { NewStoredKey, StoredApiKey, StoredKeyWithHash };

const SELECT_KEY = `SELECT k.id, k.affiliate_id, a.external_id AS affiliate_external_id, k.label, k.created_at,
    k.revoked_at, k.expires_at, k.rate_limit_points, k.rate_limit_window_s, k.publishable, k.allowed_origins,
    k.default_rank_by, k.scopes, k.key_hash
  FROM api_keys k JOIN affiliates a ON a.id = k.affiliate_id`;

/** A new key row; created now by the database's clock. */
const INSERT_KEY = `INSERT INTO api_keys
    (id, key_hash, affiliate_id, label, created_at, expires_at, rate_limit_points, rate_limit_window_s,
     publishable, allowed_origins, default_rank_by, scopes)
  VALUES (?, ?, ?, ?, UNIX_TIMESTAMP(), ?, ?, ?, ?, ?, ?, ?)`;

function origins(text: unknown): string[] {
  if (text === null || text === undefined) return [];
  const parsed: unknown = JSON.parse(String(text));
  return Array.isArray(parsed) ? parsed.map(String) : [];
}

/**
 * The scopes column: space-separated names (values/scopes.ts). NULL (a key written by a version
 * before scopes, during a rolling deploy): every scope its kind may hold, as migration 9 gave the
 * keys that existed. A name this version does not know is left out.
 */
function scopesOf(text: unknown, publishable: boolean): readonly Scope[] {
  if (text === null || text === undefined) return scopesOfKind(publishable);
  return normalScopes(String(text).split(" "), publishable);
}

/** The scopes column's text of a key's scopes. */
function scopesText(scopes: readonly Scope[]): string {
  return scopes.join(" ");
}

/**
 * A key row as the port's StoredApiKey. Each store maps its own table's row this way (webhooks/sql/webhooks.ts the
 * endpoints'): the mappers look alike line by line but follow different columns; what they share (reading a NULL
 * column) is in ../../platform/database/row-values.ts.
 */
function toStoredKey(row: RowDataPacket): StoredApiKey {
  return {
    id: String(row.id),
    affiliateId: Number(row.affiliate_id),
    affiliateExternalId: String(row.affiliate_external_id),
    label: String(row.label),
    createdAt: Number(row.created_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
    expiresAt: numberOrNull(row.expires_at),
    rateLimit:
      row.rate_limit_points === null || row.rate_limit_window_s === null
        ? null
        : { points: Number(row.rate_limit_points), windowSeconds: Number(row.rate_limit_window_s) },
    publishable: Number(row.publishable) === 1,
    allowedOrigins: origins(row.allowed_origins),
    defaultRankBy: isRankBy(row.default_rank_by) ? row.default_rank_by : null,
    scopes: scopesOf(row.scopes, Number(row.publishable) === 1),
  };
}

function withHash(row: RowDataPacket): StoredKeyWithHash {
  return { ...toStoredKey(row), hash: row.key_hash as Buffer };
}

export async function insertApiKey(pool: Pool, key: NewStoredKey): Promise<StoredApiKey> {
  await inTransaction(pool, async (connection) => {
    const affiliateId = await ensureAffiliate(connection, key.affiliateExternalId);
    await connection.execute(INSERT_KEY, [
      key.id,
      key.hash,
      affiliateId,
      key.label,
      key.expiresAt ?? null,
      key.rateLimit?.points ?? null,
      key.rateLimit?.windowSeconds ?? null,
      key.publishable === true ? 1 : 0,
      key.publishable === true ? JSON.stringify(key.allowedOrigins ?? []) : null,
      key.defaultRankBy ?? null,
      scopesText(key.scopes ?? scopesOfKind(key.publishable === true)),
    ]);
    await noteKeyChanges(connection, [key.id]);
  });
  const stored = await findApiKeyById(pool, key.id);
  if (stored === undefined) throw new Error(`key ${key.id} vanished right after insert`);
  return stored;
}

export async function findApiKeyById(pool: Pool, id: string): Promise<StoredApiKey | undefined> {
  const [rows] = await pool.execute<RowDataPacket[]>(`${SELECT_KEY} WHERE k.id = ?`, [id]);
  return rows[0] === undefined ? undefined : toStoredKey(rows[0]);
}

/** Keys by id, with their hashes (the key set reloading the keys a change named); unknown ids are left out. */
export async function findApiKeysByIds(pool: Pool, ids: readonly string[]): Promise<StoredKeyWithHash[]> {
  if (ids.length === 0) return [];
  const [rows] = await pool.query<RowDataPacket[]>(`${SELECT_KEY} WHERE k.id IN (?)`, [ids]);
  return rows.map(withHash);
}

/** Every key that is neither revoked nor expired at `now` (Unix seconds), with its hash: the key set's start. */
export async function listUsableApiKeys(pool: Pool, now: number): Promise<StoredKeyWithHash[]> {
  const [rows] = await pool.query<RowDataPacket[]>(
    `${SELECT_KEY} WHERE k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > ?)`,
    [now],
  );
  return rows.map(withHash);
}

/**
 * Every key, or only those of one affiliate (by the platform's id), oldest first (then by id). Sorted
 * here, not by ORDER BY: with the TEXT column of allowed origins in the rows, the server would sort
 * them in an on-disk temporary table.
 */
export async function listApiKeys(pool: Pool, affiliateExternalId?: string): Promise<StoredApiKey[]> {
  const [rows] =
    affiliateExternalId === undefined
      ? await pool.query<RowDataPacket[]>(SELECT_KEY)
      : await pool.query<RowDataPacket[]>(`${SELECT_KEY} WHERE a.external_id = ?`, [affiliateExternalId]);
  // Ids are ASCII: comparing strings by code unit is the column's binary order.
  return rows.map(toStoredKey).sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * Rotation: a new key for the same affiliate, label, limit, kind, origins, default ranking and scopes, and the old key
 * expiring at `oldExpiresAt` (never later than it already would), in one transaction. Returns
 * undefined when the old key does not exist; a revoked old key stays revoked.
 */
export async function rotateApiKey(
  pool: Pool,
  oldId: string,
  fresh: { id: string; hash: Buffer },
  oldExpiresAt: number,
): Promise<{ old: StoredApiKey; created: StoredApiKey } | undefined> {
  // One transaction, retried on deadlock or a cluster's certification conflict like every write.
  const found = await inTransaction(pool, async (connection) => {
    const [rows] = await connection.query<RowDataPacket[]>(
      `SELECT id, affiliate_id, label, expires_at, rate_limit_points, rate_limit_window_s, publishable,
          allowed_origins, default_rank_by, scopes
        FROM api_keys WHERE id = ? FOR UPDATE`,
      [oldId],
    );
    const old = rows[0];
    if (old === undefined) return false;
    await connection.query("UPDATE api_keys SET expires_at = LEAST(COALESCE(expires_at, ?), ?) WHERE id = ?", [
      oldExpiresAt,
      oldExpiresAt,
      oldId,
    ]);
    await connection.query(INSERT_KEY, [
      fresh.id,
      fresh.hash,
      old.affiliate_id,
      old.label,
      old.expires_at,
      old.rate_limit_points,
      old.rate_limit_window_s,
      old.publishable,
      old.allowed_origins,
      old.default_rank_by,
      old.scopes,
    ]);
    await noteKeyChanges(connection, [oldId, fresh.id]);
    return true;
  });
  if (!found) return undefined;
  const [old, created] = await Promise.all([findApiKeyById(pool, oldId), findApiKeyById(pool, fresh.id)]);
  if (old === undefined || created === undefined) throw new Error(`key ${oldId} or ${fresh.id} vanished`);
  return { old, created };
}

/** Runs one UPDATE of a key and notes the change; false when no such key exists. */
async function updateKey(pool: Pool, id: string, sql: string, params: unknown[]): Promise<boolean> {
  return inTransaction(pool, async (connection: PoolConnection) => {
    const [rows] = await connection.query<RowDataPacket[]>("SELECT id FROM api_keys WHERE id = ? FOR UPDATE", [id]);
    if (rows.length === 0) return false;
    await connection.query(sql, params);
    await noteKeyChanges(connection, [id]);
    return true;
  });
}

/** Marks a key revoked; returns false when no such key exists. Revoking twice keeps the first time. */
export function revokeApiKey(pool: Pool, id: string): Promise<boolean> {
  return updateKey(pool, id, "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, UNIX_TIMESTAMP()) WHERE id = ?", [
    id,
  ]);
}

export function setApiKeyRateLimit(
  pool: Pool,
  id: string,
  rateLimit: { points: number; windowSeconds: number } | null,
): Promise<boolean> {
  return updateKey(pool, id, "UPDATE api_keys SET rate_limit_points = ?, rate_limit_window_s = ? WHERE id = ?", [
    rateLimit?.points ?? null,
    rateLimit?.windowSeconds ?? null,
    id,
  ]);
}

/** Sets how a key's boards rank when a request does not say (null: no default); false when no such key exists. */
export function setApiKeyRankBy(pool: Pool, id: string, rankBy: RankBy | null): Promise<boolean> {
  return updateKey(pool, id, "UPDATE api_keys SET default_rank_by = ? WHERE id = ?", [rankBy, id]);
}

/** Whether the platform has sent any user of this affiliate yet (a key for an unknown affiliate reads nothing). */
export async function affiliateHasUsers(pool: Pool, affiliateExternalId: string): Promise<boolean> {
  const [rows] = await pool.query<RowDataPacket[]>(
    "SELECT 1 FROM users u JOIN affiliates a ON a.id = u.affiliate_id WHERE a.external_id = ? LIMIT 1",
    [affiliateExternalId],
  );
  return rows.length > 0;
}
