/**
 * `topwagers races …`: create, list, show and cancel an affiliate's races on the configured
 * database, through the same rules as RaceService (src/races/core/races.ts). A race's clock runs in the
 * servers (RACE_CLOCK_MS): a race made here starts, ends and is frozen by them.
 */

import { userInfo } from "node:os";
import { parseDuration } from "../keys/core/key-admin.js";
import { loadConfig } from "../platform/config.js";
import type { Database } from "../platform/database/database.js";
import { silentLogger } from "../platform/logger.js";
import type { RaceActor } from "../ports/race-history.js";
import { NO_AFFILIATE } from "../ports/races.js";
import type { RaceDefinitionFields, RacePatch } from "../races/core/race-rules.js";
import { RACE_STATES, type RaceState } from "../races/core/race-state.js";
import type { RaceOutcome, Races, RaceView } from "../races/core/races.js";
import { isRepeat, isTimeZone } from "../races/core/recurrence.js";
import { mariadbRaces } from "../races/sql/race-store.js";
import { raceJson, raceSummaryJson } from "../races/wire/codecs/race-json.js";
import { createRaces } from "../services/races.js";
import { resultSigner } from "../services/signing.js";
import type { Violation } from "../values/violation.js";
import { isRankBy } from "../values/weights.js";
import { alignColumns } from "./columns.js";
import { DataError, parseCommandOptions, UsageError, withDatabase } from "./common.js";
import { describeRace, parseTime, prizeTotal, zonedTime } from "./race-text.js";
import { RUN } from "./usage.js";

/** The options of the races commands that take a value. */
const VALUE_OPTIONS = new Set([
  "--affiliate",
  "--slug",
  "--title",
  "--start",
  "--end",
  "--prize",
  "--currency",
  "--min-wagered",
  "--exclude",
  "--review",
  "--shown",
  "--repeat",
  "--time-zone",
  "--rank-by",
  "--state",
]);

/**
 * `--prize -5` as `--prize=-5`: parseArgs takes a value starting with "-" for an option, so a negative
 * number after an option that takes a value is joined to it, and the rules refuse it with their message
 * naming the option (exit 2).
 */
export function joinNegativeValues(args: readonly string[]): string[] {
  const joined: string[] = [];
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i] as string;
    const value = args[i + 1];
    if (VALUE_OPTIONS.has(arg) && value !== undefined && /^-\d/.test(value)) {
      joined.push(`${arg}=${value}`);
      i += 1;
    } else {
      joined.push(arg);
    }
  }
  return joined;
}

/** The options of the races commands; a misspelt or incomplete option is a usage error (exit 2). */
function parseRacesOptions(args: string[]) {
  return parseCommandOptions(joinNegativeValues(args), {
    affiliate: { type: "string" },
    slug: { type: "string" },
    title: { type: "string" },
    start: { type: "string" },
    end: { type: "string" },
    prize: { type: "string", multiple: true },
    currency: { type: "string" },
    "min-wagered": { type: "string" },
    exclude: { type: "string", multiple: true },
    review: { type: "string" },
    shown: { type: "string" },
    repeat: { type: "string" },
    "time-zone": { type: "string" },
    "rank-by": { type: "string" },
    state: { type: "string", multiple: true },
    json: { type: "boolean", default: false },
    "allow-past": { type: "boolean", default: false },
    "no-prizes": { type: "boolean", default: false },
    "no-excluded": { type: "boolean", default: false },
    "this-race": { type: "boolean", default: false },
  });
}

type Values = ReturnType<typeof parseRacesOptions>["values"];

/** The option that sets each field of a definition, for messages. */
const OPTION_OF: Readonly<Record<string, string>> = {
  slug: "--slug",
  title: "--title",
  startTimestamp: "--start",
  endTimestamp: "--end",
  rankBy: "--rank-by",
  prizes: "--prize",
  currency: "--currency",
  minWagered: "--min-wagered",
  excludedUserIds: "--exclude",
  reviewSeconds: "--review",
  shown: "--shown",
  repeat: "--repeat",
  timeZone: "--time-zone",
  pageSize: "--page-size",
  pageToken: "--page-token",
};

function violationLines(violations: readonly Violation[]): string {
  return violations
    .map((v) => {
      const option = v.field === undefined ? undefined : OPTION_OF[v.field.replace(/\[\d+\]$/, "")];
      // The rules name the request's field; here it is an option.
      const message = v.message.replace("send allowPast: true", "pass --allow-past");
      return option === undefined ? message : `${option}: ${message}`;
    })
    .join("\n       ");
}

