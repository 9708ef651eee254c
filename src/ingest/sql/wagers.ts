/**
 * SQL that records wagers (users: ./users.ts): one transaction per batch for the raw rows, the
 * rollups, waiting voids and the change row; idempotent by the platform wager id through a staged
 * fast path and a slow path. The why: docs/architecture.md, "Recording wagers".
 */
import type { Pool, PoolConnection, ResultSetHeader, RowDataPacket } from "mysql2/promise";
import { ER_DUP_ENTRY, errnoOf } from "../../platform/database/database-errors.js";
import { byCodePoint } from "../../platform/database/lock-order.js";
import {
  DEFAULT_RETRY_POLICY,
  inTransaction,
  oncePerConnection,
  type RetryPolicy,
  RetryTransaction,
} from "../../platform/database/transactions.js";
import type { RecordOutcome } from "../../ports/ingest.js";
import { noteLateRaceWagers } from "../../races/sql/race-history.js";
import { sameDecimal } from "../../values/decimal.js";
import { sameWagerContent, type WagerRecord } from "../../values/records.js";
import { FULL_WEIGHT_BPS } from "../../values/weights.js";
import { noteWagerTimes } from "./data-changes.js";
import { refuseBeyondHorizon } from "./retention-guards.js";
import { addIntoRollup, ROLLUP_SUMS_OF_WAGERS, ROLLUPS } from "./rollups.js";
import { byExternalId, type InternalUser, usersByExternalId } from "./users.js";

export type { RecordOutcome };

/**
 * Records a batch of wagers all or nothing (see the module comment). The
 * wagers must already be valid; this layer only guarantees exactness and
 * idempotency.
 */
export async function recordWagerBatch(
  pool: Pool,
  wagers: readonly WagerRecord[],
  policy: RetryPolicy = DEFAULT_RETRY_POLICY,
): Promise<RecordOutcome> {
  if (wagers.length === 0) return { kind: "recorded", recorded: 0, duplicates: 0 };
  const batch = uniqueWagers(wagers);
  if ("kind" in batch) return batch;
  const userIds = [...new Set(batch.map((w) => w.userId))];

  return inTransaction(
    pool,
    async (connection): Promise<RecordOutcome> => {
      const users = await usersByExternalId(connection, userIds);
      await refuseBeyondHorizon(connection, batch, (wager) => users.get(wager.userId)?.affiliateId);
      const unknown = userIds.filter((id) => !users.has(id));
      if (unknown.length > 0) return { kind: "unknown_users", userIds: unknown };
      await stage(pool, connection, batch, users);
      const fresh = await insertStaged(connection, batch);
      if ("kind" in fresh) return fresh;
      const recorded = fresh.length === 0 ? 0 : await countFresh(connection, fresh, users);
      // Everything not inserted now was recorded before (or repeats an earlier item of this batch).
      return { kind: "recorded", recorded, duplicates: wagers.length - recorded };
    },
    policy,
  ).catch((error: unknown) => {
    if (error instanceof VoidedConflict) return { kind: "conflict", wagerIds: error.wagerIds } as const;
    throw error;
  });
}

/**
 * The batch without repeats, in id order: the first occurrence stands for all. A conflict when an id
 * repeats with other content.
 */
function uniqueWagers(wagers: readonly WagerRecord[]): WagerRecord[] | RecordOutcome {
  const unique = new Map<string, WagerRecord>();
  const conflicting = new Set<string>();
  for (const wager of wagers) {
    const first = unique.get(wager.id);
    if (first === undefined) unique.set(wager.id, wager);
    else if (!sameWagerContent(first, wager)) conflicting.add(wager.id);
  }
  if (conflicting.size > 0) return { kind: "conflict", wagerIds: [...conflicting] };
  return [...unique.values()].sort((a, b) => byCodePoint(a.id, b.id));
}

/**
 * Inserts the staged wagers; answers those that are new. When some were recorded before: a conflict if any
 * of them differs, else the rest are inserted alone (and the batch retried if a concurrent writer took some).
 */
