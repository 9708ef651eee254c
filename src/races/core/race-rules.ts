/**
 * The rules for a race's definition, shared by every protocol: what CreateRace accepts (every problem at once,
 * one per field, in field order, fields named as their JSON names) and what UpdateRace may change when. The
 * period follows the board's rules (inclusive Unix seconds, not before 2 December 2024, seconds not
 * milliseconds); a series' end is computed from its repeat and time zone (recurrence.ts), so it may be left
 * out and, when sent, must be that value. An empty string counts as absent for the fields with a default
 * (currency, minWagered, timeZone), as proto3 leaves an unset string empty.
 */
import type { RaceDefinition as StoredRaceDefinition } from "../../ports/races.js";
import { EARLIEST_PERIOD_START, MAX_PLAUSIBLE_UNIX_SECONDS } from "../../values/calendar.js";
import type { Violation } from "../../values/violation.js";
import type { RankBy } from "../../values/weights.js";
import { isTimeZone, type Repeat, seriesPeriod } from "./recurrence.js";

export const MAX_PRIZE_RANKS = 100;
export const MAX_SHOWN = 100;
export const MAX_EXCLUDED_USERS = 1_000;
export const MAX_USER_ID_LENGTH = 64;
export const MAX_TITLE_LENGTH = 120;
/** 30 days. */
export const MAX_REVIEW_SECONDS = 2_592_000;
/**
 * The longest a race may span: 400 days, a year's race (366 days in a leap year) with a month to spare. A race not
 * final holds back its own affiliate's retention from its start (ingest/sql/wager-retention.ts), so this also bounds
 * how long one race can do that: 400 days and its review.
 */
export const MAX_RACE_DAYS = 400;
export const MAX_RACE_SECONDS = MAX_RACE_DAYS * 86_400;
/**
 * The last second a race may start or end: 2099-12-31T23:59:59Z. Every time a race stores fits the INT UNSIGNED
 * columns (to 2106-02-07T06:28:15Z) with room to spare: its end, the second after its review (30 days at most) when
 * the clock next looks at it, its series' next race (a series ends with its last race before 2100).
 */
export const MAX_RACE_TIMESTAMP = 4_102_444_799;
const MAX_RACE_TIME_TEXT = `${MAX_RACE_TIMESTAMP} (2099-12-31T23:59:59Z)`;
export const DEFAULT_REVIEW_SECONDS = 86_400;
/** What `shown` is when there are no prizes and the definition does not say. */
export const DEFAULT_SHOWN_WITHOUT_PRIZES = 10;

const SLUG = /^[a-z0-9][a-z0-9-]{0,63}$/;
const AMOUNT = /^\d{1,12}(\.\d{1,8})?$/;
const CURRENCY = /^[A-Z0-9]{1,12}$/;
const AMOUNT_RULE = "must be a decimal amount of 0 or more with at most 12 digits before the point and 8 after";

/** A definition as received, fields absent when the caller left them out. */
export interface RaceDefinitionFields {
  readonly slug?: string | undefined;
  readonly title?: string | undefined;
  readonly startTimestamp?: bigint | number | undefined;
  readonly endTimestamp?: bigint | number | undefined;
  /** Absent: "wagered". A value the skin could not read is its decoding violation. */
  readonly rankBy?: RankBy | undefined;
  readonly prizes?: readonly string[] | undefined;
  readonly currency?: string | undefined;
  readonly minWagered?: string | undefined;
  readonly excludedUserIds?: readonly string[] | undefined;
  readonly reviewSeconds?: bigint | number | undefined;
  readonly shown?: bigint | number | undefined;
  /** Absent: "none". A value the skin could not read is its decoding violation. */
  readonly repeat?: Repeat | undefined;
  readonly timeZone?: string | undefined;
}

/**
 * A valid definition, defaults filled in: the stored definition (ports/races.ts) with its period named as these
 * rules name it, `start` and `end` (the first race's inclusive period).
 */
