/**
 * A race's standings and prizes, from the rows of its board (ordered as the board orders them: ranked total
 * descending, then username, then user id). Excluded users and users whose ranked total is below the minimum
 * are not placed. Equal ranked totals share a rank (competition ranking: 1, 2, 2, 4), and a tie group occupying
 * ranks r..r+k−1 shares the prizes of those ranks evenly (a missing rank's prize is 0), each share rounded down
 * to the prize table's scale (the most fraction digits of any prize as written); what rounding and unfilled
 * ranks leave is `unallocated`. All money is BigInt scaled integers.
 *
 * The caller asks the board for `firstLimit(rules)` rows and calls `placeRace`; while it answers "need-more"
 * (the board may hold more users that would be placed, or that tie with the last one that counts), it asks
 * again with the larger limit. Pure: no clock, no storage.
 */
import type { RankedRow } from "../../ports/standings.js";
import type { RankBy } from "../../values/weights.js";
import { compareAmounts, scaleOf, toUnits, unitsText } from "./amounts.js";

export interface PlacementRules {
  /** The prize of rank 1, 2, …: non-negative decimal strings (race-rules.ts validated them). */
  readonly prizes: readonly string[];
  /** A user is placed when the ranked total is at least this. */
  readonly minWagered: string;
  /** Users never placed nor shown. */
  readonly excludedUserIds: readonly string[];
  /** How many placed users are shown (more when the last shown one ties with the next). */
  readonly shown: number;
  readonly rankBy: RankBy;
}

export interface PlacedEntry {
  /** Competition rank among placed users: 1 + the number of placed users with a larger ranked total. */
  readonly rank: number;
  readonly row: RankedRow;
  /** The prize at the prize table's scale ("40.00"; "0.00" for none). */
  readonly prize: string;
}

export type Placement =
  | {
      readonly kind: "complete";
      /** The first `shown` placed users, and every further one tied with the last of them. */
      readonly entries: PlacedEntry[];
      /** Sum of prizes − sum of every share awarded (over all placed users), at the table's scale. */
      readonly unallocated: string;
    }
  /** Ask the board again for `limit` rows (more than were asked) and place those. */
  | { readonly kind: "need-more"; readonly limit: number };

/** The rows to ask the board for first: enough when no excluded user and no tie gets in the way. */
export function firstLimit(rules: PlacementRules): number {
  return countedPlaces(rules) + rules.excludedUserIds.length + 1;
}

/**
 * Places the board's first rows. `askedLimit`: how many rows were asked for; fewer rows mean the board has
 * no more, so the answer is complete.
 */
export function placeRace(rows: readonly RankedRow[], askedLimit: number, rules: PlacementRules): Placement {
  const excluded = new Set(rules.excludedUserIds);
  const placed = rows.filter(
    (row) => !excluded.has(row.userExternalId) && compareAmounts(rankedTotal(row, rules), rules.minWagered) >= 0,
  );
  const counted = countedPlaces(rules);
  const last = rows[rows.length - 1];
  if (rows.length >= askedLimit && last !== undefined && mayPlaceMore(last, placed, counted, rules)) {
    return { kind: "need-more", limit: Math.max(askedLimit * 2, askedLimit + 1) };
  }
  return complete(placed, rules);
}

/** The ranked total of a row: the plain total, or the weighted one. */
export function rankedTotal(row: RankedRow, rules: Pick<PlacementRules, "rankBy">): string {
  return rules.rankBy === "weighted" ? row.weightedTotal : row.total;
}

/** Placed users that decide the answer: the shown ones and the paid ranks. */
function countedPlaces(rules: PlacementRules): number {
  return Math.max(rules.shown, rules.prizes.length);
}

/**
 * Whether rows after `last` (the board's last row fetched) could change the answer. They rank at most as high
 * as `last`: below the minimum none can be placed; else they matter when too few users are placed yet, or when
 * they may tie with the last counted placed user (a tie group is shown whole and shares its prizes).
 */
function mayPlaceMore(last: RankedRow, placed: readonly RankedRow[], counted: number, rules: PlacementRules): boolean {
  const lastTotal = rankedTotal(last, rules);
  if (compareAmounts(lastTotal, rules.minWagered) < 0) return false;
  const lastCounted = placed[counted - 1];
  return lastCounted === undefined || compareAmounts(lastTotal, rankedTotal(lastCounted, rules)) === 0;
}

function complete(placed: readonly RankedRow[], rules: PlacementRules): Placement {
  const scale = Math.max(0, ...rules.prizes.map(scaleOf));
  const prizeUnits = rules.prizes.map((prize) => toUnits(prize, scale));
  const entries: PlacedEntry[] = [];
  let awarded = 0n;
  let groupStart = 0;
  while (groupStart < placed.length) {
    const total = rankedTotal(placed[groupStart] as RankedRow, rules);
    let groupEnd = groupStart + 1;
    while (groupEnd < placed.length && compareAmounts(rankedTotal(placed[groupEnd] as RankedRow, rules), total) === 0) {
      groupEnd += 1;
    }
    const size = groupEnd - groupStart;
    const pool = prizeUnits.slice(groupStart, groupEnd).reduce((sum, units) => sum + units, 0n);
    const share = pool / BigInt(size);
    awarded += share * BigInt(size);
    // A tie group is shown whole when its first member is shown.
    if (groupStart < rules.shown) {
      for (let i = groupStart; i < groupEnd; i += 1) {
        entries.push({ rank: groupStart + 1, row: placed[i] as RankedRow, prize: unitsText(share, scale) });
      }
    }
    groupStart = groupEnd;
  }
  const sum = prizeUnits.reduce((total, units) => total + units, 0n);
  return { kind: "complete", entries, unallocated: unitsText(sum - awarded, scale) };
}
