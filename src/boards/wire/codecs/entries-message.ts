/**
 * The ranked entries as messages: the unary answer's and every board of the watch stream. Both totals go as the
 * exact decimal text (`*_decimal`) beside the number a client may find easier to use.
 */
import { create } from "@bufbuild/protobuf";
import { type TopWagerEntry, TopWagerEntrySchema } from "../../../../gen/topwagers/v1/top_wagers_pb.js";
import type { RankedUser } from "../../core/leaderboard.js";

export function topWagerEntries(ranked: readonly RankedUser[]): TopWagerEntry[] {
  return ranked.map((user) =>
    create(TopWagerEntrySchema, {
      username: user.username,
      avatar: user.avatar,
      totalWagered: Number(user.totalWagered),
      totalWageredDecimal: user.totalWagered,
      userId: user.userId,
      rank: user.rank,
      weightedWagered: Number(user.weightedWagered),
      weightedWageredDecimal: user.weightedWagered,
    }),
  );
}
