/**
 * The pure part of a board held in memory and kept current from the change feed (held-boards.ts):
 * its entries in board order, the bound every user it does not hold ranks after, and the merge of
 * freshly read totals of changed users into it.
 *
 * The rule that keeps a held board exact: `entries` are exactly the users that rank at or before
 * `bound` (a user's position in the board's order: ranking value descending, then username, then
 * user id, in code point order), and every other user ranks after `bound`; no bound means the
 * entries are the whole board. A full computation of the top `limit` gives such a list (bound: its
 * last row, when it returned `limit` rows). When some users change, their new totals are read and
 * merged: a changed user that now ranks at or before the bound is placed exactly (every user not
 * held still ranks after the bound, so none can come between), and one that ranks after it, or has
 * no wagers left in the period, is dropped. The bound never moves down, so the list only shrinks from
 * the bottom by changes; once it holds fewer rows than are shown, the board is computed in full again.
 * Rows beyond the limit (users that rose into a board held whole) are let go, and the bound moves
 * up to the last row kept: a held board never grows past the shown rows and the margin.
 */
import type { KeyedRow } from "../../ports/standings.js";
import { parseDecimal } from "../../values/decimal.js";
import type { RankBy } from "../../values/weights.js";

export interface HeldEntry {
  readonly row: KeyedRow;
  /** The ranking value (plain or weighted total) in units of 10^-12, exact. */
  readonly value: bigint;
  readonly name: Buffer;
  readonly id: Buffer;
}

export interface HeldList {
  /** Exactly the users that rank at or before `bound`, in board order. */
  readonly entries: readonly HeldEntry[];
  /** Every user not in `entries` ranks after it; undefined when `entries` are the whole board. */
  readonly bound: HeldEntry | undefined;
}

const SCALE = 12;

/** An exact decimal string as units of 10^-12 ("1.5" → 1500000000000n); more fraction digits are refused. */
export function decimalUnits(text: string): bigint {
  const parts = parseDecimal(text);
  if (parts === undefined || parts.fraction.length > SCALE) throw new Error(`not a total: ${JSON.stringify(text)}`);
  const units = BigInt(parts.whole) * 10n ** BigInt(SCALE) + BigInt(parts.fraction.padEnd(SCALE, "0"));
  return parts.negative ? -units : units;
}

export function entryOf(row: KeyedRow, rankBy: RankBy): HeldEntry {
  return {
    row,
    value: decimalUnits(rankBy === "weighted" ? row.weightedTotal : row.total),
    name: Buffer.from(row.username, "utf8"),
    id: Buffer.from(row.userExternalId, "utf8"),
  };
}

/** The board's order: value descending, then username, then user id, in code point (UTF-8 byte) order. */
export function boardOrder(a: HeldEntry, b: HeldEntry): number {
  if (a.value !== b.value) return a.value > b.value ? -1 : 1;
  return Buffer.compare(a.name, b.name) || Buffer.compare(a.id, b.id);
}

/** Whether a user is on the board at all: wagers in the period that sum to more than 0. */
function listed(row: KeyedRow): boolean {
  return decimalUnits(row.total) > 0n;
}

/** The held list of a full computation that asked for the top `limit` rows. */
export function heldFromBoard(rows: readonly KeyedRow[], limit: number, rankBy: RankBy): HeldList {
  const entries = rows.map((row) => entryOf(row, rankBy));
  return { entries, bound: entries.length < limit ? undefined : entries[entries.length - 1] };
}

/**
 * `held` after the users `asked` (internal keys) changed, given their totals now (`fresh`; a user
 * absent from it has no wagers in the period), keeping at most `limit` rows. See the module comment.
 */
export function mergeChanged(
  held: HeldList,
  asked: Iterable<number>,
  fresh: readonly KeyedRow[],
  rankBy: RankBy,
  limit: number,
): HeldList {
  const changed = new Set(asked);
  const entries = held.entries.filter((entry) => !changed.has(entry.row.userKey));
  const placed = new Set<number>();
  for (const row of fresh) {
    if (!changed.has(row.userKey) || placed.has(row.userKey) || !listed(row)) continue;
    const entry = entryOf(row, rankBy);
    if (held.bound !== undefined && boardOrder(entry, held.bound) > 0) continue;
    placed.add(row.userKey);
    entries.push(entry);
  }
  entries.sort(boardOrder);
  // Rows beyond the limit are let go; the last one kept becomes the bound (every user let go ranks after it).
  if (entries.length > limit) return { entries: entries.slice(0, limit), bound: entries[limit - 1] };
  return { entries, bound: held.bound };
}