export interface RaceDefinition extends Omit<StoredRaceDefinition, "startTimestamp" | "endTimestamp"> {
  readonly start: number;
  readonly end: number;
}

export type RaceValidation =
  | { readonly ok: true; readonly value: RaceDefinition }
  | { readonly ok: false; readonly violations: Violation[] };

/** The fields in the order their violations are reported. */
export const RACE_FIELDS = [
  "slug",
  "title",
  "startTimestamp",
  "endTimestamp",
  "rankBy",
  "prizes",
  "currency",
  "minWagered",
  "excludedUserIds",
  "reviewSeconds",
  "shown",
  "repeat",
  "timeZone",
] as const;

/**
 * Checks a definition. `decodingViolations`: the fields the skin could not read (wrong type); they are
 * reported with the rules' violations, one per field, and the rules see those fields as absent.
 */
export function validateRaceDefinition(
  fields: RaceDefinitionFields,
  decodingViolations: readonly Violation[] = [],
  options: DefinitionOptions = {},
): RaceValidation {
  const found: Violation[] = [];
  const problem: Problem = (field, message) => found.push({ field, message });
  const slug = checkedSlug(fields.slug ?? "", problem);
  const title = checkedTitle(fields.title ?? "", problem);
  const { start, end, repeat, timeZone, zoneKnown } = checkedPeriod(fields, options, problem);
  const prizes = checkedPrizes(fields.prizes ?? [], problem);
  const currency = orDefault(fields.currency, "USD");
  if (!CURRENCY.test(currency)) problem("currency", "currency must be 1 to 12 capital letters or digits (as USD)");
  const minWagered = orDefault(fields.minWagered, "0");
  if (!AMOUNT.test(minWagered)) problem("minWagered", `minWagered ${AMOUNT_RULE}`);
  const excluded = checkedExcluded(fields.excludedUserIds ?? [], problem);
  const reviewSeconds = wholeNumber(fields.reviewSeconds, DEFAULT_REVIEW_SECONDS, 0, MAX_REVIEW_SECONDS);
  if (reviewSeconds === undefined) {
    problem("reviewSeconds", `reviewSeconds must be a whole number from 0 to ${MAX_REVIEW_SECONDS} (30 days)`);
  }
  const defaultShown = prizes.length > 0 ? Math.min(prizes.length, MAX_SHOWN) : DEFAULT_SHOWN_WITHOUT_PRIZES;
  const shown = wholeNumber(fields.shown, defaultShown, 1, MAX_SHOWN);
  if (shown === undefined) problem("shown", `shown must be a whole number from 1 to ${MAX_SHOWN}`);
  if (!zoneKnown) problem("timeZone", "timeZone is not an IANA time zone name known to this server");

  const violations = inFieldOrder([...decodingViolations, ...found]);
  if (violations.length > 0 || start === undefined || end === undefined) return { ok: false, violations };
  if (reviewSeconds === undefined || shown === undefined) return { ok: false, violations };
  const rankBy = fields.rankBy ?? "wagered";
  const excludedUserIds = [...new Set(excluded)];
  return {
    ok: true,
    value: {
      slug,
      title,
      start,
      end,
      rankBy,
      prizes: [...prizes],
      currency,
      minWagered,
      excludedUserIds,
      reviewSeconds,
      shown,
      repeat,
      timeZone,
    },
  };
}

/** Reports a violation of one field. */
type Problem = (field: string, message: string) => void;

function checkedSlug(slug: string, problem: Problem): string {
  if (slug === "") problem("slug", "slug is required");
  else if (!SLUG.test(slug)) {
    problem("slug", "slug must be 1 to 64 lowercase letters, digits and hyphens, starting with a letter or digit");
  }
  return slug;
}

function checkedTitle(title: string, problem: Problem): string {
  if (title.trim() === "") problem("title", "title is required");
  else if (codePoints(title) > MAX_TITLE_LENGTH) {
    problem("title", `title must be at most ${MAX_TITLE_LENGTH} characters`);
  }
  return title;
}