async function insertStaged(
  connection: PoolConnection,
  batch: readonly WagerRecord[],
): Promise<readonly WagerRecord[] | RecordOutcome> {
  try {
    await connection.query(`INSERT INTO wagers (${COLUMNS}) SELECT ${COLUMNS} FROM ${STAGE} ORDER BY external_id`);
    return batch;
  } catch (error) {
    if (errnoOf(error) !== ER_DUP_ENTRY) throw error;
  }
  const recorded = await recordedWagers(connection);
  const different = batch.filter((w) => {
    const existing = recorded.get(w.id);
    return existing !== undefined && !sameWagerContent(existing, w);
  });
  if (different.length > 0) return { kind: "conflict", wagerIds: different.map((w) => w.id) };
  const fresh = batch.filter((w) => !recorded.has(w.id));
  if (recorded.size > 0) {
    await connection.query(`DELETE FROM ${STAGE} WHERE external_id IN (?)`, [[...recorded.keys()]]);
  }
  if (fresh.length > 0) {
    const [result] = await connection.query<ResultSetHeader>(
      `INSERT IGNORE INTO wagers (${COLUMNS}) SELECT ${COLUMNS} FROM ${STAGE} ORDER BY external_id`,
    );
    if (result.affectedRows !== fresh.length) {
      throw new RetryTransaction("a concurrent writer recorded some of these wagers first");
    }
  }
  return fresh;
}

/**
 * Settles the voids that waited for the new wagers, and adds those still counted to the rollups and the
 * affiliates' wager times; answers how many were recorded (a resent voided wager is not).
 */
async function countFresh(
  connection: PoolConnection,
  fresh: readonly WagerRecord[],
  users: ReadonlyMap<string, InternalUser>,
): Promise<number> {
  const voids = await settleVoids(connection, new Map(fresh.map((w) => [w.id, w])), users);
  const counted = voids.removed.size === 0 ? fresh : fresh.filter((w) => !voids.removed.has(w.id));
  if (counted.length > 0) {
    await addToRollups(connection);
    const times = counted.map((w) => {
      const user = users.get(w.userId) as InternalUser;
      return { affiliateId: user.affiliateId, placedAt: w.placedAt, userId: user.id };
    });
    // Races in review whose period holds some of these wagers count them as late (../../races/sql/race-history.ts).
    await noteLateRaceWagers(connection, STAGE, times);
    await noteWagerTimes(connection, times);
  }
  return fresh.length - voids.resent;
}

/** Rolls the transaction back: these ids were recorded (and voided) before with other content. */
class VoidedConflict extends Error {
  constructor(readonly wagerIds: readonly string[]) {
    super("wagers voided earlier were sent again with different content");
  }
}

/**
 * The rows just inserted (all of the stage) against the voids (./voids.ts):
 *  - an id voided after it was recorded earlier: this is a re-send of a voided wager. Same
 *    content → a duplicate (the row just inserted is removed again); other content → the call is
 *    refused whole (VoidedConflict rolls back).
 *  - a pending void (the void came first): the wager is recorded, but straight into the voided
 *    rows, never into the totals.
 * The read locks every void row of these ids. A concurrent VoidWagers inserts its void row first
 * and then reads `wagers` with a lock, while we inserted into `wagers` first and now read the voids
 * with a lock: whichever runs second waits for the first to commit and sees its row (or InnoDB
 * reports a deadlock, and the retry sees it), so a void is never lost and never applied twice.
 * Leaves in the stage only the wagers that count; returns how many were re-sends and the ids removed.
 */
