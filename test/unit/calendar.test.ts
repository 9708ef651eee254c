import { describe, expect, it } from "vitest";
import {
  bucketCeil,
  bucketStart,
  DAY,
  dayStart,
  GRANULARITIES,
  HOUR,
  halfMonthOf,
  halfMonthStart,
  hourStart,
  monthStart,
  nextBucketStart,
  nextHalfMonthStart,
  nextMonthStart,
} from "../../src/values/calendar.js";

// Unix seconds of UTC midnights, counted by hand from 2024-01-01 = 1_704_067_200
// (19_723 days after 1970-01-01). 2024 is a leap year: January 31, February 29 days.
const JAN_1_2024 = 1_704_067_200;
const JAN_16_2024 = JAN_1_2024 + 15 * DAY; // 1_705_363_200
const JAN_31_2024 = JAN_1_2024 + 30 * DAY; // 1_706_659_200
const FEB_1_2024 = JAN_1_2024 + 31 * DAY; // 1_706_745_600
const FEB_16_2024 = FEB_1_2024 + 15 * DAY; // 1_708_041_600
const FEB_29_2024 = FEB_1_2024 + 28 * DAY; // 1_709_164_800
const MAR_1_2024 = FEB_1_2024 + 29 * DAY; // 1_709_251_200
// 2023 is not a leap year: February has 28 days.
const FEB_1_2023 = 1_675_209_600;
const FEB_16_2023 = FEB_1_2023 + 15 * DAY; // 1_676_505_600
const MAR_1_2023 = FEB_1_2023 + 28 * DAY; // 1_677_628_800
// Year end: 2024 has 366 days.
const DEC_1_2024 = JAN_1_2024 + 335 * DAY; // 1_733_011_200
const DEC_16_2024 = DEC_1_2024 + 15 * DAY; // 1_734_307_200
const DEC_31_2024 = DEC_1_2024 + 30 * DAY; // 1_735_603_200
const JAN_1_2025 = JAN_1_2024 + 366 * DAY; // 1_735_689_600

describe("calendar constants", () => {
  it("count the seconds of an hour and a day", () => {
    expect(HOUR).toBe(60 * 60);
    expect(DAY).toBe(24 * 60 * 60);
    expect(GRANULARITIES).toEqual(["hourly", "daily", "halfmonthly", "monthly"]);
  });

  it("hand-counted midnights are the ones Date knows", () => {
    expect(JAN_1_2024).toBe(Date.UTC(2024, 0, 1) / 1000);
    expect(FEB_29_2024).toBe(Date.UTC(2024, 1, 29) / 1000);
    expect(MAR_1_2024).toBe(1_709_251_200);
    expect(MAR_1_2023).toBe(1_677_628_800);
    expect(JAN_1_2025).toBe(1_735_689_600);
  });
});

describe("hours and days", () => {
  it("floor to the hour and the day", () => {
    expect(hourStart(JAN_1_2024)).toBe(JAN_1_2024);
    expect(hourStart(JAN_1_2024 + 3_599)).toBe(JAN_1_2024);
    expect(hourStart(JAN_1_2024 + 3_600)).toBe(JAN_1_2024 + 3_600);
    expect(hourStart(JAN_1_2024 + 5 * HOUR + 17)).toBe(JAN_1_2024 + 5 * HOUR);
    expect(dayStart(JAN_1_2024 + DAY - 1)).toBe(JAN_1_2024);
    expect(dayStart(FEB_29_2024 + 23 * HOUR + 59 * 60 + 59)).toBe(FEB_29_2024);
    expect(dayStart(0)).toBe(0);
  });

  it("the next hour and day", () => {
    expect(nextBucketStart("hourly", JAN_1_2024)).toBe(JAN_1_2024 + 3_600);
    expect(nextBucketStart("hourly", JAN_1_2024 + 3_599)).toBe(JAN_1_2024 + 3_600);
    expect(nextBucketStart("daily", DEC_31_2024 + 12 * HOUR)).toBe(JAN_1_2025);
  });
});