/**
 * The first race's period, its repeat and its time zone (UTC when absent). The time zone's own problem is
 * reported by the caller; an unknown zone leaves a series' end uncomputed.
 */
function checkedPeriod(fields: RaceDefinitionFields, options: DefinitionOptions, problem: Problem) {
  const repeat = fields.repeat ?? "none";
  const timeZone = orDefault(fields.timeZone, "UTC");
  const zoneKnown = isTimeZone(timeZone);
  const start = timestamp("startTimestamp", fields.startTimestamp, problem);
  if (start !== undefined && start < EARLIEST_PERIOD_START) {
    problem("startTimestamp", `startTimestamp must be ${EARLIEST_PERIOD_START} (2 December 2024) or later`);
  }
  const zone = zoneKnown ? timeZone : undefined;
  const end = periodEnd(fields.endTimestamp, start, repeat, zone, problem, options.seriesEnd);
  if (start !== undefined && end !== undefined && end - start >= MAX_RACE_SECONDS && options.periodKept !== true) {
    problem(
      "endTimestamp",
      `endTimestamp must be at most ${start + MAX_RACE_SECONDS - 1}: a race spans at most ${MAX_RACE_DAYS} days ` +
        `(${MAX_RACE_SECONDS} seconds, both ends inclusive)`,
    );
  }
  return { start, end, repeat, timeZone, zoneKnown };
}

function checkedPrizes(prizes: readonly string[], problem: Problem): readonly string[] {
  if (prizes.length > MAX_PRIZE_RANKS) {
    problem("prizes", `prizes has ${prizes.length} ranks. At most ${MAX_PRIZE_RANKS} are allowed`);
  } else {
    prizes.forEach((prize, i) => {
      if (!AMOUNT.test(prize)) problem(`prizes[${i}]`, `prizes[${i}] (rank ${i + 1}) ${AMOUNT_RULE}`);
    });
  }
  return prizes;
}

function checkedExcluded(excluded: readonly string[], problem: Problem): readonly string[] {
  if (excluded.length > MAX_EXCLUDED_USERS) {
    problem("excludedUserIds", `excludedUserIds has ${excluded.length} ids. At most ${MAX_EXCLUDED_USERS} are allowed`);
  } else {
    excluded.forEach((id, i) => {
      if (id === "" || codePoints(id) > MAX_USER_ID_LENGTH) {
        problem(`excludedUserIds[${i}]`, `excludedUserIds[${i}] must be 1 to ${MAX_USER_ID_LENGTH} characters`);
      }
    });
  }
  return excluded;
}

/** How a definition is checked beyond its fields. */
export interface DefinitionOptions {
  /**
   * A series race's end as its series counts it, when its period is not being changed: a later race of a
   * series is counted from the series' anchor, not from its own start (a monthly series anchored on the 31st
   * has a race from the 28th of February to the 30th of March), so its end is not the one its start alone gives.
   */
  readonly seriesEnd?: number;
  /** The period is the race's own, unchanged: a race made before a period rule (its span) keeps its period. */
  readonly periodKept?: boolean;
}

/** The end: as sent without a repeat; for a series computed (or `seriesEnd`), and when sent, checked against it. */
function periodEnd(
  sent: bigint | number | undefined,
  start: number | undefined,
  repeat: Repeat,
  timeZone: string | undefined,
  problem: Problem,
  seriesEnd?: number,
): number | undefined {
  if (repeat === "none") {
    const end = timestamp("endTimestamp", sent, problem);
    if (end !== undefined && start !== undefined && end < start) {
      problem(
        "endTimestamp",
        "endTimestamp must not be before startTimestamp (both are inclusive. Equal means one second)",
      );
    }
    return end;
  }
  const end = sent === undefined ? undefined : timestamp("endTimestamp", sent, problem);
  if (start === undefined || timeZone === undefined) return undefined;
  const computed = seriesEnd ?? seriesPeriod(start, repeat, timeZone, 0).end;
  if (computed > MAX_RACE_TIMESTAMP) {
    problem("startTimestamp", `startTimestamp must let the first ${repeat} race end by ${MAX_RACE_TIME_TEXT}`);
    return undefined;
  }
  if (sent !== undefined && end !== undefined && end !== computed) {
    problem(
      "endTimestamp",
      `endTimestamp must be ${computed} (the second before the next ${repeat} race starts) or be left out`,
    );
  }
  return computed;
}

