/**
 * Pruning raw wagers and hourly rows (issue 38) on a real MariaDB: with WAGER_RETENTION_DAYS 60 and
 * HOURLY_ROLLUP_RETENTION_DAYS 90 at 2026-05-20 12:00 UTC, the horizons are 2026-03-21 and 2026-02-19. A first run
 * records them and deletes nothing (instances first learn the horizons); a run a minute later deletes exactly the
 * wagers and hourly rows before them and nothing else. Boards that need no deleted row answer byte for byte as
 * before; the others, a wager and a void past the horizon are refused with the catalogue's error naming it.
 */
import { Code } from "@connectrpc/connect";
import type { RowDataPacket } from "mysql2/promise";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { mariadbStandings } from "../../src/boards/sql/standings-store.js";
import { verifyRollups } from "../../src/ingest/sql/verify.js";
import { voidWagerBatch } from "../../src/ingest/sql/voids.js";
import { recordWagerBatch } from "../../src/ingest/sql/wagers.js";
import { startRetention } from "../../src/jobs/retention.js";
import { fromDatabase } from "../../src/platform/errors/database.js";
import { codeName, httpStatusForCode } from "../../src/platform/errors/http-status.js";
import { createLogger } from "../../src/platform/logger.js";
import { packageInfo } from "../../src/platform/package-info.js";
import type { StandingsStore } from "../../src/ports/standings.js";
import { MIGRATIONS } from "../../src/schema/schema-migrations.js";
import { useTestDatabase } from "../support/database.js";
import { insertWagers, upsertUsers, type WagerRecord } from "../support/users-and-wagers.js";

const DAY = 86_400;
const utc = (y: number, m: number, d: number, h = 0, min = 0, s = 0) => Date.UTC(y, m - 1, d, h, min, s) / 1000;
const NOW = utc(2026, 5, 20, 12);
const WAGER_HORIZON = utc(2026, 3, 21); // 1774051200: 60 days before NOW, at its day start
const HOURLY_HORIZON = utc(2026, 2, 19); // 1771459200: 90 days before NOW
/** aff-r's internal key (affiliates are made in code point order: aff-other is 1). */
const AFF = 2;
const SETTINGS = { deliveredDays: 30, failedDays: 90, everySeconds: 0, wagerDays: 60, hourlyDays: 90 };

/** Two wagers a day per user from 1 January to 19 May 2026 at varied times, with amounts of 8 decimals. */
function wagers(): WagerRecord[] {
  const out: WagerRecord[] = [];
  const users = ["u1", "u2", "u3", "v1"];
  for (let day = utc(2026, 1, 1), n = 0; day < utc(2026, 5, 20); day += DAY) {
    for (const [i, user] of users.entries()) {
      for (const k of [0, 1]) {
        n += 1;
        const second = ((n * 7919 + i * 3607 + k * 45_001) % DAY) + 0;
        const cents = (n * 37 + i * 11) % 100_000;
        out.push({
          id: `w-${n}-${user}`,
          userId: user,
          amount: `${cents}.${String(n % 1e8).padStart(8, "0")}`,
          placedAt: day + second,
        });
      }
    }
  }
  return out;
}

const PERIODS_KEPT: Record<string, [number, number]> = {
  "January (a month)": [utc(2026, 1, 1), utc(2026, 2, 1) - 1],
  "1-15 February (a half-month)": [utc(2026, 2, 1), utc(2026, 2, 16) - 1],
  "5 January to 10 March (whole days)": [utc(2026, 1, 5), utc(2026, 3, 11) - 1],
  "1 March 10.00 to 3 March 18.00 (whole hours between the horizons)": [utc(2026, 3, 1, 10), utc(2026, 3, 3, 18) - 1],
  "2 April 10.17.03 to 20 April 08.00 (after both horizons)": [utc(2026, 4, 2, 10, 17, 3), utc(2026, 4, 20, 8)],
  "15 March to 10 April 13.30 (across the wager horizon)": [utc(2026, 3, 15), utc(2026, 4, 10, 13, 30)],
  "1 January to 19 May (everything)": [utc(2026, 1, 1), utc(2026, 5, 20) - 1],
};

