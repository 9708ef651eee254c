/**
 * The leaderboard's cached boards as a standings store, for services that read boards the way
 * callers do (races' live standings): a list of up to MAX_NUM_USERS rows is a slice of the
 * period's cached board, so a race and a board of the same period cost one computation; a longer
 * list (many excluded users, a long tie at the cut) is read from `uncached`.
 */
import type { RankedRow, StandingsStore } from "../../ports/standings.js";
import type { Leaderboard } from "./leaderboard.js";
import { MAX_NUM_USERS } from "./period-request.js";

export function boardStandings(leaderboard: Leaderboard, uncached: StandingsStore): StandingsStore {
  return {
    async topUsers(affiliateId, start, end, limit, rankBy): Promise<RankedRow[]> {
      if (limit > MAX_NUM_USERS) return uncached.topUsers(affiliateId, start, end, limit, rankBy);
      const standings = await leaderboard.topWagersForPeriod(affiliateId, { start, end, numUsers: limit, rankBy });
      return standings.ranked.map((user) => ({
        userExternalId: user.userId,
        username: user.username,
        avatarUrl: user.avatar,
        total: user.totalWagered,
        weightedTotal: user.weightedWagered,
      }));
    },
  };
}