function timestamp(field: string, value: bigint | number | undefined, problem: Problem): number | undefined {
  if (value === undefined) {
    problem(field, `${field} is required`);
    return undefined;
  }
  if (typeof value === "number" && !Number.isInteger(value)) {
    problem(field, `${field} must be whole Unix seconds`);
    return undefined;
  }
  if (value > MAX_PLAUSIBLE_UNIX_SECONDS) {
    problem(field, `${field} looks like milliseconds. Send Unix seconds (divide by 1000)`);
    return undefined;
  }
  if (value > MAX_RACE_TIMESTAMP) {
    problem(field, `${field} must be at most ${MAX_RACE_TIME_TEXT}`);
    return undefined;
  }
  if (value < 0) {
    problem(field, `${field} must be a Unix timestamp in seconds (0 or more)`);
    return undefined;
  }
  return Number(value);
}

/** The value, its default when absent, or undefined when it is not a whole number within [min, max]. */
function wholeNumber(
  value: bigint | number | undefined,
  fallback: number,
  min: number,
  max: number,
): number | undefined {
  if (value === undefined) return fallback;
  if (typeof value === "number" && !Number.isInteger(value)) return undefined;
  return value < min || value > max ? undefined : Number(value);
}

function orDefault(value: string | undefined, fallback: string): string {
  return value === undefined || value === "" ? fallback : value;
}

function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}

/** One violation per field (the first: a decoding problem wins), sorted by RACE_FIELDS then by list index. */
export function inFieldOrder(violations: readonly Violation[]): Violation[] {
  const seen = new Set<string>();
  const unique = violations.filter((v) => {
    if (v.field === undefined) return true;
    if (seen.has(v.field)) return false;
    seen.add(v.field);
    return true;
  });
  return unique
    .map((violation, position) => ({ violation, position, key: fieldKey(violation.field) }))
    .sort((a, b) => a.key[0] - b.key[0] || a.key[1] - b.key[1] || a.position - b.position)
    .map((sorted) => sorted.violation);
}

function fieldKey(field: string | undefined): [number, number] {
  const match = /^([A-Za-z]+)(?:\[(\d+)\])?$/.exec(field ?? "");
  const order = RACE_FIELDS.indexOf((match?.[1] ?? "") as (typeof RACE_FIELDS)[number]);
  return [order === -1 ? RACE_FIELDS.length : order, match?.[2] === undefined ? -1 : Number(match[2])];
}

/** What UpdateRace may change: any definition field but the slug; absent (or "" where a default exists): unchanged. */
export type RacePatch = Omit<RaceDefinitionFields, "slug">;

/** The race an update applies to: its definition, and whether it was cancelled or frozen (and when). */
export interface CurrentRace {
  readonly definition: RaceDefinition;
  readonly cancelledAt: number | null;
  readonly frozenAt: number | null;
}

/** Why a well-formed update is refused in the race's present state (`failed_precondition`). */
export type RaceUpdateRefusal = "final" | "cancelled" | "ended" | "started";

export type RaceUpdateCheck =
  | { readonly ok: true; readonly value: RaceDefinition }
  /** A field breaks a rule: `invalid_argument`, one violation per field. */
  | { readonly ok: false; readonly kind: "invalid_argument"; readonly violations: Violation[] }
  /** Not now: `failed_precondition`; `field` names the first period field that may no longer change. */
  | {
      readonly ok: false;
      readonly kind: "failed_precondition";
      readonly refusal: RaceUpdateRefusal;
      readonly message: string;
      readonly field?: string;
    };

