/**
 * Recurring races: a series repeats daily, weekly or monthly in an IANA time zone, anchored on its first
 * race's start. Race k starts at the anchor's wall-clock time k days, weeks or months later in that zone
 * (luxon does the calendar and DST arithmetic), always counted from the anchor and never from the previous
 * race, so a series anchored on the 31st does not drift to the 28th after February. Race k ends one second
 * before race k+1 starts (periods are inclusive Unix seconds), so the races of a series tile time exactly.
 */
import { DateTime, IANAZone } from "luxon";

export type Repeat = "none" | "daily" | "weekly" | "monthly";
/** A repeat that makes a series. */
export type SeriesRepeat = Exclude<Repeat, "none">;

export const REPEAT_VALUES: readonly Repeat[] = ["none", "daily", "weekly", "monthly"];

export function isRepeat(value: unknown): value is Repeat {
  return value === "none" || value === "daily" || value === "weekly" || value === "monthly";
}

/** Whether luxon (and so the Intl time-zone data of this Node) knows the IANA zone, e.g. "America/New_York". */
export function isTimeZone(name: string): boolean {
  return IANAZone.isValidZone(name);
}

/** The inclusive period [start, end] (Unix seconds) of race `index` (0: the anchor's) of a series. */
export function seriesPeriod(
  anchorStart: number,
  repeat: SeriesRepeat,
  timeZone: string,
  index: number,
): { start: number; end: number } {
  return {
    start: seriesStart(anchorStart, repeat, timeZone, index),
    end: seriesStart(anchorStart, repeat, timeZone, index + 1) - 1,
  };
}

/** The index of the series' race whose period holds `t` (Unix seconds); −1 before the anchor. */
export function seriesIndexAt(anchorStart: number, repeat: SeriesRepeat, timeZone: string, t: number): number {
  if (t < anchorStart) return -1;
  // A guess from the mean length of a step, then corrected: DST and month lengths move it by at most one or two.
  let index = Math.floor((t - anchorStart) / MEAN_STEP_SECONDS[repeat]);
  while (index > 0 && seriesStart(anchorStart, repeat, timeZone, index) > t) index -= 1;
  while (seriesStart(anchorStart, repeat, timeZone, index + 1) <= t) index += 1;
  return index;
}

const MEAN_STEP_SECONDS: Record<SeriesRepeat, number> = {
  daily: 86_400,
  weekly: 7 * 86_400,
  monthly: (365.2425 / 12) * 86_400,
};

const STEP_UNIT = { daily: "days", weekly: "weeks", monthly: "months" } as const;

function seriesStart(anchorStart: number, repeat: SeriesRepeat, timeZone: string, index: number): number {
  const anchor = DateTime.fromSeconds(anchorStart, { zone: timeZone });
  if (!anchor.isValid) throw new Error(`unknown time zone: ${JSON.stringify(timeZone)}`);
  return anchor.plus({ [STEP_UNIT[repeat]]: index }).toUnixInteger();
}

/**
 * Where a new series begins (docs/api.md, "Series"): its start anchors the cadence, and the series begins with
 * the period that holds `now`: a start in the past makes no races for the periods already over (no history
 * is made up, no prizes paid for them). A one-off race, and a series whose first period is not over, begin
 * as given. `anchorStart` stays the given start, so later races keep its wall-clock time.
 */
export function seriesStartAt(
  definition: {
    readonly startTimestamp: number;
    readonly endTimestamp: number;
    readonly repeat: Repeat;
    readonly timeZone: string;
  },
  now: number,
): { startTimestamp: number; endTimestamp: number; seriesIndex: number; anchorStart: number } {
  const anchorStart = definition.startTimestamp;
  const given = { startTimestamp: anchorStart, endTimestamp: definition.endTimestamp, seriesIndex: 0, anchorStart };
  if (definition.repeat === "none" || now <= definition.endTimestamp) return given;
  const index = seriesIndexAt(anchorStart, definition.repeat, definition.timeZone, now);
  const period = seriesPeriod(anchorStart, definition.repeat, definition.timeZone, index);
  return { startTimestamp: period.start, endTimestamp: period.end, seriesIndex: index, anchorStart };
}
