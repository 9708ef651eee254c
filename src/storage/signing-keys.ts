/**
 * The signing keys table (migration 13). The private half (`d`) is stored sealed by the same box as the
 * webhook secrets (./webhook-secrets.ts: AES-256-GCM under WEBHOOK_SECRET_KEY, or marked plain without
 * one), with `signing-key:{kid}` as its additional data, so a sealed key copied onto another row does
 * not open. At most one key is active: `active` is 1 on that row and NULL on every other, under a
 * unique index.
 */
import type { Pool, RowDataPacket } from "mysql2/promise";
import type { ActiveSigningKey, PublishedSigningKey, SigningKeyStore } from "../ports/signing.js";
import { inTransaction } from "./transactions.js";
import type { WebhookSecretBox } from "./webhook-secrets.js";

const sealedAs = (kid: string) => `signing-key:${kid}`;

export function mariadbSigningKeys(pool: Pool, box: WebhookSecretBox): SigningKeyStore {
  return {
    insert: async (key, at) => {
      await pool.query("INSERT INTO signing_keys (kid, public_x, private_sealed, created_at) VALUES (?, ?, ?, ?)", [
        key.kid,
        key.x,
        box.seal(sealedAs(key.kid), key.d),
        at,
      ]);
    },
    list: async () => {
      const [rows] = await pool.query<RowDataPacket[]>(
        `SELECT kid, public_x, active, created_at, activated_at, retired_at FROM signing_keys
          ORDER BY created_at, kid`,
      );
      return rows.map(publishedKey);
    },
    active: async () => {
      const [rows] = await pool.query<RowDataPacket[]>(
        "SELECT kid, public_x, private_sealed FROM signing_keys WHERE active = 1",
      );
      const row = rows[0];
      if (row === undefined) return undefined;
      const kid = String(row.kid);
      const key: ActiveSigningKey = { kid, x: String(row.public_x), d: box.open(sealedAs(kid), row.private_sealed) };
      return key;
    },
    activate: (kid, at) => activateKey(pool, kid, at),
    retire: async (kid, at) => {
      const [rows] = await pool.query<RowDataPacket[]>("SELECT active FROM signing_keys WHERE kid = ?", [kid]);
      if (rows[0] === undefined) return "not_found";
      if (Number(rows[0].active) === 1) return "active";
      await pool.query(
        "UPDATE signing_keys SET retired_at = COALESCE(retired_at, ?) WHERE kid = ? AND active IS NULL",
        [at, kid],
      );
      return "retired";
    },
  };
}

async function activateKey(pool: Pool, kid: string, at: number): Promise<"activated" | "not_found" | "retired"> {
  return inTransaction(pool, async (connection) => {
    const [rows] = await connection.query<RowDataPacket[]>(
      "SELECT active, retired_at FROM signing_keys WHERE kid = ? FOR UPDATE",
      [kid],
    );
    const row = rows[0];
    if (row === undefined) return "not_found";
    if (row.retired_at !== null) return "retired";
    if (Number(row.active) === 1) return "activated";
    await connection.query("UPDATE signing_keys SET active = NULL, retired_at = ? WHERE active = 1", [at]);
    await connection.query("UPDATE signing_keys SET active = 1, activated_at = ? WHERE kid = ?", [at, kid]);
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
