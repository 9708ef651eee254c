/**
 * Leaderboard reads over read replicas (src/platform/database/replicas.ts) with pools the test answers by hand: a replica
 * skipped for lagging behind the primary is left alone while the primary answers, and is used at once when the
 * primary is unreachable (there is no position to wait for then), instead of failing the read.
 */
import type { Pool } from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { ReplicaReads } from "../../src/platform/database/replicas.js";

const refused = () => Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" });

/** A pool whose statements answer `rows` (or fail with `down()`), counting what it ran. */
function fakePool(name: string, state: { up: boolean; caughtUp: boolean; ran: string[] }): Pool {
  const run = async (sql: string) => {
    if (!state.up) throw refused();
    if (sql.includes("gtid_binlog_pos")) return [[{ pos: "0-1-10" }], []];
    if (sql.includes("MASTER_GTID_WAIT")) return [[{ r: state.caughtUp ? 0 : -1 }], []];
    state.ran.push(`${name}: ${sql}`);
    return [[{ from: name }], []];
  };
  const connection = { query: run, execute: run, release: () => undefined };
  return {
    query: run,
    execute: run,
    getConnection: async () => {
      if (!state.up) throw refused();
      return connection;
    },
  } as unknown as Pool;
}

describe("ReplicaReads", () => {
  it("skips a lagging replica while the primary answers, and uses it at once when the primary is down", async () => {
    const primary = { up: true, caughtUp: true, ran: [] as string[] };
    const replica = { up: true, caughtUp: false, ran: [] as string[] };
    let now = 1_000;
    const reads = new ReplicaReads({
      primary: fakePool("primary", primary),
      replicas: [fakePool("replica", replica)],
      waitMs: 500,
      flavour: "mariadb",
      retryAfterMs: 2_000,
      now: () => now,
    });
    const pool = reads.pool();
    // The replica is behind: skipped for 2 s, the primary answers.
    expect(await pool.query("SELECT board")).toEqual([[{ from: "primary" }], []]);
    expect(reads.usable()).toEqual([false]);
    now += 500;
    expect(await pool.query("SELECT board")).toEqual([[{ from: "primary" }], []]);
    expect(replica.ran).toEqual([]);
    // The primary dies while the replica is still in its 2 s: the replica answers (nothing newer can commit).
    primary.up = false;
    expect(await pool.query("SELECT board")).toEqual([[{ from: "replica" }], []]);
    // A replica that is down as well fails the read as before.
    replica.up = false;
    await expect(pool.query("SELECT board")).rejects.toThrow("ECONNREFUSED");
  });
});
