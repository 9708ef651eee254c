/**
 * SQL of a race's history (migration 14): its entries, appended in the transaction of the change they
 * describe and never changed (the table's triggers refuse UPDATE and DELETE), and the voids counted against
 * the races whose standings they reached, noted in the void's own transaction.
 */
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";
import { totalsOfUsers } from "../../boards/sql/held-reads.js";
import { bucketRanges } from "../../ingest/sql/period-buckets.js";
import { WEIGHTED_AMOUNT_OF_WAGER } from "../../ingest/sql/rollups.js";
import type { WeightedColumn } from "../../ingest/sql/weighted-backfill.js";
import type {
  NewRaceHistoryEntry,
  RaceActor,
  RaceHistoryEntry,
  RaceVoidCounts,
  VoidedRaceUser,
} from "../../ports/race-history.js";
import { canonicalDecimal } from "../../values/decimal.js";

/**
 * Appends one entry of the race `raceId` (public id), inside the caller's transaction. `owner`: the owning
 * affiliate's internal key, kept with a deletion (the race's row is gone after it), never answered.
 */
export async function appendRaceHistory(
  connection: PoolConnection,
  raceId: string,
  at: number,
  entry: NewRaceHistoryEntry,
  owner?: number,
): Promise<void> {
  const detail = {
    fields: entry.fields,
    ...(entry.standings === undefined ? {} : { standings: entry.standings }),
    ...(owner === undefined ? {} : { owner }),
  };
  await connection.query(
    "INSERT INTO race_history (race_public_id, at, kind, actor_kind, actor_id, detail) VALUES (?, ?, ?, ?, ?, ?)",
    [raceId, at, entry.kind, entry.actor.kind, Buffer.from(entry.actor.id, "utf8"), JSON.stringify(detail)],
  );
}

export async function readRaceHistory(pool: Pool, raceId: string): Promise<RaceHistoryEntry[]> {
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT at, kind, actor_kind, actor_id, detail FROM race_history WHERE race_public_id = ? ORDER BY id`,
    [raceId],
  );
  return rows.map((row) => {
    const detail = JSON.parse(text(row.detail)) as Pick<RaceHistoryEntry, "fields" | "standings">;
    return {
      at: Number(row.at),
      kind: String(row.kind),
      actor: { kind: String(row.actor_kind) as RaceActor["kind"], id: text(row.actor_id) },
      fields: detail.fields,
      ...(detail.standings === undefined ? {} : { standings: detail.standings }),
    };
  });
}

/**
 * The affiliate (internal key) that owned the race `raceId` when it was deleted; undefined when it was not
 * deleted. A deletion keeps its owner (deleteUnseenRace); one written before it did (0.3.0) is known by an
 * API key that created or deleted the race (the key's affiliate), else not at all.
 */
export async function deletedRaceOwner(pool: Pool, raceId: string): Promise<number | undefined> {
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT kind, actor_kind, actor_id, detail FROM race_history
      WHERE race_public_id = ? AND kind IN ('created', 'deleted') ORDER BY id`,
    [raceId],
  );
  const deletion = rows.find((row) => String(row.kind) === "deleted");
  if (deletion === undefined) return undefined;
  const { owner } = JSON.parse(text(deletion.detail)) as { owner?: number };
  if (owner !== undefined) return owner;
  const keyIds = rows.filter((row) => String(row.actor_kind) === "key").map((row) => text(row.actor_id));
  if (keyIds.length === 0) return undefined;
  const [keys] = await pool.query<RowDataPacket[]>("SELECT affiliate_id FROM api_keys WHERE id IN (?) LIMIT 1", [
    keyIds,
  ]);
  return keys[0] === undefined ? undefined : Number(keys[0].affiliate_id);
}

/**
 * Inside a void's transaction, with the voided wagers in the temporary table `stage` (external_id, user_id,
 * affiliate_id, amount, placed_at, weight_bps): adds them to each race whose period holds them and that is
 * live or reviewing now (started, neither frozen nor cancelled). The join reads the affiliate's races by
 * ix_races_affiliate_start, as many as the stage has affiliates.
 */
export async function noteRaceVoids(connection: PoolConnection, stage: string): Promise<void> {
  await connection.query(RACE_VOIDS_OF_STAGE(stage)).catch((error: unknown) => {
    // While `migrate` runs towards migration 14 (a long backfill of 12 first, say), this version may already
    // record voids on the older schema: they are counted from the moment the table exists, and the void itself
    // must not fail for want of it. MariaDB undoes only the failed statement, not the void's transaction.
    if ((error as { errno?: unknown }).errno !== ER_NO_SUCH_TABLE) throw error;
  });
}

const RACE_VOIDS_OF_STAGE = (stage: string): string =>
  `INSERT INTO race_voids (race_id, user_id, wagers, amount, weighted)
      SELECT r.id, s.user_id, COUNT(*), SUM(s.amount), SUM(${WEIGHTED_AMOUNT_OF_WAGER})
        FROM ${stage} s JOIN races r
          ON r.affiliate_id = s.affiliate_id AND r.start_ts <= s.placed_at AND r.end_ts >= s.placed_at
       WHERE r.frozen_at IS NULL AND r.cancelled_at IS NULL AND r.start_ts <= UNIX_TIMESTAMP()
       GROUP BY r.id, s.user_id
      ON DUPLICATE KEY UPDATE wagers = wagers + VALUES(wagers), amount = amount + VALUES(amount),
        weighted = weighted + VALUES(weighted)`;

