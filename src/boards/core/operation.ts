/**
 * The one operation, as every skin calls it: who are the top wagering users
 * of the caller's affiliate in this period. A skin decodes the request from
 * its wire format (REST's JSON, the RPC protocols' messages) and renders the
 * answer; everything between is here: validate (every problem at once, one
 * per field, in field order), query, answer.
 */

import { InvalidQueryError } from "../../values/domain-errors.js";
import type { Violation } from "../../values/violation.js";
import type { RankBy } from "../../values/weights.js";
import type { Leaderboard, Standings } from "./leaderboard.js";
import { type PeriodQuery, type PeriodRequestFields, periodFromRequest } from "./period-request.js";

/** The procedure's full name: the metric series and log lines of every protocol, REST included. */
export const TOP_WAGERS_PROCEDURE = "topwagers.v1.TopWagersService/GetTopAffiliateWagersByPeriod";
/** The live form of the operation (SSE and the watch RPC), for metrics and logs. */
export const WATCH_PROCEDURE = "topwagers.v1.TopWagersService/WatchTopAffiliateWagersByPeriod";

/** The caller as the operation sees it (auth's Caller is one): whose wagers, and its default ranking. */
export interface QueryCaller {
  /** Internal key of the affiliate whose wagers this caller may read. */
  readonly affiliateId: number;
  /** How this caller's boards rank when a request does not say; null: no default (total wagered). */
  readonly defaultRankBy: RankBy | null;
}

export interface TopWagersAnswer extends Standings {
  /** The list length asked for (renderers key their cached output by it). */
  readonly numUsers: number;
  /** What the board is ranked by: the request's choice, else the caller's default, else "wagered". */
  readonly rankBy: RankBy;
  /** Whether the request named rankBy itself (REST then shows the weighted total, whichever ranks). */
  readonly rankByAsked: boolean;
}

/**
 * Answers one request: at once when the answer is cached (no promise), else a promise of it. Throws the
 * operation's `invalid_argument` at once. `decodingViolations` are the fields the skin's decoder could
 * not read (wrong type); they are reported with the rules' violations, one per field.
 *
 * Kept as `T | Promise<T>`, though the RPC skin simply awaits it: a REST cache hit then skips one await. What
 * that await costs is measured in docs/benchmarks.md, "Issue 28: what the layering changed on the hot paths".
 */
export function answerPeriodRequest(
  leaderboard: Leaderboard,
  caller: QueryCaller,
  request: PeriodRequestFields,
  decodingViolations: readonly Violation[] = [],
): TopWagersAnswer | Promise<TopWagersAnswer> {
  const query = validPeriodQuery(request, decodingViolations, caller.defaultRankBy);
  const rankByAsked = request.rankBy !== undefined;
  // A cache hit is answered without the loading path's promises.
  const cached = leaderboard.cachedStandings(caller.affiliateId, query);
  if (cached !== undefined) return answerOf(cached, query, rankByAsked);
  return leaderboard
    .topWagersForPeriod(caller.affiliateId, query)
    .then((loaded) => answerOf(loaded, query, rankByAsked));
}

function answerOf(standings: Standings, query: PeriodQuery, rankByAsked: boolean): TopWagersAnswer {
  return { ...standings, numUsers: query.numUsers, rankBy: query.rankBy ?? "wagered", rankByAsked };
}

/**
 * The request's period, list length and ranking (the request's, else `defaultRankBy`: the caller's
 * key default), or an InvalidQueryError naming every field at fault (the watch
 * procedure validates exactly as the unary call does).
 */
export function validPeriodQuery(
  request: PeriodRequestFields,
  decodingViolations: readonly Violation[] = [],
  defaultRankBy: RankBy | null = null,
): PeriodQuery {
  const validation = periodFromRequest(request, defaultRankBy ?? "wagered");
  const violations = validation.ok ? decodingViolations : [...decodingViolations, ...validation.violations];
  if (violations.length > 0 || !validation.ok) throw invalidRequest(violations);
  return validation.query;
}

const FIELD_ORDER = ["startTimestamp", "endTimestamp", "numUsers", "rankBy"];

/**
 * One problem per field, in field order: a field of the wrong type is reported by the decoder,
 * and the rules then see it as absent ("is required"), which is not repeated.
 */
function invalidRequest(violations: readonly Violation[]): InvalidQueryError {
  const sorted = [...violations].sort(
    (a, b) => FIELD_ORDER.indexOf(a.field ?? "") - FIELD_ORDER.indexOf(b.field ?? ""),
  );
  const unique = sorted.filter((v, i) => v.field === undefined || sorted.findIndex((w) => w.field === v.field) === i);
  return new InvalidQueryError(unique);
}
