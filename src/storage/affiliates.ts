/** SQL for affiliates: the platform's opaque affiliate ids mapped to compact internal keys. */
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";

/** Returns the internal key of an affiliate, creating the row on first sight. */
export async function ensureAffiliate(db: Pool | PoolConnection, externalId: string): Promise<number> {
  await db.execute("INSERT IGNORE INTO affiliates (external_id, created_at) VALUES (?, UNIX_TIMESTAMP())", [
    externalId,
  ]);
  const [rows] = await db.execute<RowDataPacket[]>("SELECT id FROM affiliates WHERE external_id = ?", [externalId]);
  const id = rows[0]?.id;
  if (id === undefined) throw new Error(`affiliate ${externalId} could not be created`);
  return Number(id);
}
