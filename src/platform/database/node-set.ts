/**
 * Several database nodes behind one pair of pools. `DATABASE_URL` may list
 * nodes in order of preference (a Galera cluster, or a primary and its
 * standbys); the service uses the first one that accepts writes and moves to
 * the next when it dies, and back when the preferred node is healthy again.
 *
 * Who is healthy is decided by a probe of every node once a second
 * (`@@read_only`, and on Galera `wsrep_ready` / `wsrep_local_state`), and at
 * once when a statement fails in a way that says the node is gone (see
 * `classifyDatabaseError`). The statement that saw the failure still fails
 * (the caller gets `unavailable` and retries; idempotency keeps totals exact):
 * only the next one goes to the new node.
 */
import type { Pool, PoolConnection } from "mysql2/promise";
import mysql from "mysql2/promise";
import { classifyDatabaseError } from "./database-errors.js";

export interface NodeHealth {
  /** Accepts connections and, on Galera, is a synced member of the Primary component. */
  readonly up: boolean;
  /** `@@read_only` is off (a replica or a demoted primary has it on). */
  readonly writable: boolean;
}

/** Reads the health of one node from a fresh connection; never throws. */
export async function probeNode(options: mysql.ConnectionOptions, timeoutMs: number): Promise<NodeHealth> {
  let connection: mysql.Connection | undefined;
  const timer = new Promise<NodeHealth>((resolve) =>
    setTimeout(() => resolve({ up: false, writable: false }), timeoutMs).unref(),
  );
  const probe = (async (): Promise<NodeHealth> => {
    try {
      const { database: _ignored, ...withoutDatabase } = options;
      connection = await mysql.createConnection({ ...withoutDatabase, connectTimeout: timeoutMs });
      const [rows] = await connection.query<mysql.RowDataPacket[]>("SELECT @@global.read_only AS ro");
      const [status] = await connection.query<mysql.RowDataPacket[]>(
        "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_local_state')",
      );
      const wsrep = new Map(status.map((r) => [String(r.Variable_name), String(r.Value)]));
      // Not Galera (no such status), or a Galera node that is ready and Synced (4).
      const synced = wsrep.size === 0 || (wsrep.get("wsrep_ready") === "ON" && wsrep.get("wsrep_local_state") === "4");
      return { up: synced, writable: Number(rows[0]?.ro ?? 1) === 0 };
    } catch {
      return { up: false, writable: false };
    }
  })();
  try {
    return await Promise.race([probe, timer]);
  } finally {
    connection?.destroy();
  }
}

/** Chooses the node to use: the first healthy writable one in order of preference, else the first healthy one. */
export function chooseNode(health: readonly NodeHealth[], current: number): number {
  const writable = health.findIndex((h) => h.up && h.writable);
  if (writable >= 0) return writable;
  const up = health.findIndex((h) => h.up);
  return up >= 0 ? up : current;
}

export interface NodeSetOptions {
  readonly nodes: readonly mysql.ConnectionOptions[];
  readonly probeIntervalMs?: number;
  readonly probeTimeoutMs?: number;
  readonly onSwitch?: (from: number, to: number) => void;
}

/** Keeps track of which node is current and probes them all in the background. */
export class NodeSet {
  private currentIndex = 0;
  private health: NodeHealth[];
  private timer: NodeJS.Timeout | undefined;
  private probing: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly options: NodeSetOptions) {
    this.health = options.nodes.map(() => ({ up: true, writable: true }));
  }

  get current(): number {
    return this.currentIndex;
  }

  get size(): number {
    return this.options.nodes.length;
  }

  start(): void {
    if (this.options.nodes.length < 2 || this.timer !== undefined) return;
    this.timer = setInterval(() => void this.probeNow(), this.options.probeIntervalMs ?? 1_000);
    this.timer.unref();
    void this.probeNow();
  }

  /** A statement on `index` failed with `error`: when it says the node is gone, look for another at once. */
  report(index: number, error: unknown): void {
    if (this.options.nodes.length < 2 || classifyDatabaseError(error) !== "node_down") return;
    const health = [...this.health];
    health[index] = { up: false, writable: false };
    this.health = health;
    this.use(chooseNode(health, this.currentIndex));
    void this.probeNow();
  }

  probeNow(): Promise<void> {
    if (this.probing !== undefined || this.closed) return this.probing ?? Promise.resolve();
    this.probing = (async () => {
      try {
        const timeout = this.options.probeTimeoutMs ?? 1_000;
        this.health = await Promise.all(this.options.nodes.map((node) => probeNode(node, timeout)));
        if (!this.closed) this.use(chooseNode(this.health, this.currentIndex));
      } finally {
        this.probing = undefined;
      }
    })();
    return this.probing;
  }

  private use(index: number): void {
    if (index === this.currentIndex) return;
    const from = this.currentIndex;
    this.currentIndex = index;
    this.options.onSwitch?.(from, index);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.probing;
  }
}

