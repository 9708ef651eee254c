/**
 * The proof behind a long period's board read without summing every user of every month
 * (../sql/threshold-board.ts): a top-k over per-month lists sorted by total, in the three phases of
 * TPUT (Cao and Wang, "Efficient top-K query calculation in distributed networks", 2004), a relative of
 * Fagin, Lotem and Naor's Threshold Algorithm that needs three reads whatever the data.
 *
 * A period is its whole months (each one list: the month's rows of the affiliate, best first) plus its
 * ragged edges, whose sums per user are read in full (`edge`): a user's total is exactly edge + the sum
 * of their monthly rows, and a monthly row is never negative. A list may be read in the order of a key that
 * is never below the value (the weighted ranking reads the months by plain total): "a row at or above the
 * floor" then means its key, and every row left unread is below the floor in value too.
 *
 * 1. Read the best `k` rows of each month. Every user's lower bound is edge + the rows seen; τ1 is the
 *    k-th best lower bound.
 * 2. Read every row of each month at or above `floor` = ⌊τ1 / (2 × months)⌋ (TPUT's τ1 / months halved:
 *    see secondPhaseFloor). A user not seen in a month has less than `floor` there, so a user seen nowhere
 *    totals less than months × floor ≤ τ1.
 * 3. τ2 is the k-th best lower bound now (τ2 ≥ τ1: bounds only grow). A user's upper bound is the lower
 *    bound plus `floor` for each month they were not seen in; the contenders are the users whose upper
 *    bound reaches τ2. The k users behind τ2 are contenders, so the k-th best exact total is at least τ2,
 *    and every other user totals strictly less: the board is the best k contenders, ties and their order
 *    included, ordered by the same statement as every other board.
 *
 * When every month has fewer than k rows, the first read has read them all: every user of the period is
 * known, and the board is among them whatever their totals (a weighted board also lists users whose weighted
 * total is 0, after the others).
 *
 * Money stays exact: values are integers at the column's scale (10^-8 plain, 10^-12 weighted), never floats.
 */
import type { BucketRange } from "../../values/bucket-range.js";
import { bucketCeil, nextBucketStart } from "../../values/calendar.js";

/** An exact decimal string ("-12.5", "0.00000001") as an integer count of 10^-scale; throws on more digits. */
export function scaledDecimal(text: string, scale: number): bigint {
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text);
  if (match === null) throw new Error(`not a decimal string: ${JSON.stringify(text)}`);
  const fraction = match[3] ?? "";
  if (fraction.length > scale && !/^0*$/.test(fraction.slice(scale))) {
    throw new Error(`${text} has more than ${scale} fraction digits`);
  }
  const digits = BigInt(`${match[2]}${fraction.slice(0, scale).padEnd(scale, "0")}`);
  return match[1] === "-" ? -digits : digits;
}

/** An integer count of 10^-scale as a decimal string ("-12.50000000" at scale 8). */
export function decimalOfScaled(value: bigint, scale: number): string {
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString().padStart(scale + 1, "0");
  const whole = digits.slice(0, digits.length - scale);
  const fraction = digits.slice(digits.length - scale);
  return `${negative ? "-" : ""}${whole}${scale > 0 ? `.${fraction}` : ""}`;
}

/** The k-th largest of `values` that is above 0, or undefined when fewer than k are. */
export function kthLargestPositive(values: Iterable<bigint>, k: number): bigint | undefined {
  if (k < 1) throw new Error("k must be at least 1");
  // A min-heap of the k largest so far: most values are below its top and cost one comparison.
  const heap: bigint[] = [];
  for (const value of values) {
    if (value <= 0n) continue;
    if (heap.length < k) {
      heap.push(value);
      let i = heap.length - 1;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if ((heap[parent] as bigint) <= value) break;
        heap[i] = heap[parent] as bigint;
        i = parent;
      }
      heap[i] = value;
    } else if (value > (heap[0] as bigint)) {
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= k) break;
        const right = left + 1;
        const child = right < k && (heap[right] as bigint) < (heap[left] as bigint) ? right : left;
        if ((heap[child] as bigint) >= value) break;
        heap[i] = heap[child] as bigint;
        i = child;
      }
      heap[i] = value;
    }
  }
  return heap.length < k ? undefined : heap[0];
}

