/**
 * The MariaDB adapter of the change feed's port (src/ports/changes.ts): the change rows
 * (../../ingest/sql/data-changes.ts) bound to a pool.
 */
import type { Pool, RowDataPacket } from "mysql2/promise";
import { changeIdsBetween, latestChangeId, pruneChanges, readChanges } from "../../ingest/sql/data-changes.js";
import type { ChangeStore } from "../../ports/changes.js";

export function mariadbChanges(pool: Pool): ChangeStore {
  return {
    idStep: () => autoIncrementStep(pool),
    latestChangeId: () => latestChangeId(pool),
    changeIdsBetween: (from, to) => changeIdsBetween(pool, from, to),
    readChanges: (afterId, missingIds, limit) => readChanges(pool, afterId, missingIds, limit),
    prune: (olderThanSeconds) => pruneChanges(pool, olderThanSeconds),
  };
}

/** `@@auto_increment_increment`: the change ids' step (the cluster size on Galera). */
async function autoIncrementStep(pool: Pool): Promise<number> {
  const [rows] = await pool.query<RowDataPacket[]>("SELECT @@auto_increment_increment AS step");
  const step = Number(rows[0]?.step ?? 1);
  return Number.isInteger(step) && step > 0 ? step : 1;
}
