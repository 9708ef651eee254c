/**
 * Who uses this database (migration 23, table `instances`): every server and CLI command of this release and later
 * writes its row every few seconds (../jobs/instance-heartbeat.ts) and deletes it when it stops. A row says the
 * release, the process's database connections (their ids, as `CONNECTION_ID()` and the process list give them),
 * the retention horizons a server answers under, and the fingerprints of the WEBHOOK_SECRET_KEY it seals and opens
 * with. A row not written for LIVE_SECONDS is not alive.
 *
 * Releases before this one register nothing. What they leave is their connections: a connection to this database
 * that no live row names is a client that did not register (an older release, a CLI of one, or another tool), and
 * the retention job does not prune while one is open (../jobs/wager-retention.ts). The process list shows a user's
 * own connections only, unless it has the PROCESS privilege; on Galera it is the node's.
 */
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";
import { errnoOf } from "../platform/database/database-errors.js";
import type { RetentionHorizons } from "../values/retention-horizon.js";

/** A row not written for this long is not alive (the heartbeat writes it every 5 s). */
export const LIVE_SECONDS = 30;
/** Rows of processes not heard of for this long are deleted by the others' heartbeats. */
const FORGOTTEN_AFTER_SECONDS = 86_400;
const ER_NO_SUCH_TABLE = 1146;

/** What a process says of itself. */
export interface InstanceReport {
  /** Random, one per process. */
  readonly id: string;
  /** `serve`, or `cli` (a command, which reads the horizons in each statement and answers nothing from them). */
  readonly role: "serve" | "cli";
  readonly release: string;
  readonly commit: string;
  readonly host: string;
  readonly pid: number;
  /** Unix seconds. */
  readonly startedAt: number;
  /**
   * The horizons this server answers under and their generation (../ingest/sql/retention-horizon.ts: it has dropped
   * what they refuse); undefined for a command.
   */
  readonly horizons: (RetentionHorizons & { readonly generation: number }) | undefined;
  /** Its open database connections' ids. */
  readonly connections: readonly number[];
  /** The fingerprint of the key it seals secrets with ("" without one) and of every key it opens them with. */
  readonly sealsWith: string;
  readonly opensWith: readonly string[];
}

/** A live row, with when it was last written (the database's clock, Unix seconds). */
export interface LiveInstance extends InstanceReport {
  readonly seenAt: number;
}

/** A connection to this database (the process list's row). */
export interface ClientConnection {
  readonly id: number;
  readonly user: string;
  /** The client's address and port. */
  readonly host: string;
  readonly command: string;
  /** Seconds in its current state (idle time for a pooled connection). */
  readonly seconds: number;
}

/** Writes (or rewrites) the process's row; false when the table does not exist yet (a schema before migration 22). */
export async function reportInstance(pool: Pool | PoolConnection, report: InstanceReport): Promise<boolean> {
  try {
    await pool.query(
      `INSERT INTO instances (id, role, release_version, release_commit, host, pid, started_at, seen_at,
         horizon_wagers, horizon_hourly, horizons_generation, connections, seals_with, opens_with)
       VALUES (?, ?, ?, ?, ?, ?, ?, UNIX_TIMESTAMP(), ?, ?, ?, ?, ?, ?)
       ON DUPLICATE KEY UPDATE seen_at = VALUES(seen_at), horizon_wagers = VALUES(horizon_wagers),
         horizon_hourly = VALUES(horizon_hourly), horizons_generation = VALUES(horizons_generation),
         connections = VALUES(connections),
         seals_with = VALUES(seals_with), opens_with = VALUES(opens_with)`,
      [
        report.id,
        report.role,
        report.release.slice(0, 40),
        report.commit.slice(0, 40),
        report.host.slice(0, 255),
        report.pid,
        report.startedAt,
        report.horizons?.wagers ?? null,
        report.horizons?.hourly ?? null,
        report.horizons?.generation ?? null,
        report.connections.join(","),
        report.sealsWith,
        report.opensWith.join(","),
      ],
    );
    return true;
  } catch (error) {
    if (errnoOf(error) === ER_NO_SUCH_TABLE) return false;
    throw error;
  }
}

/** Deletes the process's row (it stops), and the rows of processes gone for a day. */
export async function forgetInstance(pool: Pool | PoolConnection, id: string): Promise<void> {
  try {
    await pool.query("DELETE FROM instances WHERE id = ? OR seen_at < UNIX_TIMESTAMP() - ?", [
      id,
      FORGOTTEN_AFTER_SECONDS,
    ]);
  } catch (error) {
    if (errnoOf(error) !== ER_NO_SUCH_TABLE) throw error;
  }
}

/** The rows written within LIVE_SECONDS (none before migration 22), oldest start first. */
export async function liveInstances(pool: Pool | PoolConnection): Promise<LiveInstance[]> {
  let rows: RowDataPacket[];
  try {
    [rows] = await pool.query<RowDataPacket[]>(
      "SELECT * FROM instances WHERE seen_at >= UNIX_TIMESTAMP() - ? ORDER BY started_at, id",
      [LIVE_SECONDS],
    );
  } catch (error) {
    if (errnoOf(error) === ER_NO_SUCH_TABLE) return [];
    throw error;
  }
  return rows.map(liveInstance);
}

function liveInstance(row: RowDataPacket): LiveInstance {
  const list = (text: unknown) =>
    String(text ?? "")
      .split(",")
      .filter((part) => part !== "");
  const horizons =
    row.horizon_wagers === null || row.horizon_hourly === null
      ? undefined
      : {
          wagers: Number(row.horizon_wagers),
          hourly: Number(row.horizon_hourly),
          generation: Number(row.horizons_generation ?? 0),
        };
  return {
    id: String(row.id),
    role: String(row.role) === "serve" ? "serve" : "cli",
    release: String(row.release_version),
    commit: String(row.release_commit),
    host: String(row.host),
    pid: Number(row.pid),
    startedAt: Number(row.started_at),
    seenAt: Number(row.seen_at),
    horizons,
    connections: list(row.connections).map(Number),
    sealsWith: String(row.seals_with),
    opensWith: list(row.opens_with),
  };
}

/**
 * The connections to this database that are not `own` (the asking process's) and that no live row names: clients
 * that did not register. Server threads (replication, the event scheduler) are left out.
 */
export async function unregisteredConnections(
  pool: Pool | PoolConnection,
  own: readonly number[],
): Promise<ClientConnection[]> {
  const registered = new Set([...own, ...(await liveInstances(pool)).flatMap((i) => i.connections)]);
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT ID AS id, USER AS user, HOST AS host, COMMAND AS command, TIME AS seconds
       FROM information_schema.PROCESSLIST
      WHERE DB = DATABASE() AND ID <> CONNECTION_ID()
        AND COMMAND NOT IN ('Daemon', 'Binlog Dump', 'Binlog Dump GTID', 'Killed')
      ORDER BY ID`,
  );
  return rows
    .map((r) => ({
      id: Number(r.id),
      user: String(r.user),
      host: String(r.host),
      command: String(r.command),
      seconds: Number(r.seconds),
    }))
    .filter((c) => !registered.has(c.id));
}

/** "57 (topwagers from 10.0.0.3:54012, Sleep 12 s)": a connection as log lines and the CLI name it. */
export function describeConnection(connection: ClientConnection): string {
  return `${connection.id} (${connection.user} from ${connection.host}, ${connection.command} ${connection.seconds} s)`;
}
