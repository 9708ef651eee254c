/**
 * Voids: taking recorded wagers out of the totals for good (VoidWagers, `import` void lines,
 * `seed --void-per-mille`), one transaction per call, so `wagers` and the rollups only ever hold
 * wagers that count. The steps and the races: docs/architecture.md, "Voiding wagers".
 */
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";
import {
  DEFAULT_RETRY_POLICY,
  inTransaction,
  oncePerConnection,
  type RetryPolicy,
} from "../../platform/database/transactions.js";
import type { VoidOutcome } from "../../ports/ingest.js";
import { noteRaceVoids } from "../../races/sql/race-history.js";
import { noteWagerTimes } from "./data-changes.js";
import { refusePrunedVoids } from "./retention-guards.js";
import { ROLLUPS, WEIGHT_DISCOUNT_OF_WAGER, WEIGHTED_AMOUNT_OF_WAGER } from "./rollups.js";

export type { VoidOutcome };

const VOID_STAGE = "void_stage";

/** Voids the given wager ids (already valid) all or nothing; an id repeated counts once. */
export async function voidWagerBatch(
  pool: Pool,
  wagerIds: readonly string[],
  policy: RetryPolicy = DEFAULT_RETRY_POLICY,
): Promise<VoidOutcome> {
  const ids = [...new Set(wagerIds)].sort((a, b) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8")));
  if (ids.length === 0) return { voided: 0, alreadyVoided: 0, pending: 0 };
  return inTransaction(
    pool,
    async (connection) => {
      await connection.query("INSERT IGNORE INTO wager_voids (external_id, requested_at) VALUES ?", [
        ids.map((id) => [id, Math.floor(Date.now() / 1000)]),
      ]);
      const [counting] = await connection.query<RowDataPacket[]>(
        `SELECT id, external_id, user_id, affiliate_id, amount, placed_at, weight_bps FROM wagers
          WHERE external_id IN (?) ORDER BY external_id FOR UPDATE`,
        [ids],
      );
      const [applied] = await connection.query<RowDataPacket[]>(
        "SELECT external_id FROM wager_voids WHERE external_id IN (?) AND applied_at IS NOT NULL FOR UPDATE",
        [ids],
      );
      const known = new Set([...counting, ...applied].map((r) => String(r.external_id)));
      await refusePrunedVoids(
        connection,
        ids.filter((id) => !known.has(id)),
      );
      if (counting.length > 0) await takeOut(pool, connection, counting);
      return {
        voided: counting.length,
        alreadyVoided: applied.length,
        pending: ids.length - counting.length - applied.length,
      };
    },
    policy,
  );
}

async function takeOut(pool: Pool, connection: PoolConnection, rows: readonly RowDataPacket[]): Promise<void> {
  await oncePerConnection(pool, connection, VOID_STAGE, () =>
    connection.query(
      `CREATE TEMPORARY TABLE IF NOT EXISTS ${VOID_STAGE} (
        id BIGINT UNSIGNED NOT NULL PRIMARY KEY, external_id VARBINARY(256) NOT NULL,
        user_id INT UNSIGNED NOT NULL, affiliate_id INT UNSIGNED NOT NULL,
        amount DECIMAL(20,8) NOT NULL, placed_at INT UNSIGNED NOT NULL, weight_bps SMALLINT UNSIGNED NOT NULL
      ) ENGINE=MEMORY`,
    ),
  );
  await connection.query(`DELETE FROM ${VOID_STAGE}`);
  await connection.query(
    `INSERT INTO ${VOID_STAGE} (id, external_id, user_id, affiliate_id, amount, placed_at, weight_bps) VALUES ?`,
    [rows.map((r) => [r.id, r.external_id, r.user_id, r.affiliate_id, String(r.amount), r.placed_at, r.weight_bps])],
  );
  // Races live or reviewing whose period holds these wagers count them (a race's history, ../../races/sql/race-history.ts).
  await noteRaceVoids(connection, VOID_STAGE);
  for (const { table, bucketOf } of ROLLUPS) {
    // The rollup rows exist (the wagers were added to them when recorded); subtract both sums exactly.
    await connection.query(
      `UPDATE ${table} t JOIN (
          SELECT affiliate_id, ${bucketOf("placed_at")} AS b, user_id, SUM(amount) AS s,
                 SUM(${WEIGHT_DISCOUNT_OF_WAGER}) AS d, SUM(${WEIGHTED_AMOUNT_OF_WAGER}) AS w, COUNT(*) AS c
            FROM ${VOID_STAGE} GROUP BY affiliate_id, b, user_id) d
         ON t.affiliate_id = d.affiliate_id AND t.bucket = d.b AND t.user_id = d.user_id
        SET t.total = t.total - d.s, t.weight_discount = t.weight_discount - d.d,
            t.weighted_sum = t.weighted_sum - d.w, t.wagers = t.wagers - d.c`,
    );
    await connection.query(
      `DELETE t FROM ${table} t JOIN (
          SELECT DISTINCT affiliate_id, ${bucketOf("placed_at")} AS b, user_id FROM ${VOID_STAGE}) d
         ON t.affiliate_id = d.affiliate_id AND t.bucket = d.b AND t.user_id = d.user_id
      WHERE t.wagers = 0`,
    );
  }
  await connection.query(
    `UPDATE wager_voids v JOIN ${VOID_STAGE} s ON s.external_id = v.external_id
        SET v.applied_at = UNIX_TIMESTAMP(), v.user_id = s.user_id, v.affiliate_id = s.affiliate_id,
            v.amount = s.amount, v.placed_at = s.placed_at, v.weight_bps = s.weight_bps`,
  );
  await connection.query(`DELETE w FROM wagers w JOIN ${VOID_STAGE} s ON s.id = w.id`);
  await noteWagerTimes(
    connection,
    rows.map((r) => ({
      affiliateId: Number(r.affiliate_id),
      placedAt: Number(r.placed_at),
      userId: Number(r.user_id),
    })),
  );
}
