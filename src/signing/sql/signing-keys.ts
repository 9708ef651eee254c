/**
 * The signing keys tables: the results' keys in `signing_keys` (migration 13), the live key in
 * `live_signing_keys` (migration 19), the same shape. Apart, so that no release reading `signing_keys` (0.4.0
 * does, during a rolling upgrade) publishes a live key with the results' keys or signs a result with it. The
 * private half (`d`) is stored sealed by the same box as the webhook secrets (../../platform/database/secret-box.ts: AES-256-GCM
 * under WEBHOOK_SECRET_KEY, or marked plain without one), with `signing-key:{kid}` (a live key:
 * `live-signing-key:{kid}`) as its additional data, so a sealed key copied onto another row, or into the other
 * table, does not open. At most one key per table is active: `active` is 1 on that row and NULL on every other,
 * under a unique index.
 */
import type { Pool, RowDataPacket } from "mysql2/promise";
import { ER_DUP_ENTRY, ER_LOCK_DEADLOCK, errnoOf } from "../../platform/database/database-errors.js";
import type { SecretBox } from "../../platform/database/secret-box.js";
import { inTransaction } from "../../platform/database/transactions.js";
import type { ActiveSigningKey, PublishedSigningKey, SigningKeyPurpose, SigningKeyStore } from "../../ports/signing.js";

/** Each purpose's table, and the additional data its private halves are sealed with. */
export const SIGNING_KEY_TABLES = {
  result: { table: "signing_keys", sealedAs: (kid: string) => `signing-key:${kid}` },
  live: { table: "live_signing_keys", sealedAs: (kid: string) => `live-signing-key:${kid}` },
} as const;

export function mariadbSigningKeys(pool: Pool, box: SecretBox, purpose: SigningKeyPurpose = "result"): SigningKeyStore {
  const { table, sealedAs } = SIGNING_KEY_TABLES[purpose];
  return {
    insert: async (key, at) => {
      await pool.query(`INSERT INTO ${table} (kid, public_x, private_sealed, created_at) VALUES (?, ?, ?, ?)`, [
        key.kid,
        key.x,
        box.seal(sealedAs(key.kid), key.d),
        at,
      ]);
    },
    insertActiveUnlessAny: async (key, at) => {
      try {
        await pool.query(
          `INSERT INTO ${table} (kid, public_x, private_sealed, created_at, active, activated_at)
           VALUES (?, ?, ?, ?, 1, ?)`,
          [key.kid, key.x, box.seal(sealedAs(key.kid), key.d), at, at],
        );
        return true;
      } catch (error) {
        // The unique index on `active`: another instance's key went in first (on Galera, a certification conflict).
        if (errnoOf(error) === ER_DUP_ENTRY || errnoOf(error) === ER_LOCK_DEADLOCK) return false;
        throw error;
      }
    },
    list: async () => {
      const [rows] = await pool.query<RowDataPacket[]>(
        `SELECT kid, public_x, active, created_at, activated_at, retired_at FROM ${table} ORDER BY created_at, kid`,
      );
      return rows.map(publishedKey);
    },
    active: async () => {
      const [rows] = await pool.query<RowDataPacket[]>(
        `SELECT kid, public_x, private_sealed FROM ${table} WHERE active = 1`,
      );
      const row = rows[0];
      if (row === undefined) return undefined;
      const kid = String(row.kid);
      const key: ActiveSigningKey = { kid, x: String(row.public_x), d: box.open(sealedAs(kid), row.private_sealed) };
      return key;
    },
    activate: (kid, at) => activateKey(pool, table, kid, at),
    retire: async (kid, at) => {
      const [rows] = await pool.query<RowDataPacket[]>(`SELECT active FROM ${table} WHERE kid = ?`, [kid]);
      if (rows[0] === undefined) return "not_found";
      if (Number(rows[0].active) === 1) return "active";
      await pool.query(`UPDATE ${table} SET retired_at = COALESCE(retired_at, ?) WHERE kid = ? AND active IS NULL`, [
        at,
        kid,
      ]);
      return "retired";
    },
  };
}

async function activateKey(
  pool: Pool,
  table: string,
  kid: string,
  at: number,
): Promise<"activated" | "not_found" | "retired"> {
  return inTransaction(pool, async (connection) => {
    const [rows] = await connection.query<RowDataPacket[]>(
      `SELECT active, retired_at FROM ${table} WHERE kid = ? FOR UPDATE`,
      [kid],
    );
    const row = rows[0];
    if (row === undefined) return "not_found";
    if (row.retired_at !== null) return "retired";
    if (Number(row.active) === 1) return "activated";
    await connection.query(`UPDATE ${table} SET active = NULL, retired_at = ? WHERE active = 1`, [at]);
    await connection.query(`UPDATE ${table} SET active = 1, activated_at = ? WHERE kid = ?`, [at, kid]);
    return "activated";
  });
}

function publishedKey(row: RowDataPacket): PublishedSigningKey {
  const retiredAt = row.retired_at === null ? null : Number(row.retired_at);
  return {
    kid: String(row.kid),
    x: String(row.public_x),
    state: Number(row.active) === 1 ? "active" : retiredAt !== null ? "retired" : "new",
    createdAt: Number(row.created_at),
    activatedAt: row.activated_at === null ? null : Number(row.activated_at),
    retiredAt,
  };
}
