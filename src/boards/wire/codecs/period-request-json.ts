/**
 * The period request as JSON: the fields of a REST body, or of the SSE stream's and the overlay's query string,
 * as the operation takes them. Whole numbers and strings of digits are accepted for the three numbers (as proto
 * JSON does); `rankBy` is "wagered" or "weighted"; anything else is a violation naming the field. Unknown fields
 * are ignored.
 */
import { invalidArgument } from "../../../platform/errors/catalogue.js";
import type { Violation } from "../../../values/violation.js";
import { isRankBy, type RankBy } from "../../../values/weights.js";
import type { PeriodRequestFields } from "../../core/period-request.js";

/** A request's fields as the operation takes them, with what is wrong with the ones sent. */
export interface DecodedFields {
  readonly values: PeriodRequestFields;
  readonly violations: Violation[];
  /** The REST body asked for a signed board (`"signed": true`, docs/verify.md). */
  readonly signed?: boolean;
}

/** The body's JSON object, or the operation's invalid_argument saying what is wrong with it. */
export function parseJsonObject(bytes: Buffer): unknown {
  const text = bytes.toString("utf8");
  if (text.trim() === "")
    throw invalidArgument([
      { message: "request body is empty. Send a JSON object with startTimestamp, endTimestamp and numUsers" },
    ]);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw invalidArgument([{ message: `request body is not valid JSON (${(error as Error).message})` }]);
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw invalidArgument([
      { message: "request body must be a JSON object with startTimestamp, endTimestamp and numUsers" },
    ]);
  }
  return body;
}

/**
 * What is wrong with a value that is not a whole number. A JSON number too large for a double (1e400) parses as
 * Infinity, which JSON.stringify shows as null; one with more digits than a double holds exactly
 * (99999999999999999999999) parses as another number: both are named for what they are.
 */
function notWholeNumber(field: string, value: unknown): string {
  if (typeof value === "number" && !Number.isFinite(value)) {
    return `${field} is out of range: the number sent is beyond what a JSON number can hold`;
  }
  if (typeof value === "number" && Number.isInteger(value)) {
    return `${field} is out of range: the number sent has more digits than a JSON number holds exactly (read as ${value})`;
  }
  return `${field} must be a whole number, got ${JSON.stringify(value)}`;
}

/** Reads the fields from a JSON object (or a query string's fields as strings). */
export function decodeRequestFields(body: unknown): {
  values: PeriodRequestFields;
  violations: Violation[];
  signed: boolean;
} {
  const record = body as Record<string, unknown>;
  const violations: Violation[] = [];
  const wholeNumber = (field: string): bigint | undefined => {
    if (!Object.hasOwn(record, field)) return undefined;
    const value = record[field];
    if (typeof value === "number" && Number.isSafeInteger(value)) return BigInt(value);
    if (typeof value === "string" && /^-?\d{1,30}$/.test(value)) return BigInt(value);
    violations.push({ field, message: notWholeNumber(field, value) });
    return undefined;
  };
  let rankBy: RankBy | undefined;
  if (Object.hasOwn(record, "rankBy")) {
    if (isRankBy(record.rankBy)) rankBy = record.rankBy;
    else {
      violations.push({
        field: "rankBy",
        message: `rankBy must be "wagered" or "weighted", got ${JSON.stringify(record.rankBy)}`,
      });
    }
  }
  const signed = record.signed === true;
  if (Object.hasOwn(record, "signed") && typeof record.signed !== "boolean") {
    violations.push({ field: "signed", message: `signed must be true or false, got ${JSON.stringify(record.signed)}` });
  }
  return {
    signed,
    values: {
      startTimestamp: wholeNumber("startTimestamp"),
      endTimestamp: wholeNumber("endTimestamp"),
      numUsers: wholeNumber("numUsers"),
      rankBy,
    },
    violations,
  };
}