const PERIOD_FIELDS = ["startTimestamp", "endTimestamp", "repeat", "timeZone"] as const;

/**
 * Applies an update at `now` (Unix seconds). A final or cancelled race changes no more; rules, prizes and the
 * title change until the race ends (now ≤ end); the period (start, end, repeat, time zone) only while the race
 * is scheduled (now < start): a period field sent with its present value is no change. A series whose start,
 * repeat or time zone changes gets its end computed anew unless the update sends one. `shown` stays as it was
 * unless sent. The state is checked first: a refused update is refused whatever its fields.
 */
export function validateRaceUpdate(
  current: CurrentRace,
  patch: RacePatch,
  now: number,
  decodingViolations: readonly Violation[] = [],
): RaceUpdateCheck {
  const race = current.definition;
  if (current.frozenAt !== null) {
    return refuse("final", "the race is final. Its result and rules never change");
  }
  if (current.cancelledAt !== null) return refuse("cancelled", "the race is cancelled. It changes no more");
  if (now > race.end) {
    return refuse("ended", `the race ended at ${race.end}. Its rules and prizes no longer change`);
  }
  const changed = PERIOD_FIELDS.filter((field) => periodFieldChanges(race, patch, field));
  const firstChanged = changed[0];
  if (firstChanged !== undefined && now >= race.start) {
    const message = `the race started at ${race.start}. Its period changes only while it is scheduled`;
    return refuse("started", message, firstChanged);
  }
  const recomputeEnd = changed.some((field) => field !== "endTimestamp") && patch.endTimestamp === undefined;
  const merged: RaceDefinitionFields = {
    slug: race.slug,
    title: patch.title ?? race.title,
    startTimestamp: patch.startTimestamp ?? race.start,
    endTimestamp:
      patch.endTimestamp ?? (recomputeEnd && (patch.repeat ?? race.repeat) !== "none" ? undefined : race.end),
    rankBy: patch.rankBy ?? race.rankBy,
    prizes: patch.prizes ?? race.prizes,
    currency: orDefault(patch.currency, race.currency),
    minWagered: orDefault(patch.minWagered, race.minWagered),
    excludedUserIds: patch.excludedUserIds ?? race.excludedUserIds,
    reviewSeconds: patch.reviewSeconds ?? race.reviewSeconds,
    shown: patch.shown ?? race.shown,
    repeat: patch.repeat ?? race.repeat,
    timeZone: orDefault(patch.timeZone, race.timeZone),
  };
  // An unchanged series period keeps the end its series gave it; a changed one starts counting anew.
  const periodKept = !changed.some((field) => field !== "endTimestamp");
  const seriesEnd = periodKept && race.repeat !== "none" ? { seriesEnd: race.end } : {};
  const options = { ...seriesEnd, periodKept: changed.length === 0 };
  const validation = validateRaceDefinition(merged, decodingViolations, options);
  return validation.ok ? validation : { ok: false, kind: "invalid_argument", violations: validation.violations };
}

function periodFieldChanges(race: RaceDefinition, patch: RacePatch, field: (typeof PERIOD_FIELDS)[number]): boolean {
  switch (field) {
    case "startTimestamp":
      return patch.startTimestamp !== undefined && String(patch.startTimestamp) !== String(race.start);
    case "endTimestamp":
      return patch.endTimestamp !== undefined && String(patch.endTimestamp) !== String(race.end);
    case "repeat":
      return patch.repeat !== undefined && patch.repeat !== race.repeat;
    case "timeZone":
      return orDefault(patch.timeZone, race.timeZone) !== race.timeZone;
  }
}

function refuse(refusal: RaceUpdateRefusal, message: string, field?: string): RaceUpdateCheck {
  const base = { ok: false, kind: "failed_precondition", refusal, message } as const;
  return field === undefined ? base : { ...base, field };
}
