/**
 * SQL of the race clock's steps that happen once however many instances try (./races.ts says how): announcing
 * a start (with a series' next race), announcing an end, and the freeze (the result rows, the owed
 * announcements, the signed result's place in its affiliate's chain, ./signed-results.ts, and its entry in the
 * results log, ../../results-log/sql/log-append.ts), each in one transaction with the events it causes and the
 * race's history entry. Which races are due: ./races.ts
 * DUE_RACES_SQL; a failing step's wait: ./race-step-waits.ts.
 */
import type { Pool, PoolConnection, ResultSetHeader, RowDataPacket } from "mysql2/promise";
import { inTransaction } from "../../platform/database/transactions.js";
import { CLOCK_ACTOR } from "../../ports/race-history.js";
import type { FrozenResult, NewRace, RaceEvent, RaceFreeze, StoredRace } from "../../ports/races.js";
import { appendToLog } from "../../results-log/sql/log-append.js";
import { enqueueRaceEvent, raceEventsOf } from "./race-events.js";
import { appendRaceHistory } from "./race-history.js";
import { insertRace, nextStepAt, raceById } from "./races.js";
import { signIntoChain } from "./signed-results.js";

/** Sets one once-flag of a race; true when this transaction set it. */
async function claimStep(
  connection: PoolConnection,
  id: string,
  column: "start_announced" | "end_announced",
): Promise<StoredRace | undefined> {
  const [result] = await connection.query<ResultSetHeader>(
    `UPDATE races SET ${column} = 1 WHERE public_id = ? AND ${column} = 0 AND cancelled_at IS NULL AND frozen_at IS NULL`,
    [id],
  );
  if (result.affectedRows !== 1) return undefined;
  return raceById(connection, id);
}

async function setNextStep(connection: PoolConnection, race: StoredRace): Promise<void> {
  await connection.query("UPDATE races SET next_step_at = ? WHERE public_id = ?", [nextStepAt(race), race.id]);
}

/** Creates a series' next race (once: it may exist already, made by a step retried elsewhere). */
async function insertNextRace(connection: PoolConnection, id: string, next: NewRace): Promise<void> {
  try {
    await insertRace(connection, next);
    await appendRaceHistory(connection, next.id, next.createdAt, { kind: "created", actor: CLOCK_ACTOR, fields: [] });
  } catch (error) {
    if ((error as { errno?: number }).errno !== 1062) throw error;
  }
  await connection.query("UPDATE races SET next_created = 1 WHERE public_id = ?", [id]);
}

export async function announceStart(
  pool: Pool,
  id: string,
  event: RaceEvent,
  next: NewRace | null,
  at: number,
): Promise<boolean> {
  return inTransaction(pool, async (connection) => {
    const race = await claimStep(connection, id, "start_announced");
    if (race === undefined) return false;
    await setNextStep(connection, race);
    if (next !== null) await insertNextRace(connection, id, next);
    await enqueueRaceEvent(connection, race.affiliateId, event, at);
    return true;
  });
}

export async function announceEnd(pool: Pool, id: string, event: RaceEvent, at: number): Promise<boolean> {
  return inTransaction(pool, async (connection) => {
    const race = await claimStep(connection, id, "end_announced");
    if (race === undefined) return false;
    await setNextStep(connection, race);
    await enqueueRaceEvent(connection, race.affiliateId, event, at);
    return true;
  });
}

/**
 * The freeze (RaceStore.freeze): the race row frozen, the start and end still owed announced (with a series' next
 * race), the result rows, the signed result at its place in the chain, the race.finalized event and the history's
 * entry, in one transaction; false when the race is frozen or cancelled already.
 */
export async function writeFreeze(pool: Pool, freeze: RaceFreeze): Promise<boolean> {
  const { id, affiliateExternalId, result, event, owed, history, seal } = freeze;
  return inTransaction(pool, async (connection) => {
    // What is still owed is read under the row's lock, so no start or end is announced twice.
    const [locked] = await connection.query<RowDataPacket[]>(
      `SELECT id, affiliate_id, start_ts, end_ts, start_announced, end_announced FROM races
        WHERE public_id = ? AND frozen_at IS NULL AND cancelled_at IS NULL FOR UPDATE`,
      [id],
    );
    const row = locked[0];
    if (row === undefined) return false;
    // On Galera the lock is the node's own: two nodes' UPDATEs of this row conflict at certification,
    // and the loser's retry finds it frozen.
    const [update] = await connection.query<ResultSetHeader>(
      `UPDATE races SET frozen_at = ?, digest = ?, unallocated = ?, next_step_at = NULL,
          start_announced = 1, end_announced = 1
        WHERE public_id = ? AND frozen_at IS NULL AND cancelled_at IS NULL`,
      [result.at, result.digest, result.unallocated, id],
    );
    if (update.affectedRows !== 1) return false;
    const internalId = Number(row.id);
    const affiliateId = Number(row.affiliate_id);
    // Up to three events (the owed start and end, the result): the affiliate's endpoints are read once.
    const enqueue = await raceEventsOf(connection, affiliateId);
    if (Number(row.start_announced) === 0) {
      if (owed.next !== null) await insertNextRace(connection, id, owed.next);
      // Owed events carry their transition's time (the start; the second after the end), not the freeze's.
      await enqueue(owed.started, Number(row.start_ts));
    }
    if (Number(row.end_announced) === 0) {
      await enqueue(owed.ended, Number(row.end_ts) + 1);
    }
    await insertResultRows(connection, internalId, result.entries);
    const signed = seal === undefined ? undefined : await signIntoChain(connection, internalId, affiliateId, seal);
    await appendRaceHistory(connection, id, result.at, history);
    // The results log's head last: held from here to the commit (../../results-log/sql/log-append.ts).
    const logged = await appendToLog(connection, {
      kind: "final",
      affiliateId: affiliateExternalId,
      raceId: id,
      at: result.at,
      digest: result.digest,
      sha256: signed?.sha256 ?? null,
    });
    await enqueue(event(signed, logged), result.at);
    return true;
  });
}

/** The frozen result's rows, in their order (none for a race nobody wagered in). */
async function insertResultRows(
  connection: PoolConnection,
  internalId: number,
  entries: FrozenResult["entries"],
): Promise<void> {
  if (entries.length === 0) return;
  await connection.query(
    `INSERT INTO race_results (race_id, position, \`rank\`, user_external_id, username, avatar_url, total,
            weighted_total, prize) VALUES ?`,
    [
      entries.map((entry, position) => [
        internalId,
        position,
        entry.rank,
        Buffer.from(entry.userExternalId, "utf8"),
        Buffer.from(entry.username, "utf8"),
        Buffer.from(entry.avatarUrl, "utf8"),
        entry.total,
        entry.weightedTotal,
        entry.prize,
      ]),
    ],
  );
}
