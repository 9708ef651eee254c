/**
 * Races as RaceService's messages and back (races.proto): a CreateRace's rules and an UpdateRace's
 * changes as the race rules take them (races/core/race-rules.ts), a race and its standings as the Race
 * and RaceEntry messages (GetRace, the lists, WatchRace). An enum value this build does not know is
 * a decoding violation naming its field by JSON name, reported with the rules' own.
 */
import { create } from "@bufbuild/protobuf";
import {
  type Race,
  type RaceEntry,
  RaceEntrySchema,
  RaceRepeat,
  type RaceRules,
  RaceRulesSchema,
  RaceSchema,
  RaceState,
  RaceUpdateScope,
  type UpdateRaceRequest,
} from "../../../../gen/topwagers/v1/races_pb.js";
import { RankBy as RankByMessage } from "../../../../gen/topwagers/v1/top_wagers_pb.js";
import { enumNames } from "../../../platform/wire/codecs/enum-names.js";
import { rankByMessage, rankByOf } from "../../../platform/wire/codecs/rank-by.js";
import type { RaceRepeat as Repeat } from "../../../ports/races.js";
import type { LogInclusion } from "../../../ports/results-log.js";
import type { Violation } from "../../../values/violation.js";
import { DEFAULT_UPDATE_SCOPE, type UpdateScope } from "../../core/race-corrections.js";
import type { RaceDefinitionFields, RacePatch } from "../../core/race-rules.js";
import type { RaceState as State } from "../../core/race-state.js";
import type { RaceView } from "../../core/races.js";

const REPEATS = enumNames<Repeat, RaceRepeat>({
  none: RaceRepeat.NONE,
  daily: RaceRepeat.DAILY,
  weekly: RaceRepeat.WEEKLY,
  monthly: RaceRepeat.MONTHLY,
});

const STATES = enumNames<State, RaceState>({
  scheduled: RaceState.SCHEDULED,
  live: RaceState.LIVE,
  reviewing: RaceState.REVIEWING,
  final: RaceState.FINAL,
  cancelled: RaceState.CANCELLED,
});

/** A ListRaces state filter's names; RACE_STATE_UNSPECIFIED or an unknown number is a violation. */
export function raceStatesOf(states: readonly RaceState[], violations: Violation[]): State[] {
  const names: State[] = [];
  states.forEach((state, i) => {
    const name = STATES.nameOf(state);
    if (name !== undefined) names.push(name);
    else {
      violations.push({
        field: `states[${i}]`,
        message: `states[${i}] must be a RaceState other than RACE_STATE_UNSPECIFIED (got ${state})`,
      });
    }
  });
  return names;
}

function repeatOf(repeat: RaceRepeat, violations: Violation[]): Repeat | undefined {
  if (repeat === RaceRepeat.UNSPECIFIED) return undefined;
  const name = REPEATS.nameOf(repeat);
  if (name === undefined) {
    violations.push({
      field: "repeat",
      message: `repeat must be RACE_REPEAT_NONE, _DAILY, _WEEKLY or _MONTHLY (got ${repeat})`,
    });
  }
  return name;
}

/**
 * CreateRace's rules as the race rules take them, with the fields that could not be read (named as
 * the rules name them: "rankBy", "repeat"). Proto3's zero values are "absent" where the proto says
 * so: an `end_timestamp` of 0, a `shown` of 0, empty strings for the fields with a default.
 */
export function raceFieldsOf(rules: RaceRules | undefined): { fields: RaceDefinitionFields; violations: Violation[] } {
  const given = rules ?? create(RaceRulesSchema);
  const violations: Violation[] = [];
  const rankBy = rankByOf(given.rankBy, violations);
  const repeat = repeatOf(given.repeat, violations);
  return {
    fields: {
      slug: given.slug,
      title: given.title,
      startTimestamp: given.startTimestamp,
      ...(given.endTimestamp === 0n ? {} : { endTimestamp: given.endTimestamp }),
      ...(rankBy === undefined ? {} : { rankBy }),
      prizes: given.prizes,
      currency: given.currency,
      minWagered: given.minWagered,
      excludedUserIds: given.excludedUserIds,
      ...(given.reviewSeconds === undefined ? {} : { reviewSeconds: given.reviewSeconds }),
      ...(given.shown === 0 ? {} : { shown: given.shown }),
      ...(repeat === undefined ? {} : { repeat }),
      timeZone: given.timeZone,
    },
    violations,
  };
}

