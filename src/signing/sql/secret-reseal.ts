/**
 * Seals again, under the current WEBHOOK_SECRET_KEY, every stored secret that is kept plain (endpoints made before
 * a key was set) or sealed by a previous key of the ring (../../platform/database/secret-box.ts): the webhook endpoints' signing
 * secrets (current and previous) and the private halves of the signing keys (results', live, and the results log's). Each row is written by a
 * compare-and-set on the value read, so instances doing this at once, or a rotation meanwhile, never lose a secret.
 */
import type { Pool, ResultSetHeader, RowDataPacket } from "mysql2/promise";
import type { SecretBox } from "../../platform/database/secret-box.js";
import { SEALED_KEY_KINDS } from "./sealed-keys.js";

export interface ResealReport {
  /** Values sealed again under the current key. */
  readonly resealed: number;
  /** Values no key of the ring opens (left as they are): the key that sealed them is missing. */
  readonly unreadable: number;
}

/** Where sealed values live: table, key column, sealed column, and the additional data each was sealed with. */
const SEALED_COLUMNS = [
  { table: "webhook_endpoints", key: "id", column: "secret", aad: (id: string) => id },
  { table: "webhook_endpoints", key: "id", column: "previous_secret", aad: (id: string) => id },
  // Every kind of sealed key (./sealed-keys.ts): the results' keys, the live key, the results log's note key.
  ...SEALED_KEY_KINDS.map((kind) => ({
    table: kind.table,
    key: kind.id,
    column: "private_sealed",
    aad: kind.sealedAs,
  })),
] as const;

export async function resealSecrets(pool: Pool, box: SecretBox): Promise<ResealReport> {
  let resealed = 0;
  let unreadable = 0;
  for (const { table, key, column, aad } of SEALED_COLUMNS) {
    const [rows] = await pool.query<RowDataPacket[]>(
      `SELECT ${key} AS k, ${column} AS sealed FROM ${table} WHERE ${column} IS NOT NULL`,
    );
    for (const row of rows) {
      const id = String(row.k);
      const stored = row.sealed as Buffer;
      if (!box.needsResealing(aad(id), stored)) continue;
      let secret: string;
      try {
        secret = box.open(aad(id), stored);
      } catch {
        unreadable += 1;
        continue;
      }
      const [result] = await pool.query<ResultSetHeader>(
        `UPDATE ${table} SET ${column} = ? WHERE ${key} = ? AND ${column} = ?`,
        [box.seal(aad(id), secret), id, stored],
      );
      resealed += result.affectedRows;
    }
  }
  return { resealed, unreadable };
}
