/** Exact decimal arithmetic for expected totals: amounts as BigInt counts of 10^-8 or 10^-12, and back to text. */

/** An amount as an integer count of 10^-8: exact arithmetic for expected totals in tests. */
export function toUnits(amount: string): bigint {
  const [whole = "0", fraction = ""] = amount.split(".");
  return BigInt(whole) * 100_000_000n + BigInt(fraction.padEnd(8, "0"));
}

/** Units back to canonical decimal text: "15000.5", "13000", "0.00000001". */
export function unitsToDecimal(units: bigint): string {
  const whole = units / 100_000_000n;
  const fraction = (units % 100_000_000n).toString().padStart(8, "0").replace(/0+$/, "");
  return fraction === "" ? whole.toString() : `${whole}.${fraction}`;
}

/** Canonical form of a decimal string (no trailing fraction zeros). */
export function canonical(decimal: string): string {
  return unitsToDecimal(toUnits(decimal));
}

/**
 * A weighted amount as an integer count of 10^-12 (amount × weight_bps / 10000 has at most 12
 * fraction digits): amount units (10^-8) × basis points.
 */
export function weightedUnits(amount: string, weightBps: number): bigint {
  return toUnits(amount) * BigInt(weightBps);
}

/** A decimal with up to 12 fraction digits as an integer count of 10^-12. */
export function toPicoUnits(decimal: string): bigint {
  const [whole = "0", fraction = ""] = decimal.split(".");
  return BigInt(whole) * 1_000_000_000_000n + BigInt(fraction.padEnd(12, "0"));
}

/** 10^-12 units back to canonical decimal text: "7500.25", "0.000000000001". */
export function picoUnitsToDecimal(units: bigint): string {
  const negative = units < 0n;
  const magnitude = negative ? -units : units;
  const whole = magnitude / 1_000_000_000_000n;
  const fraction = (magnitude % 1_000_000_000_000n).toString().padStart(12, "0").replace(/0+$/, "");
  return `${negative ? "-" : ""}${whole}${fraction === "" ? "" : `.${fraction}`}`;
}