/** UpdateRace's changes as a patch (what is absent keeps its value), with the fields that could not be read. */
export function racePatchOf(request: UpdateRaceRequest): {
  patch: RacePatch;
  scope: UpdateScope;
  violations: Violation[];
} {
  const violations: Violation[] = unappliedFields(request);
  const scope = updateScopeOf(request.applyTo, violations);
  let rankBy = request.rankBy === undefined ? undefined : rankByOf(request.rankBy, violations);
  if (request.rankBy === RankByMessage.UNSPECIFIED) {
    violations.push({ field: "rankBy", message: "rankBy must be RANK_BY_WAGERED or RANK_BY_WEIGHTED when given" });
    rankBy = undefined;
  }
  return {
    patch: {
      ...(request.title === undefined ? {} : { title: request.title }),
      ...(request.startTimestamp === undefined ? {} : { startTimestamp: request.startTimestamp }),
      ...(request.endTimestamp === undefined ? {} : { endTimestamp: request.endTimestamp }),
      ...(request.replacePrizes ? { prizes: request.prizes } : {}),
      ...(request.currency === undefined ? {} : { currency: request.currency }),
      ...(request.minWagered === undefined ? {} : { minWagered: request.minWagered }),
      ...(request.replaceExcludedUserIds ? { excludedUserIds: request.excludedUserIds } : {}),
      ...(request.reviewSeconds === undefined ? {} : { reviewSeconds: request.reviewSeconds }),
      ...(request.shown === undefined ? {} : { shown: request.shown }),
      ...(rankBy === undefined ? {} : { rankBy }),
    },
    scope,
    violations,
  };
}

/**
 * The fields an UpdateRace sends that its flags would leave unapplied: a prize table or excluded users sent
 * without their `replace…` flag are refused, never ignored (an empty list is not told from an absent one).
 */
function unappliedFields(request: UpdateRaceRequest): Violation[] {
  const violations: Violation[] = [];
  if (!request.replacePrizes && request.prizes.length > 0) {
    violations.push({
      field: "prizes",
      message: "prizes is applied only with replacePrizes: true (the whole prize table is replaced). Send both",
    });
  }
  if (!request.replaceExcludedUserIds && request.excludedUserIds.length > 0) {
    violations.push({
      field: "excludedUserIds",
      message:
        "excludedUserIds is applied only with replaceExcludedUserIds: true (the whole list is replaced). Send both",
    });
  }
  return violations;
}

const SCOPES = enumNames<UpdateScope, RaceUpdateScope>({
  "this-race": RaceUpdateScope.THIS_RACE,
  "this-and-following": RaceUpdateScope.THIS_AND_FOLLOWING,
});

/** UpdateRace's `apply_to`; UNSPECIFIED is the default scope, an unknown number a violation. */
function updateScopeOf(scope: RaceUpdateScope, violations: Violation[]): UpdateScope {
  if (scope === RaceUpdateScope.UNSPECIFIED) return DEFAULT_UPDATE_SCOPE;
  const name = SCOPES.nameOf(scope);
  if (name !== undefined) return name;
  violations.push({
    field: "applyTo",
    message: `applyTo must be RACE_UPDATE_SCOPE_THIS_RACE or RACE_UPDATE_SCOPE_THIS_AND_FOLLOWING (got ${scope})`,
  });
  return DEFAULT_UPDATE_SCOPE;
}

/**
 * A race and where it stands as the Race message. `hideExcluded`: leave out the excluded user ids (the
 * affiliate's staff and own accounts), for a publishable key, whose reads are public.
 */
export function raceMessage(view: RaceView, hideExcluded = false): Race {
  const { race } = view;
  return create(RaceSchema, {
    id: race.id,
    affiliateId: race.affiliateExternalId,
    rules: create(RaceRulesSchema, {
      slug: race.slug,
      title: race.title,
      startTimestamp: BigInt(race.startTimestamp),
      endTimestamp: BigInt(race.endTimestamp),
      rankBy: rankByMessage(race.rankBy),
      prizes: [...race.prizes],
      currency: race.currency,
      minWagered: race.minWagered,
      excludedUserIds: hideExcluded ? [] : [...race.excludedUserIds],
      reviewSeconds: race.reviewSeconds,
      shown: race.shown,
      repeat: REPEATS.valueOf(race.repeat),
      timeZone: race.timeZone,
    }),
    state: STATES.valueOf(view.state),
    startsAt: BigInt(race.startTimestamp),
    endsAt: BigInt(race.endTimestamp),
    finalAt: BigInt(view.finalAt),
    now: BigInt(view.now),
    ...(race.frozenAt === null ? {} : { frozenAt: BigInt(race.frozenAt) }),
    digest: race.digest ?? "",
    ...(race.cancelledAt === null ? {} : { cancelledAt: BigInt(race.cancelledAt) }),
    nextRaceId: view.next?.id ?? "",
    nextStartsAt: BigInt(view.next?.startsAt ?? 0),
    ...(view.signed === undefined ? {} : { signedResult: { ...view.signed } }),
    ...(view.log === undefined ? {} : { log: logMessage(view.log) }),
  });
}

/** The race's place in the results log as a LogInclusion message (checkpoint empty, no proof, until one holds it). */
function logMessage(log: LogInclusion) {
  return {
    index: BigInt(log.index),
    entry: log.entry,
    checkpoint: log.checkpoint ?? "",
    proof: (log.proof ?? []).map((hash) => new Uint8Array(Buffer.from(hash, "base64"))),
  };
}

/** The shown standings as RaceEntry messages, by rank. */
export function raceEntries(view: RaceView): RaceEntry[] {
  return view.entries.map((entry) =>
    create(RaceEntrySchema, {
      rank: entry.rank,
      userId: entry.userId,
      username: entry.username,
      avatar: entry.avatar,
      totalWageredDecimal: entry.totalWagered,
      weightedWageredDecimal: entry.weightedWagered,
      prize: entry.prize,
    }),
  );
}
