/**
 * The rules for a leaderboard request, shared by every protocol. Returns every
 * problem at once, each naming its field, instead of stopping at the first.
 */

import { EARLIEST_PERIOD_START, MAX_PLAUSIBLE_UNIX_SECONDS } from "../../values/calendar.js";
import type { Violation } from "../../values/violation.js";
import type { RankBy } from "../../values/weights.js";

/** 2024-12-02T05:00:00Z: the earliest start the API accepts (races share it, see calendar.ts). */
export const EARLIEST_START = EARLIEST_PERIOD_START;
/** Above this a "Unix seconds" value is almost surely milliseconds (see calendar.ts). */
export const MAX_TIMESTAMP = MAX_PLAUSIBLE_UNIX_SECONDS;
export const MAX_NUM_USERS = 100;

/** A request as received, fields absent when the caller left them out. */
export interface PeriodRequestFields {
  readonly startTimestamp?: bigint | undefined;
  readonly endTimestamp?: bigint | undefined;
  readonly numUsers?: bigint | number | undefined;
  /** Absent: the caller's default. A value the skin could not read is its decoding violation. */
  readonly rankBy?: RankBy | undefined;
}

/** A valid request: an inclusive period [start, end] in Unix seconds, a list length and the ranking. */
export interface PeriodQuery {
  readonly start: number;
  readonly end: number;
  readonly numUsers: number;
  /** Default "wagered". */
  readonly rankBy?: RankBy;
}

export type PeriodValidation =
  | { readonly ok: true; readonly query: PeriodQuery }
  | { readonly ok: false; readonly violations: Violation[] };

/** `defaultRankBy`: what the board ranks by when the request does not say (the caller's key default). */
export function periodFromRequest(request: PeriodRequestFields, defaultRankBy: RankBy = "wagered"): PeriodValidation {
  const violations: Violation[] = [];
  const start = checkTimestamp("startTimestamp", request.startTimestamp, violations);
  if (start !== undefined && start < EARLIEST_START) {
    violations.push({
      field: "startTimestamp",
      message: `startTimestamp must be ${EARLIEST_START} (2 December 2024) or later`,
    });
  }
  const end = checkTimestamp("endTimestamp", request.endTimestamp, violations);
  if (end !== undefined && start !== undefined && end < start) {
    violations.push({
      field: "endTimestamp",
      message: "endTimestamp must not be before startTimestamp (both are inclusive. Equal means one second)",
    });
  }
  let numUsers: number | undefined;
  if (request.numUsers === undefined) {
    violations.push({ field: "numUsers", message: "numUsers is required" });
  } else if (request.numUsers < 1 || request.numUsers > MAX_NUM_USERS) {
    violations.push({ field: "numUsers", message: `numUsers must be between 1 and ${MAX_NUM_USERS}` });
  } else {
    numUsers = Number(request.numUsers);
  }
  if (violations.length > 0 || start === undefined || end === undefined || numUsers === undefined) {
    return { ok: false, violations };
  }
  return { ok: true, query: { start, end, numUsers, rankBy: request.rankBy ?? defaultRankBy } };
}

function checkTimestamp(field: string, value: bigint | undefined, violations: Violation[]): number | undefined {
  if (value === undefined) {
    violations.push({ field, message: `${field} is required` });
    return undefined;
  }
  if (value > BigInt(MAX_TIMESTAMP) * 1000n) {
    violations.push({ field, message: `${field} is too large for Unix seconds (at most ${MAX_TIMESTAMP})` });
    return undefined;
  }
  if (value > BigInt(MAX_TIMESTAMP)) {
    violations.push({
      field,
      message: `${field} looks like milliseconds. Send Unix seconds (divide by 1000)`,
    });
    return undefined;
  }
  if (value < 0n) {
    violations.push({ field, message: `${field} must be a Unix timestamp in seconds (0 or more)` });
    return undefined;
  }
  return Number(value);
}
