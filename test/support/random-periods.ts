/**
 * Random periods over the data window of test/integration/leaderboard-equals-naive.test.ts:
 * aligned, misaligned, one second, spanning months and years, future ends. The
 * same shapes drive the pure bucketRanges test in test/unit/period-buckets.test.ts.
 */

export const DATA_FROM = Date.UTC(2025, 10, 20) / 1000; // 2025-11-20
export const DATA_TO = Date.UTC(2026, 2, 10) / 1000; // 2026-03-10: spans a year boundary and February
export const NOW = Date.UTC(2026, 2, 1) / 1000; // data continues past "now" only within ingest's allowance in real life; here it is just data

/** One random period [start, end] (inclusive), drawn with `next` (a generator of [0, 1)). */
export function randomPeriod(next: () => number): [number, number] {
  const kind = Math.floor(next() * 6);
  const anyTime = () => DATA_FROM - 86_400 + Math.floor(next() * (DATA_TO - DATA_FROM + 2 * 86_400));
  const start = anyTime();
  switch (kind) {
    case 0: // aligned to the hour
      return [start - (start % 3600), start - (start % 3600) + 3600 * Math.floor(1 + next() * 200) - 1];
    case 1: // aligned to days, whole days
      return [start - (start % 86_400), start - (start % 86_400) + 86_400 * Math.floor(1 + next() * 60) - 1];
    case 2: // one second
      return [start, start];
    case 3: // calendar months
      {
        const d = new Date(start * 1000);
        const from = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) / 1000;
        const to = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1 + Math.floor(next() * 3), 1) / 1000 - 1;
        return [from, to];
      }
    case 4: // future end
      return [start, NOW + 86_400 * 400];
    default: // anything
      return [start, start + Math.floor(next() * 90 * 86_400)];
  }
}
