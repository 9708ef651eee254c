/**
 * The proof of the threshold plan (src/boards/core/threshold-plan.ts) without a database: on random months of
 * rows (few distinct values, so ties cross the cut often, and edges that add or take away), the three phases
 * as src/boards/sql/threshold-board.ts runs them must leave every user of the true board among the contenders,
 * so that ordering the contenders gives the true board, ties and their order included. Values are integers
 * at a fixed scale, as the plan holds them; the exact decimals are checked against the naive SQL in
 * test/integration/threshold-board-equals-naive.test.ts.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  decimalOfScaled,
  kthLargestPositive,
  MonthLists,
  monthsAndEdges,
  scaledDecimal,
  secondPhaseFloor,
} from "../../src/boards/core/threshold-plan.js";
import { bucketRanges } from "../../src/ingest/sql/period-buckets.js";

describe("scaled decimals", () => {
  it("reads a DECIMAL string as an integer at its scale, and writes it back", () => {
    expect(scaledDecimal("12.5", 8)).toBe(1_250_000_000n);
    expect(scaledDecimal("-0.00000001", 8)).toBe(-1n);
    expect(scaledDecimal("3", 12)).toBe(3_000_000_000_000n);
    expect(scaledDecimal("7.100000000000", 8)).toBe(710_000_000n);
    expect(decimalOfScaled(1_250_000_000n, 8)).toBe("12.50000000");
    expect(decimalOfScaled(-1n, 12)).toBe("-0.000000000001");
    expect(decimalOfScaled(0n, 8)).toBe("0.00000000");
  });

  it("refuses what is not a decimal, and digits the scale would drop", () => {
    expect(() => scaledDecimal("1e5", 8)).toThrow("not a decimal string");
    expect(() => scaledDecimal("0.000000001", 8)).toThrow("more than 8 fraction digits");
  });

  it("round-trips any integer at any scale", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }), fc.integer({ min: 0, max: 12 }), (n, scale) => {
        expect(scaledDecimal(decimalOfScaled(n, scale), scale)).toBe(n);
      }),
    );
  });
});

describe("kthLargestPositive", () => {
  it("is the k-th of the positive values sorted in descending order", () => {
    fc.assert(
      fc.property(
        fc.array(fc.bigInt({ min: -5n, max: 20n }), { maxLength: 60 }),
        fc.integer({ min: 1, max: 30 }),
        (values, k) => {
          const positive = values.filter((v) => v > 0n).sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
          expect(kthLargestPositive(values, k)).toBe(positive[k - 1]);
        },
      ),
    );
  });
});

describe("monthsAndEdges", () => {
  it("lists each whole month added once, and keeps every other piece as an edge", () => {
    // 2 December 2024 to 9 November 2026 10:15:07: December 2024 is most of a month (added, 1 December taken away).
    const ranges = bucketRanges(Date.UTC(2024, 11, 2) / 1000, Date.UTC(2026, 10, 9, 10, 15, 7) / 1000);
    const { months, edges } = monthsAndEdges(ranges);
    expect(months.length).toBe(23);
    expect(months[0]).toBe(Date.UTC(2024, 11, 1) / 1000);
    expect(months.at(-1)).toBe(Date.UTC(2026, 9, 1) / 1000);
    expect(edges.every((r) => r.source !== "monthly" || r.sign === -1)).toBe(true);
    expect(edges.length + ranges.filter((r) => r.source === "monthly" && r.sign === 1).length).toBe(ranges.length);
  });
});

/**
 * One month's rows and the edges' sum per user. A row is read in the order of its key (the plain total) and counts
 * its value: the plain total itself, or a weighted total, never above the plain one.
 */
interface Instance {
  readonly months: readonly (readonly (readonly [user: number, key: bigint, value: bigint])[])[];
  readonly edge: ReadonlyMap<number, bigint>;
  readonly k: number;
}

const USERS = 40;

