/**
 * The period request as a message: the fields of the unary and the watch request messages as the operation takes
 * them (`rank_by` as a name); a ranking this build does not know is a violation naming `rankBy`.
 */
import type { GetTopAffiliateWagersByPeriodRequest } from "../../../../gen/topwagers/v1/top_wagers_pb.js";
import { rankByOf } from "../../../platform/wire/codecs/rank-by.js";
import type { Violation } from "../../../values/violation.js";
import type { PeriodRequestFields } from "../../core/period-request.js";

/** The fields the unary and the watch request share. */
export type PeriodRequestMessage = Pick<GetTopAffiliateWagersByPeriodRequest, keyof PeriodRequestFields>;

export function requestFields(request: PeriodRequestMessage): { values: PeriodRequestFields; violations: Violation[] } {
  const violations: Violation[] = [];
  const { startTimestamp, endTimestamp, numUsers } = request;
  return {
    values: { startTimestamp, endTimestamp, numUsers, rankBy: rankByOf(request.rankBy, violations) },
    violations,
  };
}
