/**
 * Leaderboard reads from read replicas without ever answering older than the
 * primary. Before a statement runs on a replica, the primary's GTID position is
 * read (after the request began), and the replica is made to wait until it has
 * applied that position (MariaDB `MASTER_GTID_WAIT`, MySQL
 * `WAIT_FOR_EXECUTED_GTID_SET`), at most `DATABASE_REPLICA_WAIT_MS`. So an
 * answer, and what the result cache keeps of it, holds every write committed
 * before the request began: a lagging replica cannot resurrect older totals.
 *
 * A replica that times out, errs or is unreachable is skipped (the next
 * replica, or else the primary, answers) and left alone for a few seconds,
 * then tried again. With the primary down there is no position to wait for:
 * replicas answer with what they have applied (the primary takes no writes
 * then, so nothing newer can be committed meanwhile).
 */
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";
import { classifyDatabaseError } from "./database-errors.js";
import { poolOverlay } from "./node-set.js";

export interface ReplicaReadsOptions {
  /** The primary side (its current node): where positions are read, and the fallback for reads. */
  readonly primary: Pool;
  readonly replicas: readonly Pool[];
  readonly waitMs: number;
  readonly flavour: "mariadb" | "mysql";
  /** How long a skipped replica is left alone before it is tried again. */
  readonly retryAfterMs?: number;
  readonly onSkip?: (replica: number, reason: string) => void;
  readonly now?: () => number;
}

export class ReplicaReads {
  private readonly downUntil: number[];
  private next = 0;
  readonly stats = { replica: 0, primary: 0, skipped: 0 };

  constructor(private readonly options: ReplicaReadsOptions) {
    this.downUntil = options.replicas.map(() => 0);
  }

  /** A Pool whose query and execute go to a caught-up replica (or the primary). */
  pool(): Pool {
    return this.poolWith((method, args) => this.run(method, args));
  }

  /**
   * A Pool for the primary side's reads (API keys, the change feed, readiness) that goes to the
   * primary, and only when the primary is down to a replica: with no primary nothing can be
   * written, so what a replica has applied is the latest there is.
   */
  primaryFirstPool(): Pool {
    return this.poolWith(async (method, args) => {
      try {
        return await call(this.options.primary, method, args);
      } catch (error) {
        if (classifyDatabaseError(error) !== "node_down") throw error;
        for (const [index, replica] of this.options.replicas.entries()) {
          if ((this.downUntil[index] ?? 0) > this.now()) continue;
          try {
            return await call(replica, method, args);
          } catch (replicaError) {
            if (classifyDatabaseError(replicaError) !== "node_down") throw replicaError;
            this.skip(index, replicaError instanceof Error ? replicaError.message : String(replicaError));
          }
        }
        throw error;
      }
    });
  }

  private poolWith(route: (method: "query" | "execute", args: unknown[]) => Promise<unknown>): Pool {
    const own = {
      query: (...args: unknown[]) => route("query", args),
      execute: (...args: unknown[]) => route("execute", args),
    };
    return poolOverlay(own, () => this.options.primary);
  }

  /** Which replicas are in use now (false: skipped until it is tried again). */
  usable(): boolean[] {
    const now = this.now();
    return this.downUntil.map((until) => until <= now);
  }

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }

  private async position(): Promise<string | undefined> {
    const sql =
      this.options.flavour === "mariadb"
        ? "SELECT @@global.gtid_binlog_pos AS pos"
        : "SELECT @@global.gtid_executed AS pos";
    try {
      const [rows] = await this.options.primary.query<RowDataPacket[]>(sql);
      return String(rows[0]?.pos ?? "");
    } catch {
      return undefined; // primary unreachable: replicas answer with what they have
    }
  }

  private async run(method: "query" | "execute", args: unknown[]): Promise<unknown> {
    const { replicas } = this.options;
    if (replicas.length === 0) return call(this.options.primary, method, args);
    const position = await this.position();
    const count = replicas.length;
    const first = this.next++ % count;
    for (let step = 0; step < count; step++) {
      const index = (first + step) % count;
      // With the primary unreachable there is no position to wait for, so a replica skipped for lagging behind it
      // is as good as any: every replica is tried (one that is down fails fast and is skipped again).
      if (position !== undefined && (this.downUntil[index] ?? 0) > this.now()) continue;
      let connection: PoolConnection | undefined;
      try {
        connection = await (replicas[index] as Pool).getConnection();
        if (position !== undefined && position !== "") await this.waitFor(connection, position);
        const ready = connection;
        const result = await call(ready, method, args).catch((error: unknown) => {
          throw classifyDatabaseError(error) === "other"
            ? new StatementError("statement failed", { cause: error })
            : error;
        });
        this.stats.replica++;
        return result;
      } catch (error) {
        if (error instanceof StatementError) throw error.cause;
        this.skip(index, error instanceof Error ? error.message : String(error));
      } finally {
        connection?.release();
      }
    }
    this.stats.primary++;
    return call(this.options.primary, method, args);
  }

  private async waitFor(connection: PoolConnection, position: string): Promise<void> {
    const seconds = this.options.waitMs / 1000;
    const sql =
      this.options.flavour === "mariadb"
        ? "SELECT MASTER_GTID_WAIT(?, ?) AS r"
        : "SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ?) AS r";
    const [rows] = await connection.query<RowDataPacket[]>(sql, [position, seconds]);
    const result = Number(rows[0]?.r);
    if (result !== 0) throw new Error(`not caught up with the primary within ${this.options.waitMs} ms`);
  }

  private skip(index: number, reason: string): void {
    this.downUntil[index] = this.now() + (this.options.retryAfterMs ?? 2_000);
    this.stats.skipped++;
    this.options.onSkip?.(index, reason);
  }
}

/** A statement that failed on a healthy, caught-up replica for its own reasons (bad SQL, timeout): not the replica's fault. */
class StatementError extends Error {}

async function call(target: Pool | PoolConnection, method: "query" | "execute", args: unknown[]): Promise<unknown> {
  const fn = (target as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[method];
  return fn?.apply(target, args);
}
