/**
 * The ranking choice (RankBy) between its proto enum and the domain's name, for every skin that
 * takes or shows it: the unary and watch requests, and an API key's default.
 */
import { RankBy as RankByMessage } from "../../../../gen/topwagers/v1/top_wagers_pb.js";
import type { Violation } from "../../../values/violation.js";
import type { RankBy } from "../../../values/weights.js";

/**
 * A request's ranking: absent or RANK_BY_UNSPECIFIED leave the choice to the default (undefined);
 * a number this build does not know is reported against `field`.
 */
export function rankByOf(
  value: RankByMessage | undefined,
  violations: Violation[],
  field = "rankBy",
): RankBy | undefined {
  switch (value) {
    case undefined:
    case RankByMessage.UNSPECIFIED:
      return undefined;
    case RankByMessage.WAGERED:
      return "wagered";
    case RankByMessage.WEIGHTED:
      return "weighted";
    default:
      violations.push({ field, message: `${field} must be RANK_BY_WAGERED or RANK_BY_WEIGHTED (got ${value})` });
      return undefined;
  }
}

/** The enum value of a ranking; null (no default) is RANK_BY_UNSPECIFIED. */
export function rankByMessage(rankBy: RankBy | null): RankByMessage {
  if (rankBy === null) return RankByMessage.UNSPECIFIED;
  return rankBy === "weighted" ? RankByMessage.WEIGHTED : RankByMessage.WAGERED;
}
