/**
 * The results log on MariaDB (migration 21; the LogStore port, ports/results-log.ts): reads of entries, stored
 * hashes (level 0 is the entries' leaf hashes, levels 1 and up `log_tile_hashes`) and checkpoints, and the
 * sequencer's integration, one transaction holding `log_state`'s row lock (`FOR UPDATE`), so one sequencer works
 * at a time across every instance (on Galera, two nodes' integrations conflict at certification and one retries).
 * The integration reads the head's size after taking that lock: every entry below it is committed (appends commit
 * in index order, ./log-append.ts). The note key is ./log-keys.ts's.
 */
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";
import type { SecretBox } from "../../platform/database/secret-box.js";
import { inTransaction } from "../../platform/database/transactions.js";
import type { Integration, LogStore, StoredCheckpoint } from "../../ports/results-log.js";
import { insertLogKeyUnlessAny, readLogKey, readLogPublicKey } from "./log-keys.js";

type Queryable = Pool | PoolConnection;

const bytes = (value: unknown) => new Uint8Array(value as Buffer);

function checkpointOf(row: RowDataPacket): StoredCheckpoint {
  return { size: Number(row.tree_size), root: bytes(row.root), note: Buffer.from(row.note).toString("utf8") };
}

async function storedHashes(db: Queryable, level: number, from: number, to: number): Promise<Uint8Array[]> {
  if (to <= from) return [];
  const [rows] =
    level === 0
      ? await db.query<RowDataPacket[]>(
          "SELECT leaf_hash AS hash FROM log_entries WHERE idx >= ? AND idx < ? ORDER BY idx",
          [from, to],
        )
      : await db.query<RowDataPacket[]>(
          "SELECT hash FROM log_tile_hashes WHERE level = ? AND idx >= ? AND idx < ? ORDER BY idx",
          [level, from, to],
        );
  return rows.map((row) => bytes(row.hash));
}

async function headSize(db: Queryable): Promise<number> {
  const [rows] = await db.query<RowDataPacket[]>("SELECT size FROM log_head WHERE id = 1");
  return Number(rows[0]?.size ?? 0);
}

/** The log's store; `box` opens the sealed note key. */
export function mariadbLog(pool: Pool, box: SecretBox): LogStore {
  return {
    entryCount: () => headSize(pool),
    beganAt: async () => {
      const [rows] = await pool.query<RowDataPacket[]>("SELECT began_at FROM log_head WHERE id = 1");
      return Number(rows[0]?.began_at ?? 0);
    },
    latestCheckpoint: async () => {
      const [rows] = await pool.query<RowDataPacket[]>(
        "SELECT tree_size, root, note FROM log_checkpoints ORDER BY tree_size DESC LIMIT 1",
      );
      return rows[0] === undefined ? undefined : checkpointOf(rows[0]);
    },
    checkpointHolding: async (index) => {
      const [rows] = await pool.query<RowDataPacket[]>(
        "SELECT tree_size, root, note FROM log_checkpoints WHERE tree_size > ? ORDER BY tree_size LIMIT 1",
        [index],
      );
      return rows[0] === undefined ? undefined : checkpointOf(rows[0]);
    },
    checkpoints: async (from, limit) => {
      const [rows] = await pool.query<RowDataPacket[]>(
        "SELECT tree_size, root, note FROM log_checkpoints WHERE tree_size >= ? ORDER BY tree_size LIMIT ?",
        [from, limit],
      );
      return rows.map(checkpointOf);
    },
    hashes: (level, from, to) => storedHashes(pool, level, from, to),
    entries: async (from, to) => {
      const [rows] = await pool.query<RowDataPacket[]>(
        "SELECT entry FROM log_entries WHERE idx >= ? AND idx < ? ORDER BY idx",
        [from, to],
      );
      return rows.map((row) => bytes(row.entry));
    },
    entryOf: async (raceId) => {
      const [rows] = await pool.query<RowDataPacket[]>("SELECT idx, entry FROM log_entries WHERE race_public_id = ?", [
        raceId,
      ]);
      const row = rows[0];
      return row === undefined ? undefined : { index: Number(row.idx), entry: Buffer.from(row.entry).toString("utf8") };
    },
    integrate: (work) => inTransaction(pool, async (connection) => work(await integrationOn(connection))),
    key: () => readLogKey(pool, box),
    publicKey: () => readLogPublicKey(pool),
    insertKeyUnlessAny: (key, at) => insertLogKeyUnlessAny(pool, box, key, at),
  };
}

/** Takes the sequencing lock and reads where the log stands under it. */
async function integrationOn(connection: PoolConnection): Promise<Integration> {
  const [state] = await connection.query<RowDataPacket[]>("SELECT tree_size FROM log_state WHERE id = 1 FOR UPDATE");
  if (state[0] === undefined) throw new Error("the results log's state row is missing (migration 21)");
  const treeSize = Number(state[0].tree_size);
  const [signed] = await connection.query<RowDataPacket[]>("SELECT 1 FROM log_checkpoints WHERE tree_size = ?", [
    treeSize,
  ]);
  return {
    treeSize,
    signed: signed.length > 0,
    entryCount: await headSize(connection),
    hashes: (level, from, to) => storedHashes(connection, level, from, to),
    storeHashes: async (level, from, hashes) => {
      await connection.query("INSERT INTO log_tile_hashes (level, idx, hash) VALUES ?", [
        hashes.map((hash, i) => [level, from + i, Buffer.from(hash)]),
      ]);
    },
    storeCheckpoint: async (checkpoint, at) => {
      await connection.query("INSERT INTO log_checkpoints (tree_size, root, note, signed_at) VALUES (?, ?, ?, ?)", [
        checkpoint.size,
        Buffer.from(checkpoint.root),
        Buffer.from(checkpoint.note, "utf8"),
        at,
      ]);
      await connection.query("UPDATE log_state SET tree_size = ? WHERE id = 1", [checkpoint.size]);
    },
  };
}
