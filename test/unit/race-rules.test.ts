import { describe, expect, it } from "vitest";
import {
  type CurrentRace,
  type RaceDefinition,
  type RaceDefinitionFields,
  validateRaceDefinition,
  validateRaceUpdate,
} from "../../src/races/core/race-rules.js";

// 2026-11-01T04:00:00Z … one second before 2026-12-01T05:00:00Z: November in New York (EDT, then EST).
const NOV_START = 1_793_505_600;
const NOV_END = 1_796_101_199;

const minimal: RaceDefinitionFields = {
  slug: "weekly",
  title: "Weekly race",
  startTimestamp: 1_733_115_600n,
  endTimestamp: 1_733_720_399n,
};

describe("validateRaceDefinition", () => {
  it("fills in every default", () => {
    expect(validateRaceDefinition(minimal)).toEqual({
      ok: true,
      value: {
        slug: "weekly",
        title: "Weekly race",
        start: 1_733_115_600,
        end: 1_733_720_399,
        rankBy: "wagered",
        prizes: [],
        currency: "USD",
        minWagered: "0",
        excludedUserIds: [],
        reviewSeconds: 86_400,
        shown: 10,
        repeat: "none",
        timeZone: "UTC",
      },
    });
  });

  it("shows as many entries as there are prizes by default, and keeps prizes as sent, in any order", () => {
    const result = validateRaceDefinition({ ...minimal, prizes: ["30", "50.00", "0"], currency: "", minWagered: "" });
    expect(
      result.ok && [result.value.shown, result.value.prizes, result.value.currency, result.value.minWagered],
    ).toEqual([3, ["30", "50.00", "0"], "USD", "0"]);
  });

  it("computes a monthly series' end in its time zone, and accepts exactly that end when sent", () => {
    const monthly = { ...minimal, startTimestamp: NOV_START, endTimestamp: undefined, repeat: "monthly" as const };
    const zoned = { ...monthly, timeZone: "America/New_York" };
    expect(validateRaceDefinition(zoned)).toMatchObject({ ok: true, value: { start: NOV_START, end: NOV_END } });
    expect(validateRaceDefinition({ ...zoned, endTimestamp: NOV_END })).toMatchObject({ ok: true });
    expect(validateRaceDefinition({ ...zoned, endTimestamp: NOV_END + 1 })).toEqual({
      ok: false,
      violations: [
        {
          field: "endTimestamp",
          message: `endTimestamp must be ${NOV_END} (the second before the next monthly race starts) or be left out`,
        },
      ],
    });
    // The same start in UTC: December starts at 04:00 UTC too.
    expect(validateRaceDefinition(monthly)).toMatchObject({ value: { end: 1_796_097_599 } });
  });

  it("reports every problem at once, one per field, in field order", () => {
    const prizes = ["100", "-5", "1.123456789", "1e3", ...Array<string>(5).fill("1")];
    const result = validateRaceDefinition(
      {
        slug: "Monthly_Race",
        title: "x".repeat(121),
        startTimestamp: 1_733_115_599_000n,
        endTimestamp: -1,
        prizes,
        currency: "usd",
        minWagered: "0.5.5",
        excludedUserIds: ["staff", "", "y".repeat(65)],
        reviewSeconds: 2_592_001,
        shown: 0,
        repeat: "none",
        timeZone: "Mars/Olympus",
      },
      [{ field: "rankBy", message: "rankBy must be wagered or weighted" }],
    );
    const amount = "must be a decimal amount of 0 or more with at most 12 digits before the point and 8 after";
    expect(result).toEqual({
      ok: false,
      violations: [
        {
          field: "slug",
          message: "slug must be 1 to 64 lowercase letters, digits and hyphens, starting with a letter or digit",
        },
        { field: "title", message: "title must be at most 120 characters" },
        {
          field: "startTimestamp",
          message: "startTimestamp looks like milliseconds. Send Unix seconds (divide by 1000)",
        },
        { field: "endTimestamp", message: "endTimestamp must be a Unix timestamp in seconds (0 or more)" },
        { field: "rankBy", message: "rankBy must be wagered or weighted" },
        { field: "prizes[1]", message: `prizes[1] (rank 2) ${amount}` },
        { field: "prizes[2]", message: `prizes[2] (rank 3) ${amount}` },
        { field: "prizes[3]", message: `prizes[3] (rank 4) ${amount}` },
        { field: "currency", message: "currency must be 1 to 12 capital letters or digits (as USD)" },
        { field: "minWagered", message: `minWagered ${amount}` },
        { field: "excludedUserIds[1]", message: "excludedUserIds[1] must be 1 to 64 characters" },
        { field: "excludedUserIds[2]", message: "excludedUserIds[2] must be 1 to 64 characters" },
        { field: "reviewSeconds", message: "reviewSeconds must be a whole number from 0 to 2592000 (30 days)" },
        { field: "shown", message: "shown must be a whole number from 1 to 100" },
        { field: "timeZone", message: "timeZone is not an IANA time zone name known to this server" },
      ],
    });
  });

  it("names what is missing, a start before the board's first day, an end before the start, too many ranks", () => {
    expect(validateRaceDefinition({ title: " " })).toEqual({
      ok: false,
      violations: [
        { field: "slug", message: "slug is required" },
        { field: "title", message: "title is required" },
        { field: "startTimestamp", message: "startTimestamp is required" },
        { field: "endTimestamp", message: "endTimestamp is required" },
      ],
    });
    const result = validateRaceDefinition({
      ...minimal,
      startTimestamp: 1_733_115_599,
      endTimestamp: 1_733_115_598,
      prizes: Array<string>(101).fill("x"),
      excludedUserIds: Array<string>(1001).fill("u"),
    });
    expect(result).toEqual({
      ok: false,
      violations: [
        { field: "startTimestamp", message: "startTimestamp must be 1733115600 (2 December 2024) or later" },
        {
          field: "endTimestamp",
          message: "endTimestamp must not be before startTimestamp (both are inclusive. Equal means one second)",
        },
        { field: "prizes", message: "prizes has 101 ranks. At most 100 are allowed" },
        { field: "excludedUserIds", message: "excludedUserIds has 1001 ids. At most 1000 are allowed" },
      ],
    });
  });

  it("counts characters as code points, and accepts the bounds", () => {
    const result = validateRaceDefinition({
      ...minimal,
      slug: `a${"-".repeat(63)}`,
      title: "🏁".repeat(120),
      prizes: Array<string>(100).fill("999999999999.99999999"),
      excludedUserIds: ["😀".repeat(64), "a", "a"],
      reviewSeconds: 0,
      shown: 100n,
    });
    expect(result.ok && [result.value.excludedUserIds.length, result.value.reviewSeconds, result.value.shown]).toEqual([
      2, 0, 100,
    ]);
  });
});