/**
 * An outcome's value; the rules' refusal is a usage error (exit 2, naming the options), the data's
 * (no such race, its state, a slug taken) a data error (exit 1).
 */
function outcomeValue<T>(outcome: RaceOutcome<T>, affiliate: string): T {
  switch (outcome.kind) {
    case "ok":
      return outcome.value;
    case "invalid":
      throw new UsageError(violationLines(outcome.violations));
    case "not-found":
      throw new DataError(
        `affiliate ${affiliate} has no race ${outcome.id} (see: ${RUN} races list --affiliate ${affiliate})`,
      );
    case "precondition":
    case "limit":
      throw new DataError(outcome.message);
    case "slug-taken":
      throw new DataError(`another race of affiliate ${affiliate} already has the slug ${outcome.slug}`);
  }
}

function requireAffiliate(values: Values, command: string): string {
  const affiliate = values.affiliate;
  if (affiliate === undefined || affiliate.length < 1 || affiliate.length > 64) {
    throw new UsageError(`races ${command} needs --affiliate <affiliateId> (1 to 64 characters)`);
  }
  return affiliate;
}

/** The definition the options give; what they leave out takes the rules' defaults. */
function definitionOf(values: Values): RaceDefinitionFields {
  const decoding: string[] = [];
  const timeZone = values["time-zone"];
  const rankBy = values["rank-by"];
  if (rankBy !== undefined && !isRankBy(rankBy))
    decoding.push(`--rank-by must be wagered or weighted, got "${rankBy}"`);
  const repeat = values.repeat;
  if (repeat !== undefined && !isRepeat(repeat)) {
    decoding.push(`--repeat must be none, daily, weekly or monthly, got "${repeat}"`);
  }
  let reviewSeconds: number | undefined;
  if (values.review !== undefined) {
    reviewSeconds = /^\d{1,9}$/.test(values.review) ? Number(values.review) : parseDuration(values.review);
    if (reviewSeconds === undefined) {
      decoding.push(`--review must be seconds or a number with s, m, h, d or w (e.g. 1d), got "${values.review}"`);
    }
  }
  let shown: number | undefined;
  if (values.shown !== undefined) {
    if (/^\d{1,4}$/.test(values.shown)) shown = Number(values.shown);
    else decoding.push(`--shown must be a whole number from 1 to 100, got "${values.shown}"`);
  }
  if (values.start === undefined) decoding.push("--start is required: Unix seconds or an ISO 8601 date or time");
  if (decoding.length > 0) throw new UsageError(decoding.join("\n       "));
  // Times without an offset are read in the race's zone; an unknown zone is the rules' to report (UTC here).
  const zone = timeZone !== undefined && isTimeZone(timeZone) ? timeZone : undefined;
  return {
    slug: values.slug ?? "",
    title: values.title ?? "",
    ...(values.start === undefined ? {} : { startTimestamp: parseTime("--start", values.start, zone) }),
    ...(values.end === undefined ? {} : { endTimestamp: parseTime("--end", values.end, zone, "end") }),
    ...(rankBy !== undefined && isRankBy(rankBy) ? { rankBy } : {}),
    prizes: values.prize ?? [],
    ...(values.currency === undefined ? {} : { currency: values.currency }),
    ...(values["min-wagered"] === undefined ? {} : { minWagered: values["min-wagered"] }),
    excludedUserIds: values.exclude ?? [],
    ...(reviewSeconds === undefined ? {} : { reviewSeconds }),
    ...(shown === undefined ? {} : { shown }),
    ...(repeat !== undefined && isRepeat(repeat) ? { repeat } : {}),
    ...(timeZone === undefined ? {} : { timeZone }),
  };
}

/**
 * The change the options of `races update` ask for: only what they name; times without an offset in the race's
 * zone. --prize replaces the whole prize table (--no-prizes empties it), --exclude the excluded users
 * (--no-excluded empties them); the slug, repeat and zone do not change.
 */
