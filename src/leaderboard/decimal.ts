/**
 * Exact decimal strings. Money is summed by the database as DECIMAL and reaches
 * us as a string; it is only ever re-formatted, never added, here.
 */

const DECIMAL = /^-?\d+(\.\d+)?$/;

/** "15000.50000000" → "15000.5", "13000.00000000" → "13000". */
export function canonicalDecimal(value: string): string {
  if (!DECIMAL.test(value)) throw new Error(`not a decimal string: ${JSON.stringify(value)}`);
  if (!value.includes(".")) return value;
  return value.replace(/0+$/, "").replace(/\.$/, "");
}
