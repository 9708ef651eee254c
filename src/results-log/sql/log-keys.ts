/**
 * The results log's note key at rest (migration 21's `log_signing_keys`): its name (the log's origin), the public
 * key (base64 of its 32 bytes) and the private seed sealed by the webhook secrets' box (AES-256-GCM under
 * WEBHOOK_SECRET_KEY, or marked plain without one: ../../platform/database/secret-box.ts) with
 * `log-signing-key:{key_id}` as its additional data, so a sealed seed copied onto another row, or into another
 * table, does not open. One key, made once for the fleet: `active` is 1 on it, and the unique index lets only one
 * instance's key in. The private seed is never logged, answered or counted.
 */
import type { Pool, RowDataPacket } from "mysql2/promise";
import { ER_DUP_ENTRY, ER_LOCK_DEADLOCK, errnoOf } from "../../platform/database/database-errors.js";
import type { SecretBox } from "../../platform/database/secret-box.js";
import type { LogKey } from "../../ports/results-log.js";
import { keyId } from "../core/signed-note.js";

/** The additional data a key's private seed is sealed with (../../signing/sql/secret-reseal.ts reseals it). */
export const sealedLogKeyAs = (id: string) => `log-signing-key:${id}`;

const keyIdHex = (key: Pick<LogKey, "name" | "publicKey">) => Buffer.from(keyId(key)).toString("hex");

/** The key's name and public key, without opening its private seed (no WEBHOOK_SECRET_KEY needed). */
export async function readLogPublicKey(pool: Pool): Promise<Pick<LogKey, "name" | "publicKey"> | undefined> {
  const [rows] = await pool.query<RowDataPacket[]>("SELECT name, public_key FROM log_signing_keys WHERE active = 1");
  const row = rows[0];
  if (row === undefined) return undefined;
  return {
    name: Buffer.from(row.name).toString("utf8"),
    publicKey: new Uint8Array(Buffer.from(String(row.public_key), "base64")),
  };
}

export async function readLogKey(pool: Pool, box: SecretBox): Promise<LogKey | undefined> {
  const [rows] = await pool.query<RowDataPacket[]>(
    "SELECT key_id, name, public_key, private_sealed FROM log_signing_keys WHERE active = 1",
  );
  const row = rows[0];
  if (row === undefined) return undefined;
  const id = String(row.key_id);
  return {
    name: Buffer.from(row.name).toString("utf8"),
    publicKey: new Uint8Array(Buffer.from(String(row.public_key), "base64")),
    privateSeed: box.open(sealedLogKeyAs(id), row.private_sealed),
  };
}

/** Stores `key` as the log's key unless one is there: false when another instance's went in first. */
export async function insertLogKeyUnlessAny(pool: Pool, box: SecretBox, key: LogKey, at: number): Promise<boolean> {
  const id = keyIdHex(key);
  try {
    await pool.query(
      `INSERT INTO log_signing_keys (key_id, name, public_key, private_sealed, created_at, active)
       VALUES (?, ?, ?, ?, ?, 1)`,
      [
        id,
        Buffer.from(key.name, "utf8"),
        Buffer.from(key.publicKey).toString("base64"),
        box.seal(sealedLogKeyAs(id), key.privateSeed),
        at,
      ],
    );
    return true;
  } catch (error) {
    // The unique index on `active`: another instance's key went in first (on Galera, a certification conflict).
    if (errnoOf(error) === ER_DUP_ENTRY || errnoOf(error) === ER_LOCK_DEADLOCK) return false;
    throw error;
  }
}
