/**
 * Exact decimal strings. Money is summed by the database as DECIMAL and reaches
 * us as a string; here it is only ever read, compared and re-formatted as text,
 * never turned into a number.
 *
 * The one syntax: an optional "-", digits, and optionally a point and more
 * digits ("12", "12.5", "0.00000001", "-3.10"). No "+", exponent, spaces,
 * separators or bare point. What an incoming amount must look like on top of
 * that (no sign, no leading zeros, at most 8 fraction digits, below 10^12) is
 * the ingest rule in ../ingest/core/validation.ts, built on `parseDecimal`.
 */

export interface DecimalParts {
  readonly negative: boolean;
  /** The digits before the point, as written (leading zeros kept). */
  readonly whole: string;
  /** The digits after the point, as written ("" when there is no point). */
  readonly fraction: string;
}

const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;

/** The parts of a decimal string, or undefined when the text is not one. */
export function parseDecimal(text: string): DecimalParts | undefined {
  const match = DECIMAL.exec(text);
  if (match === null) return undefined;
  return { negative: match[1] === "-", whole: match[2] ?? "", fraction: match[3] ?? "" };
}

/**
 * The shortest text of the same value: leading zeros of the whole part and trailing zeros of the
 * fraction dropped ("15000.50000000" → "15000.5", "13000.00000000" → "13000", "007.10" → "7.1").
 * What a DECIMAL total is rendered as, and what amounts are compared by. Throws on text that is
 * not a decimal string (see the module comment).
 */
export function canonicalDecimal(text: string): string {
  const parts = parseDecimal(text);
  if (parts === undefined) throw new Error(`not a decimal string: ${JSON.stringify(text)}`);
  const whole = parts.whole.replace(/^0+(?=\d)/, "");
  const fraction = parts.fraction.replace(/0+$/, "");
  return `${parts.negative ? "-" : ""}${whole}${fraction === "" ? "" : `.${fraction}`}`;
}

/** Whether two decimal strings have the same value ("12.50000000" and "12.5"), compared as text. */
export function sameDecimal(a: string, b: string): boolean {
  return canonicalDecimal(a) === canonicalDecimal(b);
}
