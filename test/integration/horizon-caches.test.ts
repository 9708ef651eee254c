/**
 * A cached answer from before the horizon moved is not served after (issue 47, item 2), on a real MariaDB with the
 * public app and the instance's heartbeat as the server runs them. A board of 5 March 10.30 to 6 March (it needs raw
 * wagers: it starts inside an hour) is answered and cached (settled: kept an hour). The retention job then records
 * the wager horizon 21 March (nothing deleted yet). Until this instance's heartbeat reads the horizons the cached
 * answer is all it has; once it has read them, the answer is gone from the cache and the board is refused with the
 * horizon ("will be deleted": no row is gone yet), and the instance's row reports the horizons' generation as read.
 */
import type { RowDataPacket } from "mysql2/promise";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startInstanceHeartbeat } from "../../src/jobs/instance-heartbeat.js";
import { startRetention } from "../../src/jobs/retention.js";
import { createLogger } from "../../src/platform/logger.js";
import { addBoard, createKey } from "../support/fixtures.js";
import { sleep } from "../support/processes.js";
import { errorBody, OPERATION, restCall } from "../support/rest.js";
import { startTestServer, type TestServer } from "../support/server.js";

const utc = (y: number, m: number, d: number, h = 0, min = 0) => Date.UTC(y, m - 1, d, h, min) / 1000;
const NOW = utc(2026, 5, 20, 12);
const PERIOD = { startTimestamp: utc(2026, 3, 5, 10, 30), endTimestamp: utc(2026, 3, 6) - 1, numUsers: 10 };
const AVATAR = "https://img.example.test/a.png";
const SETTINGS = { deliveredDays: 30, failedDays: 90, everySeconds: 0, wagerDays: 60, hourlyDays: 0 };

let server: TestServer;
let key: string;

beforeAll(async () => {
  server = await startTestServer("horizon_caches", { CACHE_TTL_MS: "10000" }, { now: () => NOW });
  key = (await createKey(server.database.db, "aff-c")).secret;
  await addBoard(server.database.db, "aff-c", [
    ["c-1", "ann", AVATAR, ["7.25", utc(2026, 3, 5, 10, 40)]],
    ["c-2", "bob", AVATAR, ["3", utc(2026, 3, 5, 11, 5)]],
  ]);
});

afterAll(async () => {
  await server?.close();
});

const board = () => restCall(`${server.baseUrl}${OPERATION}`, { key, body: PERIOD });

describe("a cached answer and a horizon that moves", () => {
  it("is dropped on this instance before it reports the horizons as read, and the period is refused", async () => {
    const answered = {
      status: 200,
      json: {
        data: [
          { username: "ann", avatar: AVATAR, totalWagered: 7.25 },
          { username: "bob", avatar: AVATAR, totalWagered: 3 },
        ],
        errors: null,
      },
    };
    const first = await board();
    expect({ status: first.status, json: first.json }).toEqual(answered);
    const cached = server.app.leaderboard.cacheStats.hits;
    const second = await board();
    expect({ status: second.status, json: second.json }).toEqual(answered);
    expect(server.app.leaderboard.cacheStats.hits).toBe(cached + 1);

    const job = startRetention(SETTINGS, server.database.db, new Registry(), createLogger("silent"));
    const run = await job.runOnce(NOW * 1000);
    await job.stop();
    expect(run?.wagers?.horizons).toEqual({ wagers: utc(2026, 3, 21), hourly: 0 });

    const heartbeat = startInstanceHeartbeat({
      database: server.database.db,
      role: "serve",
      horizons: server.app.horizons,
      keys: { seals: "", opens: [] },
      logger: createLogger("silent"),
      everyMs: 100,
    });
    try {
      // Its beats read the horizons (every 100 ms here), drop what they refuse, then report them as read.
      const reported = async () =>
        (
          await server.database.db.write.query<RowDataPacket[]>(
            "SELECT role, horizon_wagers, horizon_hourly, horizons_generation FROM instances WHERE id = ?",
            [heartbeat.id],
          )
        )[0].map((r) => ({ ...r }));
      for (const deadline = Date.now() + 5_000; Date.now() < deadline; await sleep(100)) {
        if ((await reported())[0]?.horizons_generation === "1") break;
      }
      expect(await reported()).toEqual([
        { role: "serve", horizon_wagers: utc(2026, 3, 21), horizon_hourly: 0, horizons_generation: "1" },
      ]);
      // Reported as read: the cached answer is gone, and the period is refused.
      const refused = await board();
      expect({ status: refused.status, json: refused.json }).toEqual({
        status: 400,
        json: errorBody({
          code: "out_of_range",
          message:
            "this period needs raw wagers from before the retention horizon 2026-03-21 UTC (Unix time 1774051200) " +
            "and those will be deleted. Before the horizon a period must start and end on whole UTC hours",
        }),
      });
      expect(server.app.leaderboard.cacheStats.size).toBe(0);
    } finally {
      await heartbeat.stop();
    }
  });
});
