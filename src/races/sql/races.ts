/**
 * SQL for races (migration 10): definitions, the owner's changes, the reads and frozen results; the clock's
 * scan for due races. The clock's steps themselves (announcing a start or an end, the freeze): ./race-steps.ts.
 *
 * A step that must happen once however many instances try (announcing a start or an end,
 * creating a series' next race, the freeze, a cancellation) is a conditional UPDATE of the race's
 * row whose affected-row count says whether this transaction won, followed in the same transaction
 * by what the step writes (the next race, the result rows) and the event it causes. On one server
 * the row lock serialises two instances; on Galera two nodes' UPDATEs of one row conflict at
 * certification and the loser's commit fails and is retried (../../platform/database/transactions.ts), when its
 * UPDATE then matches nothing.
 */
import type { Pool, PoolConnection, ResultSetHeader, RowDataPacket } from "mysql2/promise";
import { ensureAffiliate } from "../../ingest/sql/affiliates.js";
import { inTransaction } from "../../platform/database/transactions.js";
import type { NewRaceHistoryEntry, RaceActor } from "../../ports/race-history.js";
import type {
  FrozenEntry,
  NewRace,
  RaceDefinition,
  RaceEvent,
  RaceListQuery,
  RaceRepeat,
  StoredRace,
} from "../../ports/races.js";
import { appendToLog } from "../../results-log/sql/log-append.js";
import { canonicalDecimal } from "../../values/decimal.js";
import type { RankBy } from "../../values/weights.js";
import { enqueueRaceEvent } from "./race-events.js";
import { appendRaceHistory } from "./race-history.js";
import { refuseRaceBeyondRetention } from "./race-horizon.js";

const SELECT_RACE = `SELECT r.public_id, r.affiliate_id, a.external_id AS affiliate_external_id, r.slug,
    r.series_index, r.anchor_start, r.title, r.start_ts, r.end_ts, r.rank_by, r.currency, r.prizes,
    r.min_wagered, r.excluded_user_ids, r.review_seconds, r.shown, r.repeat_every, r.time_zone,
    r.created_at, r.updated_at, r.cancelled_at, r.frozen_at, r.digest, r.unallocated,
    r.start_announced, r.end_announced, r.next_created, r.slug_released
  FROM races r JOIN affiliates a ON a.id = r.affiliate_id`;

function nullableNumber(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value);
}

function raceOf(row: RowDataPacket): StoredRace {
  return {
    id: String(row.public_id),
    affiliateId: Number(row.affiliate_id),
    affiliateExternalId: Buffer.isBuffer(row.affiliate_external_id)
      ? row.affiliate_external_id.toString("utf8")
      : String(row.affiliate_external_id),
    slug: String(row.slug),
    seriesIndex: Number(row.series_index),
    anchorStart: Number(row.anchor_start),
    title: Buffer.isBuffer(row.title) ? row.title.toString("utf8") : String(row.title),
    startTimestamp: Number(row.start_ts),
    endTimestamp: Number(row.end_ts),
    rankBy: String(row.rank_by) as RankBy,
    currency: String(row.currency),
    prizes: JSON.parse(String(row.prizes)) as string[],
    minWagered: String(row.min_wagered),
    excludedUserIds: JSON.parse(
      Buffer.isBuffer(row.excluded_user_ids) ? row.excluded_user_ids.toString("utf8") : String(row.excluded_user_ids),
    ) as string[],
    reviewSeconds: Number(row.review_seconds),
    shown: Number(row.shown),
    repeat: String(row.repeat_every) as RaceRepeat,
    timeZone: String(row.time_zone),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    cancelledAt: nullableNumber(row.cancelled_at),
    frozenAt: nullableNumber(row.frozen_at),
    digest: row.digest === null ? null : String(row.digest),
    unallocated: row.unallocated === null ? null : String(row.unallocated),
    startAnnounced: Number(row.start_announced) === 1,
    endAnnounced: Number(row.end_announced) === 1,
    nextCreated: Number(row.next_created) === 1,
    slugHeld: Number(row.slug_released) === 0,
  };
}

/**
 * When a race next has a step due: its start (to announce), the second after its end (to
 * announce the end), the second after its review window (the freeze); null when none is left.
 */