describe("half-months", () => {
  it("start on the 1st for days 1 to 15 and on the 16th after", () => {
    expect(halfMonthStart(JAN_1_2024)).toBe(JAN_1_2024);
    expect(halfMonthStart(JAN_16_2024 - 1)).toBe(JAN_1_2024);
    expect(halfMonthStart(JAN_16_2024)).toBe(JAN_16_2024);
    expect(halfMonthStart(JAN_31_2024 + DAY - 1)).toBe(JAN_16_2024);
  });

  it("the second half of a leap February ends on the 29th", () => {
    expect(halfMonthStart(FEB_29_2024 + 12 * HOUR)).toBe(FEB_16_2024);
    expect(nextHalfMonthStart(FEB_29_2024 + 12 * HOUR)).toBe(MAR_1_2024);
    expect(halfMonthOf(FEB_16_2024)).toEqual({ start: FEB_16_2024, end: MAR_1_2024 - 1 });
    // 14 days: the 16th to the 29th.
    expect(MAR_1_2024 - FEB_16_2024).toBe(14 * DAY);
  });

  it("the second half of a common February ends on the 28th", () => {
    expect(halfMonthOf(FEB_16_2023 + 1)).toEqual({ start: FEB_16_2023, end: MAR_1_2023 - 1 });
    expect(MAR_1_2023 - FEB_16_2023).toBe(13 * DAY);
  });

  it("the first half is always 15 days; the 31st belongs to the second half", () => {
    expect(halfMonthOf(FEB_1_2024)).toEqual({ start: FEB_1_2024, end: FEB_16_2024 - 1 });
    expect(nextHalfMonthStart(JAN_1_2024)).toBe(JAN_16_2024);
    expect(halfMonthOf(JAN_31_2024 + 1)).toEqual({ start: JAN_16_2024, end: FEB_1_2024 - 1 });
  });

  it("the last half-month of a year ends at the year's last second", () => {
    expect(halfMonthOf(DEC_31_2024 + DAY - 1)).toEqual({ start: DEC_16_2024, end: JAN_1_2025 - 1 });
    expect(nextHalfMonthStart(DEC_16_2024)).toBe(JAN_1_2025);
    expect(halfMonthStart(JAN_1_2025)).toBe(JAN_1_2025);
  });
});

describe("months", () => {
  it("floor to the 1st and step to the next 1st", () => {
    expect(monthStart(FEB_29_2024 + DAY - 1)).toBe(FEB_1_2024);
    expect(nextMonthStart(FEB_1_2024)).toBe(MAR_1_2024);
    expect(nextMonthStart(JAN_31_2024)).toBe(FEB_1_2024);
    expect(monthStart(DEC_31_2024 + DAY - 1)).toBe(DEC_1_2024);
    expect(nextMonthStart(DEC_31_2024)).toBe(JAN_1_2025);
    expect(monthStart(JAN_1_2025)).toBe(JAN_1_2025);
  });
});

describe("buckets by granularity", () => {
  const t = FEB_29_2024 + 13 * HOUR + 7 * 60 + 5; // 2024-02-29T13:07:05Z

  it("bucketStart", () => {
    expect(bucketStart("hourly", t)).toBe(FEB_29_2024 + 13 * HOUR);
    expect(bucketStart("daily", t)).toBe(FEB_29_2024);
    expect(bucketStart("halfmonthly", t)).toBe(FEB_16_2024);
    expect(bucketStart("monthly", t)).toBe(FEB_1_2024);
  });

  it("nextBucketStart", () => {
    expect(nextBucketStart("hourly", t)).toBe(FEB_29_2024 + 14 * HOUR);
    expect(nextBucketStart("daily", t)).toBe(MAR_1_2024);
    expect(nextBucketStart("halfmonthly", t)).toBe(MAR_1_2024);
    expect(nextBucketStart("monthly", t)).toBe(MAR_1_2024);
  });

  it("bucketCeil keeps a bucket start and rounds anything else up", () => {
    for (const granularity of GRANULARITIES) expect(bucketCeil(granularity, MAR_1_2024)).toBe(MAR_1_2024);
    expect(bucketCeil("hourly", t)).toBe(FEB_29_2024 + 14 * HOUR);
    expect(bucketCeil("halfmonthly", FEB_16_2024)).toBe(FEB_16_2024);
    expect(bucketCeil("halfmonthly", FEB_16_2024 + 1)).toBe(MAR_1_2024);
    expect(bucketCeil("monthly", FEB_16_2024)).toBe(MAR_1_2024);
  });
});