/**
 * Any floor with months × floor ≤ τ1 proves the board; a lower one reads more rows in the second phase and
 * leaves fewer contenders for the last statement (one lookup per contender and bucket). Half of TPUT's
 * τ1 / months was the fastest of τ1 / months, / 2 months and / 4 months on the 5M-wager bench seed (12 months
 * and all time, N = 10 and 100: 10 of 12 boards faster than at τ1 / months, up to 30 %).
 */
const FLOOR_DIVISOR = 2n;

/** ⌊τ1 / (2 × months)⌋: every row of each month at or above it is read in the second phase. */
export function secondPhaseFloor(tau1: bigint, months: number): bigint {
  if (tau1 <= 0n || months < 1) throw new Error("the floor needs a positive τ1 and at least one month");
  return tau1 / (FLOOR_DIVISOR * BigInt(months));
}

/** The users seen so far, with the sum of their monthly rows read and in how many months they were seen. */
export class MonthLists {
  private readonly seen = new Map<number, { sum: bigint; months: number }>();
  private readonly read: Set<number>[];

  /** `edge`: each user's exact total over the period's ragged edges (absent: 0; may be negative). */
  constructor(
    readonly months: number,
    private readonly edge: ReadonlyMap<number, bigint>,
  ) {
    this.read = Array.from({ length: months }, () => new Set<number>());
  }

  /** A row of month `month` (0-based); a row read again (both phases) counts once. */
  add(month: number, user: number, value: bigint): void {
    const read = this.read[month];
    if (read === undefined) throw new Error(`no month ${month}`);
    if (read.has(user)) return;
    read.add(user);
    const entry = this.seen.get(user);
    if (entry === undefined) this.seen.set(user, { sum: value, months: 1 });
    else {
      entry.sum += value;
      entry.months += 1;
    }
  }

  /** Rows read in month `month`. */
  rowsIn(month: number): number {
    return this.read[month]?.size ?? 0;
  }

  /** Every user seen in a month or in the edge: with every month read to its end, every user of the period. */
  everyUser(): number[] {
    return [...new Set([...this.seen.keys(), ...this.edge.keys()])];
  }

  /** Each user's lower bound: edge + the monthly rows seen, for every user seen in a month or in the edge. */
  *lowerBounds(): Iterable<bigint> {
    for (const [user, { sum }] of this.seen) yield sum + (this.edge.get(user) ?? 0n);
    for (const [user, value] of this.edge) if (!this.seen.has(user)) yield value;
  }

  /** The k-th best lower bound above 0 (τ), or undefined when fewer than k users have one. */
  kthLowerBound(k: number): bigint | undefined {
    return kthLargestPositive(this.lowerBounds(), k);
  }

  /**
   * The users whose total may reach `cut` when every row at or above `floor` of each month has been read
   * (`floor` 0: every row of every month): lower bound + floor per month not seen in, at least `cut`.
   */
  contenders(cut: bigint, floor: bigint): number[] {
    const users: number[] = [];
    for (const [user, { sum, months }] of this.seen) {
      if (sum + (this.edge.get(user) ?? 0n) + BigInt(this.months - months) * floor >= cut) users.push(user);
    }
    const unseen = BigInt(this.months) * floor;
    for (const [user, value] of this.edge) {
      if (!this.seen.has(user) && value + unseen >= cut) users.push(user);
    }
    return users;
  }
}

/**
 * The whole months of a period's pieces (the buckets of its added monthly pieces, each one list) and the
 * rest (its ragged edges: finer pieces, and the pieces subtracted from a month).
 */
export function monthsAndEdges(ranges: readonly BucketRange[]): { months: number[]; edges: BucketRange[] } {
  const months: number[] = [];
  const edges: BucketRange[] = [];
  for (const range of ranges) {
    if (range.source !== "monthly" || range.sign !== 1) {
      edges.push(range);
      continue;
    }
    for (let b = bucketCeil("monthly", range.from); b < range.to; b = nextBucketStart("monthly", b)) months.push(b);
  }
  return { months, edges };
}