describe("validateRaceUpdate", () => {
  const definition = (
    validateRaceDefinition({
      slug: "monthly",
      title: "Monthly race",
      startTimestamp: NOV_START,
      prizes: ["50", "30"],
      repeat: "monthly",
      timeZone: "America/New_York",
    }) as { value: RaceDefinition }
  ).value;
  const current: CurrentRace = { definition, cancelledAt: null, frozenAt: null };

  it("changes the period while scheduled, computing a series' end anew", () => {
    const result = validateRaceUpdate(current, { startTimestamp: NOV_START + 86_400 }, NOV_START - 1);
    // 2 November 04:00 UTC is 1 November 23:00 EST (the clocks went back at 02:00 that day): the race runs to
    // 1 December 23:00 EST, 2 December 04:00 UTC, minus one second.
    expect(result).toMatchObject({ ok: true, value: { start: NOV_START + 86_400, end: 1_796_183_999 } });
  });

  it("changes rules and prizes while live, but not the period; a period field sent unchanged is no change", () => {
    expect(validateRaceUpdate(current, { prizes: ["10"], shown: 1, title: "New" }, NOV_END)).toMatchObject({
      ok: true,
      value: { prizes: ["10"], shown: 1, title: "New", start: NOV_START, end: NOV_END },
    });
    expect(validateRaceUpdate(current, { startTimestamp: BigInt(NOV_START), timeZone: "" }, NOV_START)).toMatchObject({
      ok: true,
    });
    expect(validateRaceUpdate(current, { prizes: ["1"], timeZone: "UTC" }, NOV_START)).toEqual({
      ok: false,
      kind: "failed_precondition",
      refusal: "started",
      message: `the race started at ${NOV_START}. Its period changes only while it is scheduled`,
      field: "timeZone",
    });
  });

  it("refuses any change after the end, after cancelling and once final, before looking at the fields", () => {
    expect(validateRaceUpdate(current, { prizes: ["-1"] }, NOV_END + 1)).toEqual({
      ok: false,
      kind: "failed_precondition",
      refusal: "ended",
      message: `the race ended at ${NOV_END}. Its rules and prizes no longer change`,
    });
    expect(validateRaceUpdate({ ...current, cancelledAt: 5 }, {}, NOV_START)).toMatchObject({ refusal: "cancelled" });
    expect(validateRaceUpdate({ ...current, frozenAt: NOV_END + 86_401 }, {}, NOV_START)).toMatchObject({
      refusal: "final",
    });
  });

  it("reports bad fields as invalid_argument", () => {
    expect(validateRaceUpdate(current, { prizes: ["1,5"], shown: 101 }, NOV_START)).toEqual({
      ok: false,
      kind: "invalid_argument",
      violations: [
        {
          field: "prizes[0]",
          message:
            "prizes[0] (rank 1) must be a decimal amount of 0 or more with at most 12 digits before the point and 8 after",
        },
        { field: "shown", message: "shown must be a whole number from 1 to 100" },
      ],
    });
  });
});

