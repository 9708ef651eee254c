/**
 * Placing a race on a board: the placement rules a stored race gives prizes.ts, and the loop that asks a
 * standings store for as many rows as the cut needs. The live reads (race-reads.ts) and the freeze
 * (race-freeze.ts) both place through it, and keep a placed entry as a frozen one (frozenEntry).
 */

import type { FrozenEntry, StoredRace } from "../../ports/races.js";
import type { RankedRow, StandingsStore } from "../../ports/standings.js";
import { canonicalDecimal } from "../../values/decimal.js";
import { firstLimit, type PlacedEntry, type Placement, type PlacementRules, placeRace } from "./prizes.js";

/** Rows asked of a board at most while placing (a tie this long at the cut is not plausible). */
const MAX_PLACEMENT_ROWS = 100_000;

type CompletePlacement = Extract<Placement, { kind: "complete" }>;

/** A placement with the board rows it was placed on. */
export type BoardPlacement = CompletePlacement & { readonly rows: readonly RankedRow[] };

export function placementRules(race: StoredRace, shown: number): PlacementRules {
  const { prizes, minWagered, excludedUserIds, rankBy } = race;
  return { prizes, minWagered, excludedUserIds, shown, rankBy };
}

/**
 * Places a race on the board of the inclusive period [start, end]: asks the store for the rows
 * prizes.ts needs first, and for more while it says the cut is not settled (excluded users, users
 * below the minimum, a tie at the cut).
 */
export async function placeFromBoard(
  store: StandingsStore,
  affiliateId: number,
  start: number,
  end: number,
  rules: PlacementRules,
): Promise<BoardPlacement> {
  let limit = firstLimit(rules);
  for (;;) {
    const rows = await store.topUsers(affiliateId, start, end, limit, rules.rankBy);
    const placement = placeRace(rows, limit, rules);
    if (placement.kind === "complete") return { ...placement, rows };
    if (limit >= MAX_PLACEMENT_ROWS) throw new Error(`a tie longer than ${MAX_PLACEMENT_ROWS} rows at the cut`);
    limit = Math.min(MAX_PLACEMENT_ROWS, Math.max(placement.limit, limit + 1));
  }
}

export function avatarOf(row: RankedRow, defaultAvatarUrl: string): string {
  return row.avatarUrl === null || row.avatarUrl === "" ? defaultAvatarUrl : row.avatarUrl;
}

/** A placed entry as the frozen result keeps it: decimals canonical, the avatar resolved. */
export function frozenEntry(entry: PlacedEntry, defaultAvatarUrl: string): FrozenEntry {
  return {
    rank: entry.rank,
    userExternalId: entry.row.userExternalId,
    username: entry.row.username,
    avatarUrl: avatarOf(entry.row, defaultAvatarUrl),
    total: canonicalDecimal(entry.row.total),
    weightedTotal: canonicalDecimal(entry.row.weightedTotal),
    prize: entry.prize,
  };
}