function patchOf(values: Values, timeZone: string): RacePatch {
  const fixed = [values.slug && "--slug", values.repeat && "--repeat", values["time-zone"] && "--time-zone"];
  const named = fixed.filter((option): option is string => typeof option === "string");
  if (named.length > 0) throw new UsageError(`races update cannot change ${named.join(", ")} (make a new race)`);
  const { startTimestamp: _start, slug: _slug, title: _title, ...rules } = definitionOf({ ...values, start: "0" });
  return {
    ...(values.title === undefined ? {} : { title: values.title }),
    ...(values.start === undefined ? {} : { startTimestamp: parseTime("--start", values.start, timeZone) }),
    ...(values.end === undefined ? {} : { endTimestamp: parseTime("--end", values.end, timeZone, "end") }),
    ...(values.prize === undefined && !values["no-prizes"] ? {} : { prizes: values.prize ?? [] }),
    ...(values.exclude === undefined && !values["no-excluded"] ? {} : { excludedUserIds: values.exclude ?? [] }),
    ...(rules.rankBy === undefined ? {} : { rankBy: rules.rankBy }),
    ...(values.currency === undefined ? {} : { currency: values.currency }),
    ...(values["min-wagered"] === undefined ? {} : { minWagered: values["min-wagered"] }),
    ...(rules.reviewSeconds === undefined ? {} : { reviewSeconds: rules.reviewSeconds }),
    ...(rules.shown === undefined ? {} : { shown: rules.shown }),
  };
}

/**
 * Runs `work` with Races on the configured database (the primary's totals, uncached) and the affiliate's key.
 * Only `create` makes an affiliate not seen yet; elsewhere an unknown affiliate has no race (nothing is written).
 */
function withRaces<T>(
  affiliate: string,
  work: (races: Races, affiliateId: number) => Promise<T>,
  creates = false,
): Promise<T> {
  const config = loadConfig();
  return withDatabase(
    async (db: Database) => {
      const store = mariadbRaces(db.write);
      const races = createRaces({ database: db, config, signer: resultSigner(config, db, silentLogger) });
      const key = creates ? await store.affiliateKey(affiliate) : await store.findAffiliateKey(affiliate);
      return work(races, key ?? NO_AFFILIATE);
    },
    { config },
  );
}

/** Who a change made here is by, as the race's history records it: the CLI and the operating system user. */
function cliActor(): RaceActor {
  let user = "";
  try {
    user = userInfo().username;
  } catch {
    // No entry for this uid (a container's arbitrary user): the CLI without a name.
  }
  return { kind: "cli", id: user };
}

async function create(values: Values): Promise<void> {
  const affiliate = requireAffiliate(values, "create");
  const definition = definitionOf(values);
  const view = outcomeValue(
    await withRaces(affiliate, (races, id) => races.create(id, definition, [], cliActor(), values["allow-past"]), true),
    affiliate,
  );
  if (values.json) return void process.stdout.write(`${raceJson(view)}\n`);
  process.stdout.write(`Created race ${view.race.id} for affiliate ${affiliate}.\n${describeRace(view)}`);
}