async function settleVoids(
  connection: PoolConnection,
  fresh: ReadonlyMap<string, WagerRecord>,
  users: ReadonlyMap<string, InternalUser>,
): Promise<{ resent: number; removed: ReadonlySet<string> }> {
  const [rows] = await connection.query<RowDataPacket[]>(
    `SELECT v.external_id, v.applied_at, v.user_id, v.amount, v.placed_at, v.weight_bps
       FROM ${STAGE} s JOIN wager_voids v ON v.external_id = s.external_id
      ORDER BY v.external_id FOR UPDATE`,
  );
  if (rows.length === 0) return { resent: 0, removed: new Set() };
  const resent: string[] = [];
  const pending: string[] = [];
  const different: string[] = [];
  for (const row of rows) {
    const id = String(row.external_id);
    const wager = fresh.get(id);
    if (wager === undefined) continue;
    if (row.applied_at === null) {
      pending.push(id);
      continue;
    }
    // A void applied before weights existed holds no weight: its wager counted fully.
    const same =
      Number(row.user_id) === users.get(wager.userId)?.id &&
      Number(row.placed_at) === wager.placedAt &&
      Number(row.weight_bps ?? FULL_WEIGHT_BPS) === (wager.weightBps ?? FULL_WEIGHT_BPS) &&
      sameDecimal(String(row.amount), wager.amount);
    (same ? resent : different).push(id);
  }
  if (different.length > 0) throw new VoidedConflict(different);
  if (pending.length > 0) {
    await connection.query(
      `UPDATE wager_voids v JOIN wagers w ON w.external_id = v.external_id
          SET v.applied_at = UNIX_TIMESTAMP(), v.user_id = w.user_id, v.affiliate_id = w.affiliate_id,
              v.amount = w.amount, v.placed_at = w.placed_at, v.weight_bps = w.weight_bps
        WHERE v.external_id IN (?)`,
      [pending],
    );
  }
  const removed = [...resent, ...pending];
  await connection.query("DELETE FROM wagers WHERE external_id IN (?)", [removed]);
  await connection.query(`DELETE FROM ${STAGE} WHERE external_id IN (?)`, [removed]);
  return { resent: resent.length, removed: new Set(removed) };
}

/**
 * Per-connection staging table (in memory, emptied before each use). The
 * batch travels to the server once, into here; the raw insert copies it from
 * here, and the rollups group it from here without reading the wagers table.
 * After the insert it holds exactly the rows this transaction added.
 */
const STAGE = "ingest_stage";
const COLUMNS = "external_id, user_id, affiliate_id, amount, placed_at, weight_bps";

async function stage(
  pool: Pool,
  connection: PoolConnection,
  batch: readonly WagerRecord[],
  users: ReadonlyMap<string, InternalUser>,
): Promise<void> {
  await oncePerConnection(pool, connection, STAGE, () =>
    connection.query(
      `CREATE TEMPORARY TABLE IF NOT EXISTS ${STAGE} (
        external_id VARBINARY(256) NOT NULL, user_id INT UNSIGNED NOT NULL, affiliate_id INT UNSIGNED NOT NULL,
        amount DECIMAL(20,8) NOT NULL, placed_at INT UNSIGNED NOT NULL, weight_bps SMALLINT UNSIGNED NOT NULL
      ) ENGINE=MEMORY`,
    ),
  );
  await connection.query(`DELETE FROM ${STAGE}`);
  await connection.query(`INSERT INTO ${STAGE} (${COLUMNS}) VALUES ?`, [
    batch.map((w) => {
      const user = users.get(w.userId) as InternalUser;
      return [w.id, user.id, user.affiliateId, w.amount, w.placedAt, w.weightBps ?? FULL_WEIGHT_BPS];
    }),
  ]);
}

/** Adds the staged (just inserted) wagers to every rollup, touching keys in primary key order. */
async function addToRollups(connection: PoolConnection): Promise<void> {
  for (const rollup of ROLLUPS) {
    await connection.query(addIntoRollup(rollup, STAGE, "placed_at", ROLLUP_SUMS_OF_WAGERS));
  }
}

/** Wagers of the staged batch that are already recorded, with their content as the platform sent it. */
async function recordedWagers(connection: PoolConnection): Promise<Map<string, WagerRecord>> {
  const [rows] = await connection.query<RowDataPacket[]>(
    `SELECT w.external_id, u.external_id AS user_external_id, w.amount, w.placed_at, w.weight_bps
       FROM ${STAGE} s
       JOIN wagers w ON w.external_id = s.external_id
       JOIN users u ON u.id = w.user_id`,
  );
  return byExternalId(rows, (r) => ({
    id: String(r.external_id),
    userId: String(r.user_external_id),
    amount: String(r.amount),
    placedAt: Number(r.placed_at),
    weightBps: Number(r.weight_bps),
  }));
}