/** Attempts of one autocommit statement that keeps losing deadlocks or certification conflicts. */
const AUTOCOMMIT_ATTEMPTS = 5;

/**
 * A Pool that sends each call to the current node's pool and reports failures
 * to the node set. Properties set on it (tracing wraps `query`) stay on it.
 */
export function routedPool(pools: readonly Pool[], nodes: NodeSet): Pool {
  const target: Record<PropertyKey, unknown> = {};
  // A statement sent on the pool runs alone in autocommit: when it loses a deadlock or a Galera
  // certification conflict (1213) it was rolled back, so sending it again is safe.
  const guarded =
    (method: "query" | "execute") =>
    async (...args: unknown[]) => {
      for (let attempt = 1; ; attempt++) {
        const index = nodes.current;
        const pool = pools[index] as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
        try {
          return await pool[method]?.(...args);
        } catch (error) {
          nodes.report(index, error);
          if (classifyDatabaseError(error) !== "retry" || attempt >= AUTOCOMMIT_ATTEMPTS) throw error;
          await new Promise((resolve) => setTimeout(resolve, 5 * 2 ** attempt * Math.random()));
        }
      }
    };
  target.query = guarded("query");
  target.execute = guarded("execute");
  target.getConnection = async () => {
    const index = nodes.current;
    try {
      return watchedConnection(await (pools[index] as Pool).getConnection(), (error) => nodes.report(index, error));
    } catch (error) {
      nodes.report(index, error);
      throw error;
    }
  };
  target.end = async () => {
    await Promise.allSettled(pools.map((pool) => pool.end()));
  };
  return poolOverlay(target, () => pools[nodes.current] as Pool);
}

/**
 * A Pool made of `own` members (query, execute, …) over another pool: every other member (events,
 * config, …) is read from `underlying()` at the moment it is used, methods bound to that pool.
 */
export function poolOverlay(own: Record<PropertyKey, unknown>, underlying: () => Pool): Pool {
  return new Proxy(own, {
    get(members, property) {
      if (Object.hasOwn(members, property)) return members[property];
      const pool = underlying() as unknown as Record<PropertyKey, unknown>;
      const value = pool[property];
      return typeof value === "function" ? value.bind(pool) : value;
    },
    set(members, property, value) {
      members[property] = value;
      return true;
    },
  }) as unknown as Pool;
}

/** Reports statement failures on a checked-out connection (transactions) to `report`. */
function watchedConnection(connection: PoolConnection, report: (error: unknown) => void): PoolConnection {
  const wrap =
    (method: (...args: unknown[]) => Promise<unknown>) =>
    async (...args: unknown[]) => {
      try {
        return await method(...args);
      } catch (error) {
        report(error);
        throw error;
      }
    };
  const query = wrap(connection.query.bind(connection) as (...args: unknown[]) => Promise<unknown>);
  const execute = wrap(connection.execute.bind(connection) as (...args: unknown[]) => Promise<unknown>);
  return new Proxy(connection, {
    get(own, property, receiver) {
      if (Object.hasOwn(own, property)) return Reflect.get(own, property, receiver);
      if (property === "query") return query;
      if (property === "execute") return execute;
      const value = Reflect.get(own, property, receiver);
      return typeof value === "function" ? value.bind(own) : value;
    },
  });
}