const RAW_HOURS =
  "this period needs raw wagers from before the retention horizon 2026-03-21 UTC (Unix time 1774051200) and " +
  "those were deleted. Before the horizon a period must start and end on whole UTC hours";
/** The same refusal between the run that records the horizon and the one that begins deleting below it. */
const RAW_HOURS_TO_COME = RAW_HOURS.replace("those were deleted", "those will be deleted");
const RAW_DAYS =
  "this period needs raw wagers from before the retention horizon 2026-03-21 UTC (Unix time 1774051200) and " +
  "those were deleted. Before the horizon a period must start and end on whole UTC days";
const HOURLY_DAYS =
  "this period needs hourly totals from before the retention horizon 2026-02-19 UTC (Unix time 1771459200) and " +
  "those were deleted. Before the horizon a period must start and end on whole UTC days";

const PERIODS_REFUSED: [string, number, number, string][] = [
  [
    "3 February 10.00 to 13.00 (whole hours before the hourly horizon)",
    utc(2026, 2, 3, 10),
    utc(2026, 2, 3, 13) - 1,
    HOURLY_DAYS,
  ],
  ["5 March 10.30 to 6 March (between the horizons)", utc(2026, 3, 5, 10, 30), utc(2026, 3, 6) - 1, RAW_HOURS],
  ["10 January 10.30 to 12 January (before both)", utc(2026, 1, 10, 10, 30), utc(2026, 1, 12) - 1, RAW_DAYS],
];

