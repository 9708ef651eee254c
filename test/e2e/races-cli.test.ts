/**
 * `topwagers races create|update|list|show|cancel|delete` as an operator runs them (the built CLI against a test
 * database): a race defined with prizes, a minimum and an excluded user, times as Unix seconds or ISO
 * in a time zone; its standings with a tie; the list by state; cancelling; every option at fault
 * named with exit 2, a race of another affiliate exit 1. Needs `npm run -s build`.
 */
import { userInfo } from "node:os";
import type { RowDataPacket } from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { argv, runCli } from "../support/cli.js";
import { useTestDatabase } from "../support/database.js";
import { addBoard } from "../support/fixtures.js";
import { prizeRows } from "../support/races.js";

const database = useTestDatabase("races_cli");
const NOW = Math.floor(Date.now() / 1000);
const START = NOW - 3_600;
const END = NOW + 86_400;

/** Unix seconds of a UTC date and time (months from 1), computed here, not by the CLI under test. */
function utc(year: number, month: number, day: number, hour = 0, minute = 0, second = 0): number {
  return Date.UTC(year, month - 1, day, hour, minute, second) / 1000;
}
const TODAY = new Date(NOW * 1000);
/** The next December that has not begun anywhere (New York is UTC−5 from November to March). */
const DECEMBER = TODAY.getUTCMonth() === 11 ? TODAY.getUTCFullYear() + 1 : TODAY.getUTCFullYear();
/** Next year: its January is always ahead. */
const NEXT_YEAR = TODAY.getUTCFullYear() + 1;

function races(...args: string[]) {
  return runCli(["races", ...args], database.url);
}

