/**
 * Appending to the results log, inside the transaction that freezes or cancels a race (races/sql/race-steps.ts
 * writeFreeze, races/sql/races.ts cancelRace): the next index is taken by updating the log's one head row, so
 * appends serialise on that row from this statement to their commit, indexes are dense, and an entry is committed
 * exactly when its race's freeze or cancellation is. Called last in those transactions, after every other lock they
 * take (the race's row, the affiliate's), so the head row is held for the fewest statements and locks are always
 * taken in one order. On Galera two nodes' appends conflict at certification and one retries. The unique public id
 * logs a race once.
 */
import type { PoolConnection, ResultSetHeader } from "mysql2/promise";
import type { LoggedEvent, LogPlace } from "../../ports/results-log.js";
import { entryBytes } from "../core/log-entry.js";
import { leafHash } from "../core/merkle.js";

/** Appends the race's entry and gives its place (index and text). */
export async function appendToLog(connection: PoolConnection, event: LoggedEvent): Promise<LogPlace> {
  const entry = entryBytes(event);
  // LAST_INSERT_ID(expr) hands the new size back in the statement's own answer: one round trip for the index.
  const [head] = await connection.query<ResultSetHeader>(
    "UPDATE log_head SET size = LAST_INSERT_ID(size + 1) WHERE id = 1",
  );
  if (head.affectedRows !== 1) throw new Error("the results log's head row is missing (migration 21)");
  const index = Number(head.insertId) - 1;
  await connection.query("INSERT INTO log_entries (idx, race_public_id, entry, leaf_hash) VALUES (?, ?, ?, ?)", [
    index,
    event.raceId,
    Buffer.from(entry),
    Buffer.from(leafHash(entry)),
  ]);
  return { index, entry: new TextDecoder().decode(entry) };
}
