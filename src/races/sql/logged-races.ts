/**
 * The races the results log should hold, as the database has them (`topwagers log verify`): every final race, and
 * every race cancelled after its start, with the entry each should have (results-log/core/log-entry.ts), by internal
 * key, a page at a time. The entry's `sha256` is the signed result's, null for a result frozen unsigned.
 */
import type { Pool, RowDataPacket } from "mysql2/promise";
import type { LoggableRace } from "../../ports/results-log.js";

export async function loggableRaces(pool: Pool, after: number, limit: number): Promise<LoggableRace[]> {
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT r.id, r.public_id, a.external_id, r.frozen_at, r.cancelled_at, r.digest, s.sha256
       FROM races r
       JOIN affiliates a ON a.id = r.affiliate_id
       LEFT JOIN race_signed_results s ON s.race_id = r.id
      WHERE r.id > ? AND (r.frozen_at IS NOT NULL OR (r.cancelled_at IS NOT NULL AND r.start_ts <= r.cancelled_at))
      ORDER BY r.id LIMIT ?`,
    [after, limit],
  );
  return rows.map((row) => {
    const common = { affiliateId: String(row.external_id), raceId: String(row.public_id) };
    const key = Number(row.id);
    if (row.frozen_at === null) return { key, event: { kind: "cancelled", ...common, at: Number(row.cancelled_at) } };
    const sha256 = row.sha256 === null ? null : String(row.sha256);
    return { key, event: { kind: "final", ...common, at: Number(row.frozen_at), digest: String(row.digest), sha256 } };
  });
}