/**
 * Inside a recording's transaction, with the wagers that count in the temporary table `stage` (as above) and
 * `wagers` (their affiliates and times): adds those dated inside the period of a race that has ended and is not
 * frozen yet (in review, or its freeze still due) to that race's late wagers. On the recording's hot path, so in
 * two steps: the races that ended between the batch's earliest wager and now, one range of
 * ix_races_affiliate_end (migration 18) per affiliate of the batch, almost always none; only when there are
 * some, the staged wagers of their periods, read race by race from the small in-memory stage. (Joined from the
 * stage in one statement, the server read every race of the affiliate for each wager: 0.2 to 13 s a batch of
 * 1,000 against 1,000 races an affiliate, measured.)
 */
export async function noteLateRaceWagers(
  connection: PoolConnection,
  stage: string,
  wagers: readonly { readonly affiliateId: number; readonly placedAt: number }[],
): Promise<void> {
  if (wagers.length === 0) return;
  const affiliates = [...new Set(wagers.map((wager) => wager.affiliateId))];
  const earliest = wagers.reduce((min, wager) => Math.min(min, wager.placedAt), Number.MAX_SAFE_INTEGER);
  const [ended] = await connection
    .query<RowDataPacket[]>(
      `SELECT id FROM races FORCE INDEX (ix_races_affiliate_end)
        WHERE affiliate_id IN (?) AND end_ts >= ? AND end_ts < UNIX_TIMESTAMP()
          AND frozen_at IS NULL AND cancelled_at IS NULL`,
      [affiliates, earliest],
    )
    // Before migration 18 (a rolling upgrade) late wagers are not counted; recording goes on.
    .catch(missingTableIsEmpty);
  if (ended.length === 0) return;
  await connection
    .query(
      `INSERT INTO race_late_wagers (race_id, user_id, wagers, amount, weighted)
          SELECT r.id, s.user_id, COUNT(*), SUM(s.amount), SUM(${WEIGHTED_AMOUNT_OF_WAGER})
            FROM races r STRAIGHT_JOIN ${stage} s
              ON s.affiliate_id = r.affiliate_id AND s.placed_at >= r.start_ts AND s.placed_at <= r.end_ts
           WHERE r.id IN (?)
           GROUP BY r.id, s.user_id
          ON DUPLICATE KEY UPDATE wagers = wagers + VALUES(wagers), amount = amount + VALUES(amount),
            weighted = weighted + VALUES(weighted)`,
      [ended.map((row) => Number(row.id))],
    )
    .catch(missingTableIsEmpty);
}

/** The tables that count, per race and user, what corrected a race's standings after the fact. */
export type RaceCorrections = "race_voids" | "race_late_wagers";

/** MariaDB's "Table … doesn't exist". */
const ER_NO_SUCH_TABLE = 1146;

/** How many wagers `table` counts against the race, of how many users (0 and 0 before its migration). */
export async function raceCorrectionCounts(
  pool: Pool,
  table: RaceCorrections,
  raceId: string,
): Promise<RaceVoidCounts> {
  const [rows] = await pool
    .query<RowDataPacket[]>(
      `SELECT COALESCE(SUM(v.wagers), 0) AS wagers, COUNT(v.user_id) AS users
         FROM ${table} v JOIN races r ON r.id = v.race_id WHERE r.public_id = ?`,
      [raceId],
    )
    .catch(missingTableIsEmpty);
  return { voidedWagers: Number(rows[0]?.wagers ?? 0), usersAffected: Number(rows[0]?.users ?? 0) };
}

/**
 * The race's users that `table` counts, with the counted sums (`voided*`) and their totals in its period now
 * (read for the freeze).
 */
export async function raceCorrectedUsers(
  pool: Pool,
  table: RaceCorrections,
  raceId: string,
  weighted: () => Promise<WeightedColumn>,
): Promise<VoidedRaceUser[]> {
  const [rows] = await pool
    .query<RowDataPacket[]>(
      `SELECT v.user_id, u.external_id, u.username, u.avatar_url, v.wagers, v.amount, v.weighted,
              r.affiliate_id, r.start_ts, r.end_ts
         FROM ${table} v JOIN races r ON r.id = v.race_id JOIN users u ON u.id = v.user_id
        WHERE r.public_id = ? ORDER BY v.user_id`,
      [raceId],
    )
    .catch(missingTableIsEmpty);
  const first = rows[0];
  if (first === undefined) return [];
  const now = await totalsOfUsers(
    pool,
    Number(first.affiliate_id),
    bucketRanges(Number(first.start_ts), Number(first.end_ts)),
    rows.map((row) => Number(row.user_id)),
    await weighted(),
  );
  const totals = new Map(now.map((row) => [row.userKey, row]));
  return rows.map((row) => {
    const current = totals.get(Number(row.user_id));
    return {
      userExternalId: text(row.external_id),
      username: text(row.username),
      avatarUrl: row.avatar_url === null ? null : text(row.avatar_url),
      voidedWagers: Number(row.wagers),
      voidedTotal: canonicalDecimal(String(row.amount)),
      voidedWeighted: canonicalDecimal(String(row.weighted)),
      total: canonicalDecimal(current?.total ?? "0"),
      weightedTotal: canonicalDecimal(current?.weightedTotal ?? "0"),
    };
  });
}

/** MariaDB's "Key … doesn't exist in table …" (an index hint before its migration). */
const ER_KEY_DOES_NOT_EXIST = 1176;

/** A statement on a table or index whose migration is not applied yet: no rows. */
function missingTableIsEmpty(error: unknown): [RowDataPacket[]] {
  const errno = (error as { errno?: unknown }).errno;
  if (errno === ER_NO_SUCH_TABLE || errno === ER_KEY_DOES_NOT_EXIST) return [[]];
  throw error;
}

function text(value: unknown): string {
  return Buffer.isBuffer(value) ? value.toString("utf8") : String(value);
}