describe("a race's longest span", () => {
  const DAYS_400 = 400 * 86_400;
  const oneOff = (end: number): RaceDefinitionFields => ({ ...minimal, startTimestamp: NOV_START, endTimestamp: end });

  it("is 400 days, both ends inclusive: one second more is refused naming endTimestamp and its last second", () => {
    expect(validateRaceDefinition(oneOff(NOV_START + DAYS_400 - 1))).toMatchObject({ ok: true });
    expect(validateRaceDefinition(oneOff(NOV_START + DAYS_400))).toEqual({
      ok: false,
      violations: [
        {
          field: "endTimestamp",
          message: `endTimestamp must be at most ${NOV_START + 34_559_999}: a race spans at most 400 days (34560000 seconds, both ends inclusive)`,
        },
      ],
    });
  });

  it("holds a race made before the rule to its period only when the period changes", () => {
    const old: CurrentRace = {
      definition: {
        ...(validateRaceDefinition(oneOff(NOV_START + 86_400)) as { value: RaceDefinition }).value,
        end: NOV_START + 1_000 * 86_400,
      },
      cancelledAt: null,
      frozenAt: null,
    };
    expect(validateRaceUpdate(old, { title: "Renamed" }, NOV_START - 1)).toMatchObject({ ok: true });
    expect(validateRaceUpdate(old, { startTimestamp: NOV_START + 1 }, NOV_START - 1)).toMatchObject({
      ok: false,
      kind: "invalid_argument",
      violations: [{ field: "endTimestamp" }],
    });
  });
});

describe("a race's times fit what stores them", () => {
  const LAST = 4_102_444_799; // 2099-12-31T23:59:59Z
  it("end by 2099-12-31T23:59:59Z: one second more is refused naming the field and the limit", () => {
    const at = (start: number, end: number) =>
      validateRaceDefinition({ ...minimal, startTimestamp: start, endTimestamp: end });
    expect(at(LAST - 10, LAST)).toMatchObject({ ok: true });
    expect(at(LAST + 1, LAST + 2)).toEqual({
      ok: false,
      violations: [
        { field: "startTimestamp", message: `startTimestamp must be at most ${LAST} (2099-12-31T23:59:59Z)` },
        { field: "endTimestamp", message: `endTimestamp must be at most ${LAST} (2099-12-31T23:59:59Z)` },
      ],
    });
    // 2^32 (past the INT UNSIGNED columns) and the year 3000 (the security probe's 500) alike.
    expect(at(LAST - 10, 2 ** 32)).toMatchObject({ violations: [{ field: "endTimestamp" }] });
    expect(at(LAST - 10, 32_503_680_000)).toMatchObject({ violations: [{ field: "endTimestamp" }] });
  });

  it("a series' first race must end by then too, named on startTimestamp", () => {
    const series = validateRaceDefinition({ ...minimal, startTimestamp: LAST - 3 * 86_400, repeat: "weekly" });
    expect(series).toEqual({
      ok: false,
      violations: [
        {
          field: "startTimestamp",
          message: `startTimestamp must let the first weekly race end by ${LAST} (2099-12-31T23:59:59Z)`,
        },
      ],
    });
  });
});