const instance = fc
  .record({
    months: fc.array(
      fc.array(
        fc.tuple(
          fc.integer({ min: 0, max: USERS - 1 }),
          fc.constantFrom(1n, 2n, 3n, 5n, 8n, 40n, 100n),
          // The weight in quarters: 4 (full) most often, down to 0.
          fc.constantFrom(4n, 4n, 4n, 2n, 1n, 0n),
        ),
        { maxLength: 30 },
      ),
      { minLength: 1, maxLength: 8 },
    ),
    edge: fc.array(fc.tuple(fc.integer({ min: 0, max: USERS - 1 }), fc.constantFrom(-3n, -1n, 1n, 2n, 7n, 50n)), {
      maxLength: 20,
    }),
    k: fc.integer({ min: 1, max: 12 }),
    weighted: fc.boolean(),
  })
  .map(({ months, edge, k, weighted }): Instance => {
    // One row per user and month, as in the rollup; ranked by the plain total, or by the weighted one.
    const rows = months.map((m) => [
      ...new Map(
        m.map(([user, key, quarters]) => [user, [user, key, weighted ? (key * quarters) / 4n : key] as const]),
      ).values(),
    ]);
    const edges = new Map<number, bigint>(edge);
    // An edge never takes more than the user's months hold (a subtracted piece lies inside an added month).
    for (const [user, value] of edges) {
      const held = rows.reduce((sum, m) => sum + (m.find(([u]) => u === user)?.[2] ?? 0n), 0n);
      if (held + value < 0n) edges.set(user, -held);
    }
    return { months: rows, edge: edges, k };
  });

/** The board's order: total descending, then the user (standing in for username and id). */
function board(totals: ReadonlyMap<number, bigint>, users: Iterable<number>, k: number): number[] {
  return [...users]
    .filter((u) => (totals.get(u) ?? 0n) > 0n)
    .sort((a, b) => {
      const d = (totals.get(b) ?? 0n) - (totals.get(a) ?? 0n);
      return d > 0n ? 1 : d < 0n ? -1 : a - b;
    })
    .slice(0, k);
}

/** The three phases as the SQL module runs them. */
function contendersOf(
  { months, edge, k }: Instance,
  tieOrder: (a: readonly [number, ...bigint[]], b: readonly [number, ...bigint[]]) => number,
): number[] {
  const sorted = months.map((rows) =>
    [...rows].sort((a, b) => (a[1] === b[1] ? tieOrder(a, b) : a[1] > b[1] ? -1 : 1)),
  );
  const lists = new MonthLists(months.length, edge);
  sorted.forEach((rows, m) => {
    for (const [user, , value] of rows.slice(0, k)) lists.add(m, user, value);
  });
  const open = sorted.map((rows, m) => [rows, m] as const).filter(([, m]) => lists.rowsIn(m) >= k);
  if (open.length === 0) return lists.everyUser();
  const tau1 = lists.kthLowerBound(k);
  // Fewer than k users above 0 in the best rows: every row of the open months is read, every user is known.
  const floor = tau1 === undefined ? 0n : secondPhaseFloor(tau1, months.length);
  for (const [rows, m] of open) for (const [user, key, value] of rows) if (key >= floor) lists.add(m, user, value);
  if (tau1 === undefined) return lists.everyUser();
  return lists.contenders(lists.kthLowerBound(k) ?? tau1, floor);
}

describe("the threshold plan's contenders", () => {
  it("hold the whole board: ordering them gives the board of every user, ties included", () => {
    fc.assert(
      fc.property(instance, fc.boolean(), (inst, userOrder) => {
        const totals = new Map<number, bigint>();
        for (const rows of inst.months)
          for (const [user, , value] of rows) totals.set(user, (totals.get(user) ?? 0n) + value);
        for (const [user, value] of inst.edge) totals.set(user, (totals.get(user) ?? 0n) + value);
        // The index reads equal totals in some order of its own: either way, the answer is the same.
        const contenders = contendersOf(inst, (a, b) => (userOrder ? a[0] - b[0] : b[0] - a[0]));
        const everyone = board(totals, totals.keys(), inst.k);
        expect(new Set(contenders).size).toBe(contenders.length);
        expect(board(totals, contenders, inst.k)).toEqual(everyone);
      }),
      { numRuns: 3000 },
    );
  });

  it("counts a row read again in the second phase once", () => {
    const lists = new MonthLists(2, new Map([[9, -2n]]));
    lists.add(0, 1, 10n);
    lists.add(0, 1, 10n);
    lists.add(1, 1, 4n);
    lists.add(1, 9, 6n);
    expect([...lists.lowerBounds()].sort()).toEqual([14n, 4n]);
    expect(lists.kthLowerBound(1)).toBe(14n);
    expect(lists.kthLowerBound(3)).toBeUndefined();
    // User 9 was not seen in month 0, whose rows from 5 up were read: at most 6 - 2 + 5 = 9.
    expect(lists.contenders(14n, 5n)).toEqual([1]);
    expect(lists.contenders(8n, 5n)).toEqual([1, 9]);
  });
});