describe("pruning raw wagers and hourly rows", () => {
  const database = useTestDatabase("wager_retention");
  const pool = () => database.db.write;

  async function rows(sql: string): Promise<string> {
    const [result] = await pool().query<RowDataPacket[]>(sql);
    return JSON.stringify(result);
  }

  async function count(sql: string): Promise<number> {
    const [result] = await pool().query<RowDataPacket[]>(sql);
    return Number(result[0]?.n);
  }

  async function boards(standings: StandingsStore): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const [name, [start, end]] of Object.entries(PERIODS_KEPT)) {
      for (const rankBy of ["wagered", "weighted"] as const) {
        out[`${name} ${rankBy}`] = JSON.stringify(await standings.topUsers(AFF, start, end, 10, rankBy));
      }
    }
    return out;
  }

  it("deletes exactly what lies before the horizons, answers the rest as before and refuses the others", async () => {
    await upsertUsers(pool(), [
      { id: "u1", affiliateId: "aff-r", username: "ann", avatar: "" },
      { id: "u2", affiliateId: "aff-r", username: "bob", avatar: "" },
      { id: "u3", affiliateId: "aff-r", username: "cid", avatar: "" },
      { id: "v1", affiliateId: "aff-other", username: "val", avatar: "" },
    ]);
    const all = wagers();
    for (let i = 0; i < all.length; i += 400) expect(await insertWagers(pool(), all.slice(i, i + 400))).toEqual([]);
    const [affiliates] = await pool().query<RowDataPacket[]>("SELECT id, external_id FROM affiliates ORDER BY id");
    expect(affiliates.map((a) => [Number(a.id), String(a.external_id)])).toEqual([
      [1, "aff-other"],
      [2, "aff-r"],
    ]);
    const before = await boards(mariadbStandings(pool()));
    const coarse = "SELECT * FROM %s ORDER BY affiliate_id, bucket, user_id";
    const kept = async () => ({
      daily: await rows(coarse.replace("%s", "wager_daily")),
      halfmonthly: await rows(coarse.replace("%s", "wager_halfmonthly")),
      monthly: await rows(coarse.replace("%s", "wager_monthly")),
      users: await rows("SELECT * FROM users ORDER BY id"),
      wagers: await rows(`SELECT * FROM wagers WHERE placed_at >= ${WAGER_HORIZON} ORDER BY id`),
      hourly: await rows(
        `SELECT * FROM wager_hourly WHERE bucket >= ${HOURLY_HORIZON} ORDER BY affiliate_id, bucket, user_id`,
      ),
    });
    const keptBefore = await kept();

    // Counted from the data written, not from the tables.
    const oldWagers = all.filter((w) => w.placedAt < WAGER_HORIZON);
    const oldHours = new Set(
      all.filter((w) => w.placedAt < HOURLY_HORIZON).map((w) => `${w.userId} ${w.placedAt - (w.placedAt % 3600)}`),
    );
    expect(oldWagers.length).toBe(632);
    expect(oldHours.size).toBe(392);

    const job = startRetention(SETTINGS, database.db, new Registry(), createLogger("silent"));
    // The first run records the horizons and deletes nothing yet.
    const first = await job.runOnce(NOW * 1000);
    expect(first?.wagers).toEqual({
      wagers: 0,
      hourly: 0,
      horizons: { wagers: WAGER_HORIZON, hourly: HOURLY_HORIZON },
      heldBack: undefined,
      lockedOut: true,
    });
    // The generation row counts the changes (issue 47): servers report the one they have read.
    expect(await rows("SELECT kind, horizon, moved_at FROM retention_horizons ORDER BY kind")).toBe(
      JSON.stringify([
        { kind: "generation", horizon: 1, moved_at: NOW },
        { kind: "hourly", horizon: HOURLY_HORIZON, moved_at: NOW },
        { kind: "wagers", horizon: WAGER_HORIZON, moved_at: NOW },
      ]),
    );
    expect(await count("SELECT COUNT(*) AS n FROM wagers")).toBe(all.length);
    // Releases older than this one would answer the pruned periods short: the floor names this release now, and
    // the record releases before the floor read holds only the note that closed it (issue 47).
    expect(await rows("SELECT oldest_release, set_by_migration FROM schema_release_floor")).toBe(
      JSON.stringify([{ oldest_release: packageInfo().version, set_by_migration: 17 }]),
    );
    expect(await rows("SELECT version, name FROM schema_migrations")).toBe(
      JSON.stringify([
        {
          version: 0,
          name:
            "closed by retention on 2026-05-20: a release that reads this table cannot read the retention horizon " +
            '(docs/operations.md, "Version safety")',
        },
      ]),
    );
    expect(await count("SELECT COUNT(*) AS n FROM schema_versions")).toBe(MIGRATIONS.length);
    // Refused already: every instance refuses before anything is deleted, and says the rows will be deleted.
    await expect(
      mariadbStandings(pool()).topUsers(AFF, utc(2026, 3, 5, 10, 30), utc(2026, 3, 6) - 1, 10, "wagered"),
    ).rejects.toThrow(RAW_HOURS_TO_COME);

    const second = await job.runOnce((NOW + 61) * 1000);
    expect(second?.wagers).toEqual({
      wagers: oldWagers.length,
      hourly: oldHours.size,
      horizons: { wagers: WAGER_HORIZON, hourly: HOURLY_HORIZON },
      heldBack: undefined,
    });
    await job.stop();
    expect(await count(`SELECT COUNT(*) AS n FROM wagers WHERE placed_at < ${WAGER_HORIZON}`)).toBe(0);
    expect(await count(`SELECT COUNT(*) AS n FROM wager_hourly WHERE bucket < ${HOURLY_HORIZON}`)).toBe(0);
    expect(await count("SELECT COUNT(*) AS n FROM pruned_wagers")).toBe(oldWagers.length);
    expect(await kept()).toEqual(keptBefore);

    const standings = mariadbStandings(pool());
    expect(await boards(standings)).toEqual(before);
    for (const [name, start, end, message] of PERIODS_REFUSED) {
      await expect(standings.topUsers(AFF, start, end, 10, "wagered"), name).rejects.toThrow(message);
      await expect(standings.keyed?.boardWithKeys(AFF, start, end, 10, "weighted"), name).rejects.toThrow(message);
    }

    // The catalogue's error: out_of_range, HTTP 400, the reason and the horizon in ErrorInfo.
    const refusal = await standings
      .topUsers(AFF, utc(2026, 3, 5, 10, 30), utc(2026, 3, 6), 10, "wagered")
      .catch((e: unknown) => e);
    const mapped = fromDatabase(refusal);
    expect([mapped.code, codeName(mapped.code), httpStatusForCode(mapped.code), mapped.rawMessage]).toEqual([
      Code.OutOfRange,
      "out_of_range",
      400,
      RAW_HOURS,
    ]);
    expect((mapped as unknown as { reason: string }).reason).toBe("BEYOND_RETENTION");

    // verify checks what is left and finds it right.
    const report = await verifyRollups(pool());
    expect([report.mismatchCount, report.wagers, report.checkedFrom]).toEqual([
      0,
      all.length - oldWagers.length,
      { wagers: WAGER_HORIZON, hourly: HOURLY_HORIZON },
    ]);
  });

  it("refuses a wager placed before the wager horizon and the void of a pruned wager, recording nothing", async () => {
    const counts = () => rows("SELECT (SELECT COUNT(*) FROM wagers) AS w, (SELECT COUNT(*) FROM wager_voids) AS v");
    const countsBefore = await counts();
    const fresh = { id: "late-ok", userId: "u1", amount: "5", placedAt: WAGER_HORIZON };
    const late = { id: "late-1", userId: "u2", amount: "5", placedAt: WAGER_HORIZON - 1 };
    await expect(recordWagerBatch(pool(), [fresh, late])).rejects.toThrow(
      "wager late-1 was placed before the retention horizon 2026-03-21 UTC (Unix time 1774051200). Raw wagers " +
        "before it were deleted so a repeat could not be recognised and nothing was recorded",
    );
    // A wager pruned in the first test, sent again: refused the same way (it would otherwise count twice).
    const pruned = wagers()[0] as WagerRecord;
    await expect(recordWagerBatch(pool(), [pruned])).rejects.toThrow(`wager ${pruned.id} was placed before`);
    await expect(voidWagerBatch(pool(), ["never-seen", pruned.id])).rejects.toThrow(
      `wager ${pruned.id} was placed before the retention horizon 2026-03-21 UTC (Unix time 1774051200) and ` +
        "deleted by retention. Its void cannot be applied and nothing was recorded",
    );
    expect(await counts()).toBe(countsBefore);
    // A void of an id never seen still waits for its wager; a wager at the horizon is recorded.
    expect(await voidWagerBatch(pool(), ["never-seen"])).toEqual({ voided: 0, alreadyVoided: 0, pending: 1 });
    expect((await recordWagerBatch(pool(), [fresh])).kind).toBe("recorded");
  });

  it("moves the horizons past the start of a race that is not final, holding back its affiliate alone", async () => {
    const raceStart = utc(2026, 4, 10, 5);
    await pool().query(
      `INSERT INTO races (public_id, affiliate_id, slug, series_index, anchor_start, title, start_ts, end_ts, rank_by,
         currency, prizes, min_wagered, excluded_user_ids, review_seconds, shown, repeat_every, time_zone, created_at,
         updated_at)
       VALUES ('race_open', ?, 'open', 0, ?, 'Open', ?, ?, 'wagered', 'USD', '[]', '0', '', 0, 10, 'none', 'UTC', 0, 0)`,
      [AFF, raceStart, raceStart, utc(2026, 5, 30)],
    );
    const job = startRetention({ ...SETTINGS, wagerDays: 30 }, database.db, new Registry(), createLogger("silent"));
    const run = await job.runOnce((NOW + 120) * 1000);
    await job.stop();
    expect(run?.wagers).toEqual({
      wagers: 0,
      hourly: 0,
      horizons: { wagers: utc(2026, 4, 20), hourly: HOURLY_HORIZON },
      heldBack: "race not final",
    });
    // The race's affiliate keeps its rows from the race's day (test/integration/retention-per-affiliate.test.ts).
    expect(await rows("SELECT affiliate_id, held_from FROM retention_holds")).toBe(
      JSON.stringify([{ affiliate_id: AFF, held_from: utc(2026, 4, 10) }]),
    );
    // The race's own period is still answered from the raw wagers.
    const standings = mariadbStandings(pool());
    expect((await standings.topUsers(AFF, raceStart, utc(2026, 5, 19, 23, 59, 59), 10, "wagered")).length).toBe(3);
  });
});
