/**
 * SQL for a race's slug (migration 14), a new race's insert under its affiliate's cap, and undoing a race nobody has
 * seen.
 *
 * A slug is held by one series at a time: the races whose `slug_released` is 0 (`slug_key` is then the slug,
 * and (affiliate, slug_key, index) is unique). A new race may take a slug whose series is over by its owner's
 * hand: its last race is cancelled (or it has no race left) and none of its races is live. The old races are
 * then released (`slug_released` = 1) in the same transaction as the insert: they keep their slug and stay
 * readable by id and in the slug's list, but no longer answer for it. The held rows are read with a lock, so
 * two creates of one slug are serialised; the unique key stops them where no row was there to lock. A create counts
 * the affiliate's scheduled and live races against RACES_PER_AFFILIATE in the same transaction, with the
 * affiliate's row held (../../ingest/sql/affiliates.ts insertUnderCap), and checks its period against the retention
 * horizons (./race-horizon.ts).
 */
import type { Pool, PoolConnection, ResultSetHeader, RowDataPacket } from "mysql2/promise";
import { insertUnderCap } from "../../ingest/sql/affiliates.js";
import { inTransaction } from "../../platform/database/transactions.js";
import type { RaceActor } from "../../ports/race-history.js";
import type { NewRace, RaceInsert } from "../../ports/races.js";
import { appendRaceHistory } from "./race-history.js";
import { refuseRaceBeyondRetention } from "./race-horizon.js";
import { insertRace, raceById } from "./races.js";

/** MariaDB: duplicate key. */
const ER_DUP_ENTRY = 1062;

/**
 * Inserts a series' first race (or a one-off race); "slug-taken" when a series that is not over holds its slug;
 * "cap-reached" when `cap` is given and the affiliate has that many scheduled and live races. The cap is counted
 * with the affiliate's row held, in the insert's transaction (../../ingest/sql/affiliates.ts insertUnderCap), so
 * two creates never both count the same races.
 */
export async function insertNewRace(pool: Pool, race: NewRace, actor: RaceActor, cap?: number): Promise<RaceInsert> {
  try {
    const outcome = await insertUnderCap(
      pool,
      race.affiliateId,
      cap,
      (connection) => openRaces(connection, race.affiliateId, race.createdAt),
      async (connection) => {
        await refuseRaceBeyondRetention(connection, race, race.createdAt);
        if (!(await releaseSlugIfOver(connection, race.affiliateId, race.slug, race.createdAt))) return "slug-taken";
        await insertRace(connection, race);
        await appendRaceHistory(connection, race.id, race.createdAt, { kind: "created", actor, fields: [] });
        return "inserted";
      },
    );
    if (outcome !== "inserted") return { kind: outcome };
  } catch (error) {
    if ((error as { errno?: number }).errno === ER_DUP_ENTRY) return { kind: "slug-taken" };
    throw error;
  }
  const stored = await raceById(pool, race.id);
  if (stored === undefined) throw new Error(`race ${race.id} vanished after insert`);
  return { kind: "inserted", race: stored };
}

/** How many scheduled and live races (not cancelled, not final, not ended at `now`) the affiliate has. */
async function openRaces(connection: PoolConnection, affiliateId: number, now: number): Promise<number> {
  const [rows] = await connection.query<RowDataPacket[]>(
    `SELECT COUNT(*) AS n FROM races
      WHERE affiliate_id = ? AND end_ts >= ? AND cancelled_at IS NULL AND frozen_at IS NULL`,
    [affiliateId, now],
  );
  return Number(rows[0]?.n ?? 0);
}

/** True when the slug is free at `now` (no race holds it, or its series is over and is released now). */
async function releaseSlugIfOver(
  connection: PoolConnection,
  affiliateId: number,
  slug: string,
  now: number,
): Promise<boolean> {
  const [held] = await connection.query<RowDataPacket[]>(
    `SELECT series_index, start_ts, end_ts, cancelled_at, frozen_at FROM races
      WHERE affiliate_id = ? AND slug_key = ? ORDER BY series_index DESC FOR UPDATE`,
    [affiliateId, slug],
  );
  const last = held[0];
  if (last === undefined) return true;
  const live = held.some(
    (row) =>
      row.cancelled_at === null && row.frozen_at === null && Number(row.start_ts) <= now && Number(row.end_ts) >= now,
  );
  if (last.cancelled_at === null || live) return false;
  await connection.query("UPDATE races SET slug_released = 1 WHERE affiliate_id = ? AND slug_key = ?", [
    affiliateId,
    slug,
  ]);
  return true;
}

/**
 * Deletes a race nobody has seen: the first of its series (or a one-off race), not started, never announced,
 * not cancelled; its history (append-only) says who deleted it, and keeps which affiliate owned it (so the
 * race's readers still read its history: ./race-history.ts deletedRaceOwner). True when this call deleted it;
 * false when it no longer qualifies (the clock started it, another call deleted or cancelled it).
 */
export async function deleteUnseenRace(pool: Pool, id: string, now: number, actor: RaceActor): Promise<boolean> {
  return inTransaction(pool, async (connection) => {
    const [owned] = await connection.query<RowDataPacket[]>(
      "SELECT affiliate_id FROM races WHERE public_id = ? FOR UPDATE",
      [id],
    );
    const owner = owned[0];
    if (owner === undefined) return false;
    const [result] = await connection.query<ResultSetHeader>(
      `DELETE FROM races WHERE public_id = ? AND series_index = 0 AND start_ts > ? AND start_announced = 0
          AND cancelled_at IS NULL AND frozen_at IS NULL`,
      [id, now],
    );
    if (result.affectedRows !== 1) return false;
    const entry = { kind: "deleted", actor, fields: [] };
    await appendRaceHistory(connection, id, now, entry, Number(owner.affiliate_id));
    return true;
  });
}