describe("topwagers races", () => {
  it("creates, shows, lists and cancels a race", async () => {
    await addBoard(database.db, "cli-aff", [
      ["c-1", "ann", "", ["80", START + 1]],
      ["c-2", "bea", "", ["50", START + 2]],
      ["c-3", "cat", "", ["50", START + 3]],
      ["c-4", "dan", "", ["9", START + 4]],
      ["c-5", "staff", "", ["5000", START + 5]],
    ]);
    const created = await races(
      "create",
      "--affiliate",
      "cli-aff",
      "--slug",
      "weekly",
      "--title",
      "Weekly $100",
      "--start",
      String(START),
      "--end",
      String(END),
      "--prize",
      "60",
      "--prize",
      "25",
      "--prize",
      "15",
      "--min-wagered",
      "10",
      "--exclude",
      "c-5",
      "--review",
      "2h",
      "--json",
    );
    expect([created.code, created.stderr]).toEqual([0, ""]);
    const race = JSON.parse(created.stdout) as Record<string, unknown>;
    expect(race).toMatchObject({
      slug: "weekly",
      title: "Weekly $100",
      state: "live",
      startTimestamp: START,
      endTimestamp: END,
      prizes: ["60", "25", "15"],
      minWagered: "10",
      reviewSeconds: 7_200,
      shown: 3,
      finalAt: END + 7_200,
      unallocated: "0",
      result: null,
    });
    // bea and cat share ranks 2 and 3: (25 + 15) / 2 = 20 each; dan is under the minimum, staff excluded.
    expect(prizeRows(race.entries)).toEqual([
      [1, "ann", "60"],
      [2, "bea", "20"],
      [2, "cat", "20"],
    ]);
    const id = race.id as string;

    const shown = await races("show", "weekly", "--affiliate", "cli-aff");
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`${id}  weekly  live  Weekly $100\n`);
    expect(shown.stdout).toContain("  ranks by wagered; prizes 60 25 15 USD; shows 3; minimum 10; excludes c-5\n");
    expect(shown.stdout).toContain(
      "RANK  USER  USERNAME  WAGERED  PRIZE\n1     c-1   ann       80       60\n2     c-2   bea       50       20\n2     c-3   cat       50       20\nunallocated 0\n",
    );

    const later = await races(
      "create",
      "--affiliate",
      "cli-aff",
      "--slug",
      "monthly",
      "--title",
      "Monthly",
      "--start",
      `${NEXT_YEAR}-01-23T00:00`,
      "--time-zone",
      "America/New_York",
      "--repeat",
      "monthly",
      "--json",
    );
    expect(later.code).toBe(0);
    // 23 January next year, 00:00 in New York (UTC−5), and the second before 23 February.
    expect(JSON.parse(later.stdout)).toMatchObject({
      state: "scheduled",
      startTimestamp: utc(NEXT_YEAR, 1, 23, 5),
      endTimestamp: utc(NEXT_YEAR, 2, 23, 5) - 1,
      repeat: "monthly",
      timeZone: "America/New_York",
    });

    const listed = await races("list", "--affiliate", "cli-aff");
    expect(listed.code).toBe(0);
    const lines = listed.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^ID\s+SLUG\s+STATE\s+STARTS\s+ENDS\s+PRIZES\s+TITLE$/);
    expect(lines.slice(1).map((line) => line.split(/\s{2,}/).slice(1, 3))).toEqual([
      ["monthly", "scheduled"],
      ["weekly", "live"],
    ]);
    expect(lines[2]).toContain("100 USD");
    const live = await races("list", "--affiliate", "cli-aff", "--state", "live", "--json");
    expect((JSON.parse(live.stdout) as { id: string }[]).map((r) => r.id)).toEqual([id]);

    const cancelled = await races("cancel", id, "--affiliate", "cli-aff");
    expect([cancelled.code, cancelled.stdout]).toEqual([0, `Cancelled race ${id} (weekly) of affiliate cli-aff.\n`]);
    const after = await races("show", id, "--affiliate", "cli-aff", "--json");
    expect((JSON.parse(after.stdout) as { state: string }).state).toBe("cancelled");
  });

  it("names every option at fault (exit 2) and refuses another affiliate's race (exit 1)", async () => {
    const bad = await races(
      "create",
      "--affiliate",
      "cli-bad",
      "--slug",
      "Bad Slug",
      "--title",
      "Bad",
      "--start",
      String(START),
      "--end",
      String(END),
      // parseArgs takes "-5" for an option: a negative amount is written --prize=-5.
      "--prize=-5",
      "--time-zone",
      "Mars/Base",
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      /^error: --slug: slug must be 1 to 64 lowercase letters, digits and hyphens, starting with a letter or digit\n {7}--prize: prizes\[0\] \(rank 1\) must be a decimal amount of 0 or more with at most 12 digits before the point and 8 after\n {7}--time-zone: timeZone is not an IANA time zone name known to this server\n\nusage: topwagers races create /,
    );
    const time = await races("create", "--affiliate", "cli-bad", "--slug", "t", "--title", "T", "--start", "soon");
    expect([time.code, time.stderr.split("\n")[0]]).toEqual([
      2,
      'error: --start must be Unix seconds or an ISO 8601 date or time (2026-12-01, 2026-12-01T00:00:00Z), got "soon"',
    ]);
    const noAffiliate = await races("list");
    expect([noAffiliate.code, noAffiliate.stderr.split("\n")[0]]).toEqual([
      2,
      "error: races list needs --affiliate <affiliateId> (1 to 64 characters)",
    ]);

    const theirs = await races(
      ...argv(`create --affiliate cli-theirs --slug theirs --title Theirs --start ${START} --end ${END} --json`),
    );
    const id = (JSON.parse(theirs.stdout) as { id: string }).id;
    const other = await races("cancel", id, "--affiliate", "cli-mine");
    expect([other.code, other.stderr]).toEqual([
      1,
      `error: affiliate cli-mine has no race ${id} (see: npm run cli -- races list --affiliate cli-mine)\n`,
    ]);
    const taken = await races(
      ...argv(`create --affiliate cli-theirs --slug theirs --title Again --start ${START} --end ${END}`),
    );
    expect([taken.code, taken.stderr]).toEqual([
      1,
      "error: another race of affiliate cli-theirs already has the slug theirs\n",
    ]);
  });
  it("reads no affiliate into being: list, show and cancel of an unknown affiliate write no row", async () => {
    const count = async () => {
      const [rows] = await database.db.write.query<RowDataPacket[]>(
        "SELECT COUNT(*) AS n FROM affiliates WHERE external_id = ?",
        ["cli-typo"],
      );
      return Number(rows[0]?.n);
    };
    const listed = await races("list", "--affiliate", "cli-typo");
    expect([listed.code, listed.stdout]).toEqual([
      0,
      "No races of affiliate cli-typo. Create one with: npm run cli -- races create --affiliate cli-typo --slug <slug> --title <title> --start <time>\n",
    ]);
    const shown = await races("show", "monthly", "--affiliate", "cli-typo");
    expect([shown.code, shown.stderr]).toEqual([
      1,
      "error: affiliate cli-typo has no race monthly (see: npm run cli -- races list --affiliate cli-typo)\n",
    ]);
    const cancelled = await races("cancel", "race_00000000000000000000", "--affiliate", "cli-typo");
    expect(cancelled.code).toBe(1);
    expect(await count()).toBe(0);
  });

  it("takes --prize -5 as the amount -5, refused by the rules naming --prize (exit 2)", async () => {
    const negative = await races(
      ...argv(`create --affiliate cli-negative --slug neg --title Negative --start ${START} --end ${END}`),
      ...argv("--prize 100 --prize -5 --min-wagered -1"),
    );
    expect(negative.code).toBe(2);
    expect(negative.stderr.split("\n").slice(0, 2)).toEqual([
      "error: --prize: prizes[1] (rank 2) must be a decimal amount of 0 or more with at most 12 digits before the point and 8 after",
      "       --min-wagered: minWagered must be a decimal amount of 0 or more with at most 12 digits before the point and 8 after",
    ]);
  });

  it("reads a date-only --end as the whole day in the race's zone, prints times in that zone, updates, cancels and deletes by slug", async () => {
    const Y = DECEMBER;
    const made = await races(
      ...argv(`create --affiliate cli-ny --slug december --title December --start ${Y}-12-01 --end ${Y}-12-31`),
      ...argv("--time-zone America/New_York --prize 100 --json"),
    );
    expect([made.code, made.stderr]).toEqual([0, ""]);
    // 1 December 00:00:00 and 31 December 23:59:59 in New York (UTC−5): 05:00:00Z and 04:59:59Z on 1 January.
    const race = JSON.parse(made.stdout) as { id: string; startTimestamp: number; endTimestamp: number };
    const [start, end] = [utc(Y, 12, 1, 5), utc(Y + 1, 1, 1, 4, 59, 59)];
    expect([race.startTimestamp, race.endTimestamp]).toEqual([start, end]);

    const shown = await races("show", "december", "--affiliate", "cli-ny");
    expect(shown.stdout.split("\n").slice(0, 3)).toEqual([
      `${race.id}  december  scheduled  December`,
      `  period   ${Y}-12-01T05:00:00Z (${Y}-12-01 00:00:00 America/New_York) to ${Y + 1}-01-01T04:59:59Z ` +
        `(${Y}-12-31 23:59:59 America/New_York) (${start}–${end})`,
      `  final    ${Y + 1}-01-02T04:59:59Z (${Y + 1}-01-01 23:59:59 America/New_York) (review 86400 s)`,
    ]);

    const updated = await races(
      ...argv(`update december --affiliate cli-ny --title Cup --end ${Y}-12-30 --prize 70 --prize 30 --json`),
    );
    expect([updated.code, updated.stderr]).toEqual([0, ""]);
    expect(JSON.parse(updated.stdout)).toMatchObject({
      id: race.id,
      title: "Cup",
      endTimestamp: end - 86_400,
      prizes: ["70", "30"],
    });
    const noSlugChange = await races(...argv("update december --affiliate cli-ny --slug other"));
    expect([noSlugChange.code, noSlugChange.stderr.split("\n")[0]]).toEqual([
      2,
      "error: races update cannot change --slug (make a new race)",
    ]);

    const cancelled = await races("cancel", "december", "--affiliate", "cli-ny");
    expect([cancelled.code, cancelled.stdout]).toEqual([
      0,
      `Cancelled race ${race.id} (december) of affiliate cli-ny.\n`,
    ]);
    // The cancelled race's slug is free again; the new race is deleted while nobody has seen it.
    const again = await races(
      ...argv(`create --affiliate cli-ny --slug december --title December --start ${Y}-12-01 --end ${Y}-12-31 --json`),
    );
    expect(again.code).toBe(0);
    const second = (JSON.parse(again.stdout) as { id: string; endTimestamp: number }).id;
    const deleted = await races("delete", "december", "--affiliate", "cli-ny");
    expect([deleted.code, deleted.stdout]).toEqual([
      0,
      `Deleted race ${second} (december) of affiliate cli-ny; the slug december is free.\n`,
    ]);
    const gone = await races("show", second, "--affiliate", "cli-ny");
    expect(gone.code).toBe(1);
    const old = await races("show", race.id, "--affiliate", "cli-ny", "--json");
    expect((JSON.parse(old.stdout) as { state: string }).state).toBe("cancelled");

    // Each change is in the race's history as the CLI's, with the operating-system user that ran it.
    const [history] = await database.db.read.query<RowDataPacket[]>(
      `SELECT race_public_id, kind, actor_kind, CAST(actor_id AS CHAR) AS actor_id, CAST(detail AS CHAR) AS detail
         FROM race_history WHERE race_public_id IN (?, ?) ORDER BY id`,
      [race.id, second],
    );
    const user = userInfo().username;
    expect(history.map((row) => [row.race_public_id, row.kind, row.actor_kind, row.actor_id])).toEqual([
      [race.id, "created", "cli", user],
      [race.id, "updated", "cli", user],
      [race.id, "cancelled", "cli", user],
      [second, "created", "cli", user],
      [second, "deleted", "cli", user],
    ]);
    const fields = (JSON.parse(String(history[1]?.detail)) as { fields: { field: string }[] }).fields;
    expect(fields.map((change) => change.field)).toEqual(["title", "endTimestamp", "prizes"]);
  }, 60_000);

  it("names the limit of a time a race cannot hold (exit 2), never a database error", async () => {
    const late = await races(
      ...argv("create --affiliate cli-limits --slug late --title Late --start 2106-01-01 --end 2106-01-02"),
    );
    expect([late.code, late.stderr.split("\n").slice(0, 2)]).toEqual([
      2,
      [
        "error: --start: startTimestamp must be at most 4102444799 (2099-12-31T23:59:59Z)",
        "       --end: endTimestamp must be at most 4102444799 (2099-12-31T23:59:59Z)",
      ],
    ]);
    // The time of the security probe: the year 3000, once a 500 ("Out of range value for column 'end_ts'").
    const year3000 = await races(
      ...argv(`create --affiliate cli-limits --slug y3k --title Y --start ${END} --end 32503680000`),
    );
    expect([year3000.code, year3000.stderr.split("\n")[0]]).toEqual([
      2,
      "error: --end: endTimestamp must be at most 4102444799 (2099-12-31T23:59:59Z)",
    ]);
    const long = await races(
      ...argv("create --affiliate cli-limits --slug long --title L --start 2030-01-01 --end 2031-02-05"),
    );
    expect([long.code, long.stderr.split("\n")[0]]).toEqual([
      2,
      `error: --end: endTimestamp must be at most ${utc(2030, 1, 1) + 34_559_999}: a race spans at most 400 days (34560000 seconds, both ends inclusive)`,
    ]);
    const [rows] = await database.db.write.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM races");
    const before = Number(rows[0]?.n);
    const series = await races(
      ...argv("create --affiliate cli-limits --slug s --title S --start 2099-12-20 --repeat monthly"),
    );
    expect([series.code, series.stderr.split("\n")[0]]).toEqual([
      2,
      "error: --start: startTimestamp must let the first monthly race end by 4102444799 (2099-12-31T23:59:59Z)",
    ]);
    const [after] = await database.db.write.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM races");
    expect(Number(after[0]?.n)).toBe(before);
  });

  it("refuses a race that has already ended unless --allow-past", async () => {
    const typo = argv("create --affiliate cli-past --slug typo --title Typo --start 2025-12-01 --end 2025-12-31");
    const refused = await races(...typo);
    expect(refused.code).toBe(2);
    expect(refused.stderr.split("\n")[0]).toMatch(
      /^error: --end: endTimestamp 1767225599 has already passed \(the server's clock is at \d+\): the race would be frozen as it stands\. Check the year, or pass --allow-past to record a race that is over$/,
    );
    const made = await races(...typo, "--allow-past", "--json");
    expect(made.code).toBe(0);
    expect(JSON.parse(made.stdout)).toMatchObject({ endTimestamp: 1_767_225_599, state: "reviewing" });
  });
});
