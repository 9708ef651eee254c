/** SQL for API keys. Keys are stored only as SHA-256 hashes; this module never sees a secret. */
import type { Pool, ResultSetHeader, RowDataPacket } from "mysql2/promise";
import { ensureAffiliate } from "./affiliates.js";
import { inTransaction } from "./transactions.js";

export interface StoredApiKey {
  readonly id: string;
  readonly affiliateId: number;
  readonly affiliateExternalId: string;
  readonly label: string;
  readonly createdAt: number;
  readonly revokedAt: number | null;
  /** Unix seconds from which the key is refused; null: never expires. */
  readonly expiresAt: number | null;
  readonly rateLimit: { readonly points: number; readonly windowSeconds: number } | null;
}

const SELECT_KEY = `SELECT k.id, k.affiliate_id, a.external_id AS affiliate_external_id, k.label, k.created_at,
    k.revoked_at, k.expires_at, k.rate_limit_points, k.rate_limit_window_s, k.key_hash
  FROM api_keys k JOIN affiliates a ON a.id = k.affiliate_id`;

/** A new key row: id, hash, affiliate, label, expiry and limit in this order; created now by the database's clock. */
const INSERT_KEY = `INSERT INTO api_keys
    (id, key_hash, affiliate_id, label, created_at, expires_at, rate_limit_points, rate_limit_window_s)
  VALUES (?, ?, ?, ?, UNIX_TIMESTAMP(), ?, ?, ?)`;

function toStoredKey(row: RowDataPacket): StoredApiKey {
  return {
    id: String(row.id),
    affiliateId: Number(row.affiliate_id),
    affiliateExternalId: String(row.affiliate_external_id),
    label: String(row.label),
    createdAt: Number(row.created_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
    expiresAt: row.expires_at === null || row.expires_at === undefined ? null : Number(row.expires_at),
    rateLimit:
      row.rate_limit_points === null || row.rate_limit_window_s === null
        ? null
        : { points: Number(row.rate_limit_points), windowSeconds: Number(row.rate_limit_window_s) },
  };
}

export async function insertApiKey(
  pool: Pool,
  key: {
    id: string;
    hash: Buffer;
    affiliateExternalId: string;
    label: string;
    rateLimit: { points: number; windowSeconds: number } | null;
    expiresAt?: number | null;
  },
): Promise<StoredApiKey> {
  const affiliateId = await ensureAffiliate(pool, key.affiliateExternalId);
  await pool.execute(INSERT_KEY, [
    key.id,
    key.hash,
    affiliateId,
    key.label,
    key.expiresAt ?? null,
    key.rateLimit?.points ?? null,
    key.rateLimit?.windowSeconds ?? null,
  ]);
  const stored = await findApiKeyById(pool, key.id);
  if (stored === undefined) throw new Error(`key ${key.id} vanished right after insert`);
  return stored;
}

export async function findApiKeyByHash(
  pool: Pool,
  hash: Buffer,
): Promise<(StoredApiKey & { hash: Buffer }) | undefined> {
  const [rows] = await pool.execute<RowDataPacket[]>(`${SELECT_KEY} WHERE k.key_hash = ?`, [hash]);
  const row = rows[0];
  return row === undefined ? undefined : { ...toStoredKey(row), hash: row.key_hash as Buffer };
}

export async function findApiKeyById(pool: Pool, id: string): Promise<StoredApiKey | undefined> {
  const [rows] = await pool.execute<RowDataPacket[]>(`${SELECT_KEY} WHERE k.id = ?`, [id]);
  return rows[0] === undefined ? undefined : toStoredKey(rows[0]);
}

/** Every key, or only those of one affiliate (by the platform's id), oldest first. */
export async function listApiKeys(pool: Pool, affiliateExternalId?: string): Promise<StoredApiKey[]> {
  const [rows] =
    affiliateExternalId === undefined
      ? await pool.query<RowDataPacket[]>(`${SELECT_KEY} ORDER BY k.created_at, k.id`)
      : await pool.query<RowDataPacket[]>(`${SELECT_KEY} WHERE a.external_id = ? ORDER BY k.created_at, k.id`, [
          affiliateExternalId,
        ]);
  return rows.map(toStoredKey);
}

/**
 * Rotation: a new key for the same affiliate, label and limit, and the old key expiring at
 * `oldExpiresAt` (never later than it already would), in one transaction. Returns undefined when
 * the old key does not exist; a revoked old key stays revoked.
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
      "SELECT id, affiliate_id, label, expires_at, rate_limit_points, rate_limit_window_s FROM api_keys WHERE id = ? FOR UPDATE",
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
    ]);
    return true;
  });
  if (!found) return undefined;
  const [old, created] = await Promise.all([findApiKeyById(pool, oldId), findApiKeyById(pool, fresh.id)]);
  if (old === undefined || created === undefined) throw new Error(`key ${oldId} or ${fresh.id} vanished`);
  return { old, created };
}

/** Marks a key revoked; returns false when no such key exists. Revoking twice keeps the first time. */
export async function revokeApiKey(pool: Pool, id: string): Promise<boolean> {
  const [result] = await pool.execute<ResultSetHeader>(
    "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, UNIX_TIMESTAMP()) WHERE id = ?",
    [id],
  );
  return result.affectedRows > 0;
}

export async function setApiKeyRateLimit(
  pool: Pool,
  id: string,
  rateLimit: { points: number; windowSeconds: number } | null,
): Promise<boolean> {
  const [result] = await pool.execute<ResultSetHeader>(
    "UPDATE api_keys SET rate_limit_points = ?, rate_limit_window_s = ? WHERE id = ?",
    [rateLimit?.points ?? null, rateLimit?.windowSeconds ?? null, id],
  );
  return result.affectedRows > 0;
}
