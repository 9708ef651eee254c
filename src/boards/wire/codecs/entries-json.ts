/**
 * The ranked entries as JSON: the REST success envelope, which each SSE event carries on one line too.
 * `totalWagered` (and `weightedWagered` when asked for) are written as the exact decimal text from the database,
 * so the JSON number carries every digit; no float arithmetic happens.
 */
import type { RankedUser } from "../../core/leaderboard.js";

/** The success envelope of these entries, with the weighted total when `weighted`. */
export function renderEntries(ranked: readonly RankedUser[], weighted = false): string {
  const entries = ranked.map(
    (user) =>
      `{"username":${JSON.stringify(user.username)},"avatar":${JSON.stringify(user.avatar)},"totalWagered":${user.totalWagered}${weighted ? `,"weightedWagered":${user.weightedWagered}` : ""}}`,
  );
  return `{"data":[${entries.join(",")}],"errors":null}`;
}
