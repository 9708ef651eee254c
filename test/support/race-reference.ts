/**
 * The reference for a race's standings and prizes, written independently of src/races/core/prizes.ts and by another
 * method, for the model-based test: it sees the whole board at once (no need-more loop), ranks each user by
 * counting the placed users with a strictly larger total, and computes each tie group's share as an exact
 * fraction (amounts as numerator over a power of ten) before rounding it down to the prize table's scale. A
 * user is shown when its rank is at most `shown`, which is the same as "the first `shown` and everyone tied
 * with the last of them". It imports nothing from src/ but types.
 */
import type { RankedRow } from "../../src/ports/standings.js";
import type { RankBy } from "../../src/values/weights.js";

export interface ReferenceRules {
  readonly prizes: readonly string[];
  readonly minWagered: string;
  readonly excludedUserIds: readonly string[];
  readonly shown: number;
  readonly rankBy: RankBy;
}

export interface ReferenceResult {
  /** (rank, user id, prize at the table's scale) of each shown entry, in board order. */
  readonly entries: [number, string, string][];
  readonly unallocated: string;
}

/** A non-negative fraction n / d. */
interface Fraction {
  readonly n: bigint;
  readonly d: bigint;
}

function fraction(decimal: string): Fraction {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(decimal);
  if (match === null) throw new Error(`reference: not an amount ${decimal}`);
  const digits = match[2] ?? "";
  return { n: BigInt(`${match[1]}${digits}`), d: 10n ** BigInt(digits.length) };
}

const add = (a: Fraction, b: Fraction): Fraction => ({ n: a.n * b.d + b.n * a.d, d: a.d * b.d });
const compare = (a: Fraction, b: Fraction): number =>
  Number(a.n * b.d - b.n * a.d > 0n) - Number(a.n * b.d < b.n * a.d);
const ZERO: Fraction = { n: 0n, d: 1n };

/** Units of 10^-scale as text with exactly `scale` fraction digits. */
function fixed(units: bigint, scale: number): string {
  if (scale === 0) return units.toString();
  const text = units.toString().padStart(scale + 1, "0");
  return `${text.slice(0, -scale)}.${text.slice(-scale)}`;
}

export function referencePlacement(board: readonly RankedRow[], rules: ReferenceRules): ReferenceResult {
  const totalOf = (row: RankedRow) => fraction(rules.rankBy === "weighted" ? row.weightedTotal : row.total);
  const minimum = fraction(rules.minWagered);
  const placed = board.filter(
    (row) => !rules.excludedUserIds.includes(row.userExternalId) && compare(totalOf(row), minimum) >= 0,
  );
  const scale = rules.prizes.reduce((most, prize) => Math.max(most, prize.split(".")[1]?.length ?? 0), 0);
  const unit = 10n ** BigInt(scale);
  const prizeAt = (rank: number): Fraction => {
    const prize = rules.prizes[rank - 1];
    return prize === undefined ? ZERO : fraction(prize);
  };

  let awarded = 0n;
  const entries: [number, string, string][] = [];
  for (const row of placed) {
    const total = totalOf(row);
    const rank = 1 + placed.filter((other) => compare(totalOf(other), total) > 0).length;
    const tied = placed.filter((other) => compare(totalOf(other), total) === 0).length;
    let pool = ZERO;
    for (let r = rank; r < rank + tied; r += 1) pool = add(pool, prizeAt(r));
    // The exact share pool / tied, in units of 10^-scale, rounded down.
    const share = (pool.n * unit) / (pool.d * BigInt(tied));
    awarded += share;
    if (rank <= rules.shown) entries.push([rank, row.userExternalId, fixed(share, scale)]);
  }
  const sum = rules.prizes.reduce((all, prize) => add(all, fraction(prize)), ZERO);
  return { entries, unallocated: fixed((sum.n * unit) / sum.d - awarded, scale) };
}
