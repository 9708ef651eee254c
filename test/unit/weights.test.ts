/**
 * Weights without a database: the weight rule (0 to 10000 basis points) and
 * seed's deterministic mix (70 % at 10000, 20 % at 5000, 10 % at 1000).
 */
import { describe, expect, it } from "vitest";
import { SeedData } from "../../src/ingest/core/seed-data.js";
import { checkWager, weightProblems } from "../../src/ingest/core/validation.js";

describe("weightProblems", () => {
  it("accepts whole numbers from 0 to 10000 and names the bound otherwise", () => {
    for (const ok of [0, 1, 5000, 9999, 10_000]) expect(weightProblems(ok)).toEqual([]);
    for (const bad of [-1, 10_001, 2 ** 32, 0.5, Number.NaN]) {
      expect(weightProblems(bad)).toEqual([
        `weightBps must be a whole number from 0 to 10000 basis points (got ${bad})`,
      ]);
    }
  });

  it("makes an absent weight 10000 and keeps a given one", () => {
    const at = 1_790_812_800;
    const base = { id: "w", userId: "u", amount: "1", placedAt: BigInt(at) };
    expect(checkWager(base, at)).toEqual({ ok: true, value: { ...base, placedAt: at, weightBps: 10_000 } });
    expect(checkWager({ ...base, weightBps: 0 }, at)).toEqual({
      ok: true,
      value: { ...base, placedAt: at, weightBps: 0 },
    });
  });
});

describe("seed weights", () => {
  const plan = { seed: 42, affiliates: 1, wagers: 0, months: 1, end: 1_795_323_600, prefix: "" };

  it("mix 70 % full, 20 % half and 10 % a tenth, the same for the same seed and different for another", () => {
    const data = new SeedData(plan);
    const counts = new Map<number, number>();
    const weights: number[] = [];
    for (let n = 1; n <= 100_000; n++) {
      const w = data.weightBps(n);
      weights.push(w);
      counts.set(w, (counts.get(w) ?? 0) + 1);
    }
    expect([...counts.keys()].sort((a, b) => a - b)).toEqual([1000, 5000, 10_000]);
    expect(Math.abs((counts.get(10_000) ?? 0) / 100_000 - 0.7)).toBeLessThan(0.01);
    expect(Math.abs((counts.get(5000) ?? 0) / 100_000 - 0.2)).toBeLessThan(0.01);
    expect(Math.abs((counts.get(1000) ?? 0) / 100_000 - 0.1)).toBeLessThan(0.01);
    const again = new SeedData(plan);
    expect(weights.slice(0, 1000)).toEqual(Array.from({ length: 1000 }, (_, i) => again.weightBps(i + 1)));
    const other = new SeedData({ ...plan, seed: 43 });
    expect(weights.slice(0, 1000)).not.toEqual(Array.from({ length: 1000 }, (_, i) => other.weightBps(i + 1)));
  });
});
