/**
 * Exact decimal amounts as scaled integers, for the race's prize arithmetic: an amount at scale s is the BigInt
 * count of 10^-s (scale 2: "40.5" → 4050n). Money is never a Number here. Only non-negative amounts are read
 * (prizes, totals, minimums); a negative or malformed text throws, since race rules validated it before.
 */
import { parseDecimal } from "../../values/decimal.js";

/** The number of fraction digits as written ("50.00" → 2, "50" → 0). */
export function scaleOf(text: string): number {
  return nonNegativeParts(text).fraction.length;
}

/** The amount as a count of 10^-scale; throws when it has more fraction digits than `scale`. */
export function toUnits(text: string, scale: number): bigint {
  const { whole, fraction } = nonNegativeParts(text);
  if (fraction.length > scale) throw new Error(`${JSON.stringify(text)} has more than ${scale} fraction digits`);
  return BigInt(whole) * 10n ** BigInt(scale) + BigInt(fraction.padEnd(scale, "0") || "0");
}

/** A count of 10^-scale rendered with exactly `scale` fraction digits: (4050n, 2) → "40.50", (0n, 0) → "0". */
export function unitsText(units: bigint, scale: number): string {
  if (units < 0n) throw new Error(`negative amount: ${units}`);
  const digits = units.toString().padStart(scale + 1, "0");
  if (scale === 0) return digits;
  return `${digits.slice(0, digits.length - scale)}.${digits.slice(digits.length - scale)}`;
}

/** −1, 0 or 1 as a is below, equal to or above b, by value ("1.50" equals "1.5"). */
export function compareAmounts(a: string, b: string): number {
  const scale = Math.max(scaleOf(a), scaleOf(b));
  const difference = toUnits(a, scale) - toUnits(b, scale);
  return difference < 0n ? -1 : difference > 0n ? 1 : 0;
}

function nonNegativeParts(text: string): { whole: string; fraction: string } {
  const parts = parseDecimal(text);
  if (parts === undefined || parts.negative) throw new Error(`not a non-negative decimal: ${JSON.stringify(text)}`);
  return parts;
}