async function list(values: Values): Promise<void> {
  const affiliate = requireAffiliate(values, "list");
  const states: RaceState[] = [];
  for (const state of values.state ?? []) {
    if (!(RACE_STATES as readonly string[]).includes(state)) {
      throw new UsageError(`--state must be one of ${RACE_STATES.join(", ")}, got "${state}"`);
    }
    states.push(state as RaceState);
  }
  const views = await withRaces(affiliate, async (races, id) => {
    const all: RaceView[] = [];
    let pageToken = "";
    do {
      const page = outcomeValue(
        await races.list(id, {
          states,
          pageSize: 100,
          ...(values.slug === undefined ? {} : { slug: values.slug }),
          ...(pageToken === "" ? {} : { pageToken }),
        }),
        affiliate,
      );
      all.push(...page.races);
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
    return all;
  });
  if (values.json) return void process.stdout.write(`[${views.map((view) => raceSummaryJson(view)).join(",")}]\n`);
  if (views.length === 0) {
    process.stdout.write(
      `No races of affiliate ${affiliate}${states.length === 0 ? "" : ` in state ${states.join(" or ")}`}. ` +
        `Create one with: ${RUN} races create --affiliate ${affiliate} --slug <slug> --title <title> --start <time>\n`,
    );
    return;
  }
  const header = ["ID", "SLUG", "STATE", "STARTS", "ENDS", "PRIZES", "TITLE"];
  const rows = views.map((view) => [
    view.race.id,
    view.race.slug,
    view.state,
    zonedTime(view.race.startTimestamp, view.race.timeZone),
    zonedTime(view.race.endTimestamp, view.race.timeZone),
    prizeTotal(view),
    view.race.title,
  ]);
  process.stdout.write(alignColumns([header, ...rows]));
}

async function show(idOrSlug: string | undefined, values: Values): Promise<void> {
  if (idOrSlug === undefined) throw new UsageError("races show needs a race id or a series' slug");
  const affiliate = requireAffiliate(values, "show");
  const view = outcomeValue(await withRaces(affiliate, (races, id) => races.get(id, idOrSlug)), affiliate);
  if (values.json) return void process.stdout.write(`${raceJson(view)}\n`);
  const weighted = view.race.rankBy === "weighted";
  const header = ["RANK", "USER", "USERNAME", "WAGERED", ...(weighted ? ["WEIGHTED"] : []), "PRIZE"];
  const rows = view.entries.map((entry) => [
    String(entry.rank),
    entry.userId,
    entry.username,
    entry.totalWagered,
    ...(weighted ? [entry.weightedWagered] : []),
    entry.prize,
  ]);
  process.stdout.write(describeRace(view));
  process.stdout.write(view.entries.length === 0 ? "\n  (no standings yet)\n" : `\n${alignColumns([header, ...rows])}`);
  if (view.unallocated !== "") process.stdout.write(`unallocated ${view.unallocated}\n`);
}

/** The race a command names by id or by slug (a series' current race), with the affiliate's key. */
function namedRace<T>(
  affiliate: string,
  idOrSlug: string,
  work: (races: Races, key: number, race: RaceView) => Promise<RaceOutcome<T>>,
): Promise<T> {
  return withRaces(affiliate, async (races, key) => {
    const race = outcomeValue(await races.get(key, idOrSlug), affiliate);
    return outcomeValue(await work(races, key, race), affiliate);
  });
}

async function cancel(idOrSlug: string | undefined, values: Values): Promise<void> {
  if (idOrSlug === undefined)
    throw new UsageError(`races cancel needs a race id or a series' slug (see: ${RUN} races list)`);
  const affiliate = requireAffiliate(values, "cancel");
  const view = await namedRace(affiliate, idOrSlug, (races, key, race) => races.cancel(key, race.race.id, cliActor()));
  if (values.json) return void process.stdout.write(`${raceJson(view)}\n`);
  process.stdout.write(
    `Cancelled race ${view.race.id} (${view.race.slug}) of affiliate ${affiliate}` +
      `${view.race.repeat === "none" || view.race.endTimestamp < (view.race.cancelledAt ?? 0) ? "" : "; its series creates no further race"}.\n`,
  );
}

async function remove(idOrSlug: string | undefined, values: Values): Promise<void> {
  if (idOrSlug === undefined)
    throw new UsageError(`races delete needs a race id or a series' slug (see: ${RUN} races list)`);
  const affiliate = requireAffiliate(values, "delete");
  const view = await namedRace(affiliate, idOrSlug, (races, key, race) => races.delete(key, race.race.id, cliActor()));
  if (values.json) return void process.stdout.write(`${raceJson(view)}\n`);
  process.stdout.write(
    `Deleted race ${view.race.id} (${view.race.slug}) of affiliate ${affiliate}; the slug ${view.race.slug} is free.\n`,
  );
}

async function update(idOrSlug: string | undefined, values: Values): Promise<void> {
  if (idOrSlug === undefined)
    throw new UsageError(`races update needs a race id or a series' slug (see: ${RUN} races list)`);
  const affiliate = requireAffiliate(values, "update");
  const scope = values["this-race"] ? "this-race" : "this-and-following";
  const updated = await namedRace(affiliate, idOrSlug, (races, key, race) =>
    races.update(key, race.race.id, patchOf(values, race.race.timeZone), [], cliActor(), scope),
  );
  if (values.json) return void process.stdout.write(`${raceJson(updated)}\n`);
  const following =
    updated.following.length === 0 ? "" : `; also the series' next race ${updated.following.join(", ")}`;
  process.stdout.write(
    `Updated race ${updated.race.id} of affiliate ${affiliate}${following}.\n${describeRace(updated)}`,
  );
}

export async function racesCommand(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseRacesOptions(rest);
  const maxPositionals = sub === "show" || sub === "cancel" || sub === "update" || sub === "delete" ? 1 : 0;
  if (positionals.length > maxPositionals) {
    throw new UsageError(`unexpected argument ${JSON.stringify(positionals[maxPositionals])}`);
  }
  switch (sub) {
    case "create":
      return create(values);
    case "list":
      return list(values);
    case "show":
      return show(positionals[0], values);
    case "cancel":
      return cancel(positionals[0], values);
    case "update":
      return update(positionals[0], values);
    case "delete":
      return remove(positionals[0], values);
    default:
      throw new UsageError(`unknown races command "${sub ?? ""}"`);
  }
}
