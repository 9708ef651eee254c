/**
 * SQL for the race clock's health (races/core/step-retry.ts): a failing step's wait written to the race's row,
 * and how long the oldest step still to take has been due (the topwagers_race_step_overdue_seconds gauge).
 */
import type { Pool, ResultSetHeader, RowDataPacket } from "mysql2/promise";
import { inTransaction } from "../../platform/database/transactions.js";
import type { NewRaceHistoryEntry } from "../../ports/race-history.js";
import { appendRaceHistory } from "./race-history.js";

/**
 * Puts the race's next step off until `until` (Unix seconds), unless it is final or cancelled: the clock's
 * scan (races/sql/races.ts DUE_RACES_SQL) meets it again only then, on every instance.
 */
export async function deferRaceStep(pool: Pool, id: string, until: number): Promise<void> {
  await pool.query(
    "UPDATE races SET next_step_at = ? WHERE public_id = ? AND frozen_at IS NULL AND cancelled_at IS NULL",
    [until, id],
  );
}

/**
 * Puts the race's next step off until `until`, as deferRaceStep does, and notes why in its history (`entry`, at
 * `at`), in one transaction: once, while the history's last entry is not the same note already (a step that waits
 * for the same reason at every try writes one entry, not one per try).
 */
export async function deferRaceStepWithNote(
  pool: Pool,
  id: string,
  until: number,
  at: number,
  entry: NewRaceHistoryEntry,
): Promise<void> {
  await inTransaction(pool, async (connection) => {
    const [updated] = await connection.query<ResultSetHeader>(
      "UPDATE races SET next_step_at = ? WHERE public_id = ? AND frozen_at IS NULL AND cancelled_at IS NULL",
      [until, id],
    );
    if (updated.affectedRows === 0) return;
    const [last] = await connection.query<RowDataPacket[]>(
      "SELECT kind, detail FROM race_history WHERE race_public_id = ? ORDER BY id DESC LIMIT 1",
      [id],
    );
    const same =
      last[0] !== undefined &&
      String(last[0].kind) === entry.kind &&
      JSON.stringify((JSON.parse(String(last[0].detail)) as { fields: unknown }).fields) ===
        JSON.stringify(entry.fields);
    if (!same) await appendRaceHistory(connection, id, at, entry);
  });
}

/**
 * When the oldest step not yet taken fell due (Unix seconds), or null when none is due by `now`. A step is
 * due from the race's start (to announce it), the second after its end, or the second after its review;
 * a deferred step (next_step_at later than that) counts from when it fell due. The range read is
 * ix_races_next_step's up to now + `longestWait` (the longest a failing step is put off), which holds every
 * due or deferred race.
 */
export async function oldestDueStep(pool: Pool, now: number, longestWait: number): Promise<number | null> {
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT MIN(CASE WHEN start_announced = 0 THEN start_ts
                     WHEN end_announced = 0 THEN end_ts + 1
                     ELSE end_ts + review_seconds + 1 END) AS due
       FROM races
      WHERE next_step_at <= ? AND frozen_at IS NULL AND cancelled_at IS NULL`,
    [now + longestWait],
  );
  const due = rows[0]?.due;
  if (due === null || due === undefined) return null;
  return Number(due) <= now ? Number(due) : null;
}
