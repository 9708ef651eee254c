/** Instants the tests use, in Unix seconds at 00:00:00 UTC; written once here. */
export const JAN_1_2025 = 1_735_689_600;
export const FEB_1_2025 = 1_738_368_000;
export const JAN_1_2026 = 1_767_225_600;
export const FEB_1_2026 = 1_769_904_000;
/** Without a year: 2026. */
export const SEP_1 = 1_788_220_800;
export const OCT_1 = 1_790_812_800;
export const OCT_16 = 1_792_108_800;
export const NOV_1 = 1_793_491_200;
export const NOV_16 = 1_794_787_200;
export const DEC_1 = 1_796_083_200;

/** A valid request for January 2025. */
export const JANUARY = { startTimestamp: JAN_1_2025, endTimestamp: FEB_1_2025 - 1, numUsers: 10 } as const;

/** The UTC month of a Unix time as a count of months since year 0 (January 2026 is 2026 × 12). */
export function monthIndex(unixSeconds: number): number {
  const date = new Date(unixSeconds * 1000);
  return date.getUTCFullYear() * 12 + date.getUTCMonth();
}

/** The start (00:00:00 UTC on the 1st) of the month `index` (as monthIndex counts them). */
export function monthStart(index: number): number {
  return Date.UTC(Math.floor(index / 12), index % 12, 1) / 1000;
}

/**
 * `unixSeconds` moved by whole calendar months: the same offset from the start of its month, or, for the last
 * second of a month, the last second of the moved month. For pages whose examples are written on fixed dates
 * (docs/api.md's races are November and December 2026), so that a test can run them at any date.
 */
export function movedByMonths(unixSeconds: number, months: number): number {
  const next = unixSeconds + 1;
  if (monthStart(monthIndex(next)) === next) return monthStart(monthIndex(next) + months) - 1;
  const index = monthIndex(unixSeconds);
  return monthStart(index + months) + (unixSeconds - monthStart(index));
}
