/**
 * SQL for the race clock's health (races/core/step-retry.ts): a failing step's wait written to the race's row,
 * and how long the oldest step still to take has been due (the topwagers_race_step_overdue_seconds gauge).
 */
import type { Pool, RowDataPacket } from "mysql2/promise";

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
