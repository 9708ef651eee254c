/**
 * The results log while a bench writes to it: each instance's sequencer runs as the server runs it (every
 * LOG_SEQUENCE_MS, the same Sequencer over the instance's own pool), and a poller reads the log's head and newest
 * checkpoint every POLL_MS, noting when each index was first seen committed and when a checkpoint first held it.
 * `stop()` waits until a checkpoint holds every entry appended, then reports how long each waited (to within the
 * poll's 20 ms) and how many checkpoints were signed.
 */
import type mysql from "mysql2/promise";
import { every } from "../src/jobs/every.js";
import type { Database } from "../src/platform/database/database.js";
import { SecretBox } from "../src/platform/database/secret-box.js";
import { Sequencer } from "../src/results-log/core/sequencer.js";
import { mariadbLog } from "../src/results-log/sql/log-store.js";
import { percentile } from "./support.js";

const POLL_MS = 20;

export interface LogWatchReport {
  /** Entries appended while watched. */
  readonly entries: number;
  /** Checkpoints signed while watched. */
  readonly checkpoints: number;
  /** Milliseconds from an entry's commit (first seen) to the first checkpoint holding it, sorted. */
  readonly waits: readonly number[];
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** When (performance.now()) the last entry got into a checkpoint. */
  readonly allCheckpointedAt: number;
}

async function readLog(db: Database): Promise<{ head: number; signed: number }> {
  const [rows] = await db.read.query<mysql.RowDataPacket[]>(
    "SELECT (SELECT size FROM log_head WHERE id = 1) AS head, (SELECT COALESCE(MAX(tree_size), 0) FROM log_checkpoints) AS signed",
  );
  return { head: Number(rows[0]?.head), signed: Number(rows[0]?.signed) };
}

export async function watchLog(
  instances: readonly Database[],
  sequenceMs = 500,
): Promise<{ stop(): Promise<LogWatchReport> }> {
  const start = await readLog(instances[0] as Database);
  const firstSeen: number[] = [];
  const checkpointed: number[] = [];
  let seen = start.head;
  let signed = start.signed;
  let signatures = 0;
  const sequencers = instances.map((db) => {
    const sequencer = new Sequencer(mariadbLog(db.write, new SecretBox(undefined)), {
      origin: "bench.example/topwagers",
    });
    return every(sequenceMs, async () => {
      if ((await sequencer.run()) !== undefined) signatures += 1;
    });
  });
  const poll = every(POLL_MS, async () => {
    const now = performance.now();
    const log = await readLog(instances[0] as Database);
    for (; seen < log.head; seen++) firstSeen[seen - start.head] = now;
    for (; signed < log.signed; signed++) checkpointed[signed - start.head] = now;
  });
  return {
    async stop() {
      const deadline = Date.now() + 30_000;
      while (signed < seen || seen < (await readLog(instances[0] as Database)).head) {
        if (Date.now() > deadline) throw new Error(`the log's checkpoint stayed at ${signed} of ${seen} entries`);
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
      await Promise.all([poll.stop(), ...sequencers.map((s) => s.stop())]);
      const waits = firstSeen.map((at, i) => (checkpointed[i] as number) - at).sort((a, b) => a - b);
      return {
        entries: waits.length,
        checkpoints: signatures,
        waits,
        p50: percentile(waits, 50),
        p99: percentile(waits, 99),
        max: waits.at(-1) ?? 0,
        allCheckpointedAt: Math.max(0, ...checkpointed.filter((at) => at !== undefined)),
      };
    },
  };
}

/** The bytes InnoDB holds for the log's tables (data and indexes), after ANALYZE so the figures are current. */
export async function logTableBytes(db: Database): Promise<number> {
  const tables = ["log_head", "log_entries", "log_tile_hashes", "log_checkpoints", "log_state", "log_signing_keys"];
  await db.write.query(`ANALYZE TABLE ${tables.join(", ")}`);
  const [rows] = await db.read.query<mysql.RowDataPacket[]>(
    `SELECT SUM(data_length + index_length) AS bytes FROM information_schema.tables
      WHERE table_schema = DATABASE() AND table_name IN (?)`,
    [tables],
  );
  return Number(rows[0]?.bytes);
}
