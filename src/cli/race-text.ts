/**
 * How the races CLI reads and writes a race's times and describes a race. Times are read in the race's own
 * zone when they carry no offset; a date alone is a whole day (the period is inclusive): as a start, its first
 * second (00:00:00), as an end, its last (23:59:59), so `--end 2026-12-31` counts the 31st. Every time printed
 * is in UTC and, for a race in another zone, in that zone too.
 */
import { DateTime } from "luxon";
import type { RaceView } from "../races/core/races.js";
import { isoSeconds, UsageError } from "./common.js";

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/**
 * Unix seconds, or an ISO 8601 date or date-time: with an offset (Z, +02:00) as written, without one in
 * `timeZone` (default UTC), e.g. `2026-12-23T00:00` with --time-zone America/New_York. A date alone is its
 * day's first second for a start and its last second for an end.
 */
export function parseTime(
  option: string,
  text: string,
  timeZone: string | undefined,
  edge: "start" | "end" = "start",
): number {
  if (/^\d{1,12}$/.test(text)) return Number(text);
  const parsed = DateTime.fromISO(text, { zone: timeZone ?? "UTC", setZone: true });
  if (!parsed.isValid) {
    throw new UsageError(
      `${option} must be Unix seconds or an ISO 8601 date or time (2026-12-01, 2026-12-01T00:00:00Z), got "${text}"`,
    );
  }
  const moment = DATE_ONLY.test(text) && edge === "end" ? parsed.endOf("day").startOf("second") : parsed;
  const millis = moment.toMillis();
  if (millis % 1000 !== 0) throw new UsageError(`${option} must be a whole second, got "${text}"`);
  return millis / 1000;
}

/** A time in UTC, and in `timeZone` beside it when that is another zone: `…Z (2026-12-31 23:59:59 America/New_York)`. */
export function zonedTime(unixSeconds: number, timeZone: string): string {
  const utc = isoSeconds(unixSeconds);
  if (timeZone === "UTC") return utc;
  const local = DateTime.fromSeconds(unixSeconds, { zone: timeZone }).toFormat("yyyy-MM-dd HH:mm:ss");
  return `${utc} (${local} ${timeZone})`;
}

/** The prize table's sum with its currency, e.g. "10000.00 USD"; "-" without prizes. */
export function prizeTotal(view: RaceView): string {
  const { prizes, currency } = view.race;
  if (prizes.length === 0) return "-";
  const scale = Math.max(0, ...prizes.map((p) => p.split(".")[1]?.length ?? 0));
  const units = prizes.reduce((sum, p) => {
    const [whole = "0", fraction = ""] = p.split(".");
    return sum + BigInt(whole + fraction.padEnd(scale, "0"));
  }, 0n);
  const text = units.toString().padStart(scale + 1, "0");
  return `${scale === 0 ? text : `${text.slice(0, -scale)}.${text.slice(-scale)}`} ${currency}`;
}

/** A race's definition and where it stands, a few lines, each time also in the race's zone. */
export function describeRace(view: RaceView): string {
  const { race } = view;
  const at = (unixSeconds: number) => zonedTime(unixSeconds, race.timeZone);
  const lines = [
    `${race.id}  ${race.slug}  ${view.state}  ${race.title}`,
    `  period   ${at(race.startTimestamp)} to ${at(race.endTimestamp)} (${race.startTimestamp}–${race.endTimestamp})` +
      (race.repeat === "none" ? "" : `, repeats ${race.repeat} in ${race.timeZone}`),
    `  final    ${at(view.finalAt)} (review ${race.reviewSeconds} s)`,
    `  ranks by ${race.rankBy}; prizes ${race.prizes.length === 0 ? "none" : `${race.prizes.join(" ")} ${race.currency}`}` +
      `; shows ${race.shown}; minimum ${race.minWagered}` +
      (race.excludedUserIds.length === 0 ? "" : `; excludes ${race.excludedUserIds.join(" ")}`),
  ];
  if (view.next !== null) lines.push(`  next     ${view.next.id} from ${at(view.next.startsAt)}`);
  if (race.digest !== null && race.frozenAt !== null) {
    lines.push(`  result   frozen ${at(race.frozenAt)}, digest ${race.digest}`);
  }
  if (race.cancelledAt !== null) lines.push(`  cancelled ${at(race.cancelledAt)}`);
  return `${lines.join("\n")}\n`;
}