export function nextStepAt(race: {
  readonly startTimestamp: number;
  readonly endTimestamp: number;
  readonly reviewSeconds: number;
  readonly startAnnounced: boolean;
  readonly endAnnounced: boolean;
  readonly frozenAt: number | null;
  readonly cancelledAt: number | null;
}): number | null {
  if (race.cancelledAt !== null || race.frozenAt !== null) return null;
  if (!race.startAnnounced) return race.startTimestamp;
  if (!race.endAnnounced) return race.endTimestamp + 1;
  return race.endTimestamp + race.reviewSeconds + 1;
}

function definitionColumns(definition: RaceDefinition): unknown[] {
  return [
    Buffer.from(definition.title, "utf8"),
    definition.startTimestamp,
    definition.endTimestamp,
    definition.rankBy,
    definition.currency,
    JSON.stringify(definition.prizes),
    definition.minWagered,
    Buffer.from(JSON.stringify(definition.excludedUserIds), "utf8"),
    definition.reviewSeconds,
    definition.shown,
  ];
}

export async function insertRace(connection: Pool | PoolConnection, race: NewRace): Promise<void> {
  await connection.query(
    `INSERT INTO races (public_id, affiliate_id, slug, series_index, anchor_start, title, start_ts, end_ts,
        rank_by, currency, prizes, min_wagered, excluded_user_ids, review_seconds, shown, repeat_every,
        time_zone, created_at, updated_at, next_step_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      race.id,
      race.affiliateId,
      race.slug,
      race.seriesIndex,
      race.anchorStart,
      ...definitionColumns(race),
      race.repeat,
      race.timeZone,
      race.createdAt,
      race.createdAt,
      race.startTimestamp,
    ],
  );
}

export async function affiliateKey(pool: Pool, externalId: string): Promise<number> {
  return ensureAffiliate(pool, externalId);
}

/** The affiliate's internal key, or undefined: a lookup that never inserts (reads must not write). */
export async function findAffiliateKey(pool: Pool, externalId: string): Promise<number | undefined> {
  const [rows] = await pool.query<RowDataPacket[]>("SELECT id FROM affiliates WHERE external_id = ?", [externalId]);
  return rows[0] === undefined ? undefined : Number(rows[0].id);
}

export async function raceById(pool: Pool | PoolConnection, id: string): Promise<StoredRace | undefined> {
  const [rows] = await pool.query<RowDataPacket[]>(`${SELECT_RACE} WHERE r.public_id = ?`, [id]);
  return rows[0] === undefined ? undefined : raceOf(rows[0]);
}

export async function seriesRace(
  pool: Pool,
  affiliateId: number,
  slug: string,
  index: number,
): Promise<StoredRace | undefined> {
  const [rows] = await pool.query<RowDataPacket[]>(
    `${SELECT_RACE} WHERE r.affiliate_id = ? AND r.slug_key = ? AND r.series_index = ?`,
    [affiliateId, slug, index],
  );
  return rows[0] === undefined ? undefined : raceOf(rows[0]);
}

export async function racesAroundNow(
  pool: Pool,
  affiliateId: number,
  slug: string,
  now: number,
): Promise<{ started: StoredRace | undefined; upcoming: StoredRace | undefined }> {
  // The series holding the slug; only when none does (its last holder deleted), the races that held it before.
  let column = "slug_key";
  for (;;) {
    const [started] = await pool.query<RowDataPacket[]>(
      `${SELECT_RACE} WHERE r.affiliate_id = ? AND r.${column} = ? AND r.start_ts <= ? ORDER BY r.start_ts DESC LIMIT 1`,
      [affiliateId, slug, now],
    );
    const [upcoming] = await pool.query<RowDataPacket[]>(
      `${SELECT_RACE} WHERE r.affiliate_id = ? AND r.${column} = ? AND r.start_ts > ? ORDER BY r.start_ts ASC LIMIT 1`,
      [affiliateId, slug, now],
    );
    if (started[0] === undefined && upcoming[0] === undefined && column === "slug_key") {
      column = "slug";
      continue;
    }
    return {
      started: started[0] === undefined ? undefined : raceOf(started[0]),
      upcoming: upcoming[0] === undefined ? undefined : raceOf(upcoming[0]),
    };
  }
}

/** The SQL condition of each state as of a time (the first parameter of each is `now`). */
const STATE_CONDITIONS: Record<string, { sql: string; params: number }> = {
  cancelled: { sql: "r.cancelled_at IS NOT NULL", params: 0 },
  final: { sql: "(r.cancelled_at IS NULL AND r.frozen_at IS NOT NULL)", params: 0 },
  scheduled: { sql: "(r.cancelled_at IS NULL AND r.frozen_at IS NULL AND r.start_ts > ?)", params: 1 },
  live: { sql: "(r.cancelled_at IS NULL AND r.frozen_at IS NULL AND r.start_ts <= ? AND r.end_ts >= ?)", params: 2 },
  reviewing: { sql: "(r.cancelled_at IS NULL AND r.frozen_at IS NULL AND r.end_ts < ?)", params: 1 },
};

export async function listRaces(pool: Pool, query: RaceListQuery): Promise<StoredRace[]> {
  const where = ["r.affiliate_id = ?"];
  const params: unknown[] = [query.affiliateId];
  if (query.slug !== undefined) {
    where.push("r.slug = ?");
    params.push(query.slug);
  }
  if (query.states !== undefined && query.states.length > 0) {
    const parts: string[] = [];
    for (const state of new Set(query.states)) {
      const condition = STATE_CONDITIONS[state];
      if (condition === undefined) continue;
      parts.push(condition.sql);
      for (let i = 0; i < condition.params; i++) params.push(query.now);
    }
    where.push(`(${parts.join(" OR ")})`);
  }
  if (query.after !== undefined) {
    where.push("(r.start_ts < ? OR (r.start_ts = ? AND r.public_id < ?))");
    params.push(query.after.start, query.after.start, query.after.id);
  }
  params.push(query.limit);
  const [rows] = await pool.query<RowDataPacket[]>(
    `${SELECT_RACE} WHERE ${where.join(" AND ")} ORDER BY r.start_ts DESC, r.public_id DESC LIMIT ?`,
    params,
  );
  return rows.map(raceOf);
}

async function lockedRace(connection: PoolConnection, id: string): Promise<StoredRace | undefined> {
  const [rows] = await connection.query<RowDataPacket[]>(`${SELECT_RACE} WHERE r.public_id = ? FOR UPDATE`, [id]);
  return rows[0] === undefined ? undefined : raceOf(rows[0]);
}

export async function updateRace(
  pool: Pool,
  id: string,
  definition: RaceDefinition,
  at: number,
  change: (before: StoredRace) => NewRaceHistoryEntry | null,
): Promise<StoredRace> {
  return inTransaction(pool, async (connection) => {
    const current = await lockedRace(connection, id);
    if (current === undefined) throw new Error(`race ${id} not found`);
    if (current.startTimestamp !== definition.startTimestamp || current.endTimestamp !== definition.endTimestamp) {
      await refuseRaceBeyondRetention(connection, { ...definition, affiliateId: current.affiliateId }, at);
    }
    const entry = change(current);
    if (entry !== null) await appendRaceHistory(connection, id, at, entry);
    const next = nextStepAt({ ...current, ...definition });
    // A changed period (start, repeat or time zone) anchors the series anew on this race, whatever its index:
    // its next race follows its own end (races/core/race-clock.ts counts from the anchor). An unchanged one keeps it.
    const periodChanged =
      current.startTimestamp !== definition.startTimestamp ||
      current.repeat !== definition.repeat ||
      current.timeZone !== definition.timeZone;
    await connection.query(
      `UPDATE races SET title = ?, start_ts = ?, end_ts = ?, rank_by = ?, currency = ?, prizes = ?, min_wagered = ?,
          excluded_user_ids = ?, review_seconds = ?, shown = ?, repeat_every = ?, time_zone = ?, updated_at = ?,
          next_step_at = ?, anchor_start = ?
        WHERE public_id = ?`,
      [
        ...definitionColumns(definition),
        definition.repeat,
        definition.timeZone,
        at,
        next,
        periodChanged ? definition.startTimestamp : current.anchorStart,
        id,
      ],
    );
    const stored = await raceById(connection, id);
    if (stored === undefined) throw new Error(`race ${id} vanished`);
    return stored;
  });
}

export async function cancelRace(
  pool: Pool,
  id: string,
  at: number,
  event: (race: StoredRace) => RaceEvent,
  actor: RaceActor,
): Promise<StoredRace> {
  return inTransaction(pool, async (connection) => {
    const [result] = await connection.query<ResultSetHeader>(
      `UPDATE races SET cancelled_at = ?, updated_at = ?, next_step_at = NULL
        WHERE public_id = ? AND cancelled_at IS NULL AND frozen_at IS NULL`,
      [at, at, id],
    );
    const stored = await raceById(connection, id);
    if (stored === undefined) throw new Error(`race ${id} not found`);
    if (result.affectedRows !== 1) return stored;
    await enqueueRaceEvent(connection, stored.affiliateId, event(stored), at);
    await appendRaceHistory(connection, id, at, { kind: "cancelled", actor, fields: [] });
    // A series stops with a race cancelled before its end: the next race, made when this one started,
    // is cancelled with it while it has not started. A race cancelled in review leaves the series be
    // (the race after it is running, and the one after that follows it).
    if (stored.repeat !== "none" && stored.endTimestamp >= at) {
      const [later] = await connection.query<RowDataPacket[]>(
        `SELECT public_id FROM races
          WHERE affiliate_id = ? AND slug_key = ? AND series_index > ? AND start_ts > ?
            AND cancelled_at IS NULL AND frozen_at IS NULL
          ORDER BY series_index FOR UPDATE`,
        [stored.affiliateId, stored.slug, stored.seriesIndex, at],
      );
      for (const row of later) {
        const laterId = String(row.public_id);
        await connection.query(
          "UPDATE races SET cancelled_at = ?, updated_at = ?, next_step_at = NULL WHERE public_id = ?",
          [at, at, laterId],
        );
        const laterRace = await raceById(connection, laterId);
        if (laterRace !== undefined) await enqueueRaceEvent(connection, laterRace.affiliateId, event(laterRace), at);
        // Its history says which race's cancellation stopped the series.
        const fields = [{ field: "cancelledWith", after: id }];
        await appendRaceHistory(connection, laterId, at, { kind: "cancelled", actor, fields });
      }
    }
    // A race cancelled once it had started is logged (docs/verify.md, "The results log"): its result cannot then
    // be made to vanish. The log's head last, held to the commit (../../results-log/sql/log-append.ts).
    if (stored.startTimestamp <= at) {
      await appendToLog(connection, {
        kind: "cancelled",
        affiliateId: stored.affiliateExternalId,
        raceId: id,
        at,
      });
    }
    return stored;
  });
}

export async function frozenEntries(pool: Pool, id: string): Promise<FrozenEntry[]> {
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT rr.\`rank\`, rr.user_external_id, rr.username, rr.avatar_url, rr.total, rr.weighted_total, rr.prize
       FROM race_results rr JOIN races r ON r.id = rr.race_id
      WHERE r.public_id = ? ORDER BY rr.position`,
    [id],
  );
  return rows.map((row) => ({
    rank: Number(row.rank),
    userExternalId: text(row.user_external_id),
    username: text(row.username),
    avatarUrl: text(row.avatar_url),
    total: canonicalDecimal(String(row.total)),
    weightedTotal: canonicalDecimal(String(row.weighted_total)),
    prize: String(row.prize),
  }));
}

function text(value: unknown): string {
  return Buffer.isBuffer(value) ? value.toString("utf8") : String(value);
}

/**
 * The clock's scan (parameters: now, limit): a range of ix_races_next_step read in its order, so only the due
 * rows are read however many races wait (final, cancelled and later ones have NULL or a later next_step_at),
 * with no sort. STRAIGHT_JOIN keeps races first: with few affiliates the planner otherwise starts from
 * affiliates and sorts the due races in a temporary table.
 */
export const DUE_RACES_SQL = `${SELECT_RACE.replace(" JOIN affiliates", " STRAIGHT_JOIN affiliates")}
  WHERE r.next_step_at <= ? ORDER BY r.next_step_at LIMIT ?`;

export async function dueRaces(pool: Pool, now: number, limit: number): Promise<StoredRace[]> {
  const [rows] = await pool.query<RowDataPacket[]>(DUE_RACES_SQL, [now, limit]);
  return rows.map(raceOf);
}
