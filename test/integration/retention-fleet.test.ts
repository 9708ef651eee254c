/**
 * Retention and who else uses the database (issue 47, item 1), on a real MariaDB. A connection to the test database
 * that no live registered instance names (what an older release leaves: it registers nothing) keeps the run from
 * moving any horizon, raising the floor or closing the old schema record; the run says why in a warn line and in
 * `topwagers_retention_blocked{reason="unregistered_clients"}`. Once that connection is a registered instance's, the
 * horizon is recorded (the horizons' first generation); rows below it go only once that instance reports having
 * read that generation (`horizon_not_seen` until then), and then exactly the wagers before it go.
 */
import { Writable } from "node:stream";
import mysql, { type RowDataPacket } from "mysql2/promise";
import { Registry } from "prom-client";
import { afterAll, describe, expect, it } from "vitest";
import { startRetention } from "../../src/jobs/retention.js";
import { connectionOptions } from "../../src/platform/database/database.js";
import { createLogger } from "../../src/platform/logger.js";
import { type InstanceReport, reportInstance } from "../../src/schema/instance-registry.js";
import { MIGRATIONS } from "../../src/schema/schema-migrations.js";
import { useTestDatabase } from "../support/database.js";
import { insertWagers, upsertUsers } from "../support/users-and-wagers.js";

const utc = (y: number, m: number, d: number, h = 0) => Date.UTC(y, m - 1, d, h) / 1000;
const NOW = utc(2026, 5, 20, 12);
const WAGER_HORIZON = utc(2026, 3, 21); // 60 days before NOW, at its day start
const SETTINGS = { deliveredDays: 30, failedDays: 90, everySeconds: 0, wagerDays: 60, hourlyDays: 0 };

function capturedLogger() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const text of chunk.toString("utf8").split("\n")) {
        if (text !== "") lines.push(JSON.parse(text) as Record<string, unknown>);
      }
      callback();
    },
  });
  return { logger: createLogger("info", sink), lines };
}

async function blocked(registry: Registry): Promise<Record<string, number>> {
  const values = (await registry.getSingleMetric("topwagers_retention_blocked")?.get())?.values ?? [];
  return Object.fromEntries(values.map((v) => [String(v.labels.reason), v.value]));
}

describe("retention with a client that did not register", () => {
  const database = useTestDatabase("retention_fleet");
  let other: mysql.Connection | undefined;
  afterAll(async () => {
    await other?.end();
  });
  const pool = () => database.db.write;
  const rows = async (sql: string) => JSON.stringify((await pool().query<RowDataPacket[]>(sql))[0]);

  it("moves nothing while it is connected, then prunes below what every live instance has read", async () => {
    await upsertUsers(pool(), [{ id: "u1", affiliateId: "aff-f", username: "ann", avatar: "" }]);
    expect(
      await insertWagers(pool(), [
        { id: "old-1", userId: "u1", amount: "3", placedAt: utc(2026, 2, 3, 10) },
        { id: "old-2", userId: "u1", amount: "4", placedAt: utc(2026, 3, 20, 23) },
        { id: "new-1", userId: "u1", amount: "5", placedAt: utc(2026, 3, 21, 1) },
      ]),
    ).toEqual([]);
    // An older release's connection: open on the database, registered by no one.
    other = await mysql.createConnection(connectionOptions(database.url));
    const [answer] = await other.query<RowDataPacket[]>("SELECT CONNECTION_ID() AS id, CURRENT_USER() AS user");
    const who = answer[0];
    const otherId = Number(who?.id);
    const { logger, lines } = capturedLogger();
    const registry = new Registry();
    const job = startRetention(SETTINGS, database.db, registry, logger, { recheckAfterMs: 50 });

    const refused = await job.runOnce(NOW * 1000);
    expect(refused?.wagers).toEqual({
      wagers: 0,
      hourly: 0,
      horizons: { wagers: 0, hourly: 0 },
      heldBack: undefined,
      waiting: {
        reason: "unregistered_clients",
        clients: [
          {
            id: otherId,
            user: String(who?.user).split("@")[0],
            host: expect.stringMatching(/:\d+$/),
            command: "Sleep",
            seconds: expect.any(Number),
          },
        ],
      },
    });
    expect(await rows("SELECT kind, horizon FROM retention_horizons ORDER BY kind")).toBe(
      JSON.stringify([
        { kind: "hourly", horizon: 0 },
        { kind: "wagers", horizon: 0 },
      ]),
    );
    expect(await rows("SELECT COUNT(*) AS n, MIN(version) AS low FROM schema_migrations")).toBe(
      JSON.stringify([{ n: String(MIGRATIONS.length), low: 1 }]),
    );
    expect(await blocked(registry)).toEqual({ unregistered_clients: 1, horizon_not_seen: 0 });
    const warned = lines.filter((l) => l.level === 40).map((l) => String(l.msg));
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatch(
      new RegExp(
        `^retention: nothing pruned: 1 connection\\(s\\) to this database belong to no registered instance .*: ${otherId} \\(`,
      ),
    );

    // The same connection as a live instance's that has read no horizon yet.
    const instance: InstanceReport = {
      id: "a1".repeat(12),
      role: "serve",
      release: "0.4.0",
      commit: "test",
      host: "test-host",
      pid: 4242,
      startedAt: NOW,
      horizons: { wagers: 0, hourly: 0, generation: 0 },
      connections: [otherId],
      sealsWith: "",
      opensWith: [],
    };
    expect(await reportInstance(pool(), instance)).toBe(true);
    const recorded = await job.runOnce(NOW * 1000);
    expect(recorded?.wagers).toEqual({
      wagers: 0,
      hourly: 0,
      horizons: { wagers: WAGER_HORIZON, hourly: 0 },
      heldBack: undefined,
      lockedOut: true,
    });
    const unseen = await job.runOnce((NOW + 61) * 1000);
    expect(unseen?.wagers).toMatchObject({ wagers: 0, waiting: { reason: "horizon_not_seen" } });
    const waiting = unseen?.wagers?.waiting;
    expect(waiting?.reason === "horizon_not_seen" ? waiting.instances.map((i) => i.id) : []).toEqual([instance.id]);
    expect(await blocked(registry)).toEqual({ unregistered_clients: 0, horizon_not_seen: 1 });
    expect(await rows("SELECT COUNT(*) AS n FROM wagers")).toBe(JSON.stringify([{ n: "3" }]));

    // It reports the horizons' first generation as read: the two wagers before it go, the one after it stays.
    await reportInstance(pool(), { ...instance, horizons: { wagers: WAGER_HORIZON, hourly: 0, generation: 1 } });
    const pruned = await job.runOnce((NOW + 62) * 1000);
    await job.stop();
    expect(pruned?.wagers).toEqual({
      wagers: 2,
      hourly: 0,
      horizons: { wagers: WAGER_HORIZON, hourly: 0 },
      heldBack: undefined,
    });
    expect(await rows("SELECT external_id FROM wagers")).toBe(JSON.stringify([{ external_id: "new-1" }]));
    expect(await rows("SELECT kind, horizon, pruned_below FROM retention_horizons ORDER BY kind")).toBe(
      JSON.stringify([
        { kind: "generation", horizon: 1, pruned_below: 0 },
        { kind: "hourly", horizon: 0, pruned_below: 0 },
        { kind: "wagers", horizon: WAGER_HORIZON, pruned_below: WAGER_HORIZON },
      ]),
    );
    expect(await blocked(registry)).toEqual({ unregistered_clients: 0, horizon_not_seen: 0 });
  });
});
