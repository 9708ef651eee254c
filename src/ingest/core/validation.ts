/**
 * The rules for ingested users and wagers (docs/contract.md, "Ingest"), shared by the RPC
 * service, `import` and `seed`. Each check returns every problem of an item,
 * phrased for the caller; nothing here touches the database.
 *
 * Messages avoid ": ; , / ? @ & = + $ #" (grpc-js shows them escaped in
 * grpc-message).
 */

import { EARLIEST_PERIOD_START as EARLIEST_START, MAX_PLAUSIBLE_UNIX_SECONDS } from "../../values/calendar.js";
import { canonicalDecimal, parseDecimal } from "../../values/decimal.js";
import { codePoints, idProblems, LONE_SURROGATE } from "../../values/platform-id.js";
import type { UserProfile, WagerRecord } from "../../values/records.js";
import { FULL_WEIGHT_BPS } from "../../values/weights.js";

export const MAX_BATCH = 1000;
/** How far ahead of the server's clock a wager may be placed (clock skew allowance). */
export const MAX_FUTURE_SECONDS = 300;
/** The earliest placement time accepted: no period the API answers starts before it (2 December 2024). */
export const EARLIEST_PLACED_AT = EARLIEST_START;
export const MAX_USERNAME_LENGTH = 64;
export const MAX_AVATAR_LENGTH = 2048;
/** Amounts must be below 10^12: at most 12 integer digits. */
const MAX_INTEGER_DIGITS = 12;
const MAX_FRACTION_DIGITS = 8;

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what this rejects
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/u;

export function usernameProblems(value: string): string[] {
  if (value === "") return ["username is required"];
  if (LONE_SURROGATE.test(value)) return ["username must be valid Unicode text"];
  const problems: string[] = [];
  if (codePoints(value) > MAX_USERNAME_LENGTH) {
    problems.push(`username must be at most ${MAX_USERNAME_LENGTH} characters`);
  }
  if (CONTROL.test(value)) problems.push("username must not contain control characters");
  if (!/\S/u.test(value)) problems.push("username must not be blank");
  return problems;
}

export function avatarProblems(value: string): string[] {
  if (value === "") return [];
  if (codePoints(value) > MAX_AVATAR_LENGTH) return [`avatar must be at most ${MAX_AVATAR_LENGTH} characters`];
  const absolute = "avatar must be empty or an absolute http or https URL";
  if (!/^https?:\/\/[^/]/i.test(value) || /\s/u.test(value) || CONTROL.test(value) || LONE_SURROGATE.test(value)) {
    return [absolute];
  }
  try {
    const url = new URL(value);
    if ((url.protocol !== "http:" && url.protocol !== "https:") || url.hostname === "") return [absolute];
  } catch {
    return [absolute];
  }
  return [];
}

/** Problems of an amount: a plain decimal string > 0, below 10^12, at most 8 fraction digits. */
export function amountProblems(value: string): string[] {
  if (value === "") return ["amount is required"];
  if (/\s/u.test(value)) return ["amount must not contain spaces"];
  if (/^[+-]/.test(value)) return ["amount must be a positive decimal without a sign"];
  if (/[eE]/.test(value)) return ["amount must not use exponent notation (write 1500 not 1.5e3)"];
  if (/[,_']/.test(value)) return ["amount must not contain thousands separators"];
  const parts = parseDecimal(value);
  if (parts === undefined) return ["amount must be a decimal number like 12.5 (digits and an optional point)"];
  const { whole, fraction } = parts;
  const problems: string[] = [];
  if (whole.length > 1 && whole.startsWith("0")) problems.push("amount must not have leading zeros");
  if (fraction.length > MAX_FRACTION_DIGITS) {
    problems.push(`amount must have at most ${MAX_FRACTION_DIGITS} fraction digits`);
  }
  if (whole.replace(/^0+/, "").length > MAX_INTEGER_DIGITS) problems.push("amount must be below 10^12");
  if (canonicalDecimal(value) === "0") problems.push("amount must be greater than 0");
  return problems;
}

/**
 * Problems of a placement time in Unix seconds, given the server's clock: from EARLIEST_PLACED_AT (a wager
 * before it could never be shown) to MAX_FUTURE_SECONDS after now.
 */
export function placedAtProblems(value: bigint, nowSeconds: number): string[] {
  if (value < 0n) return ["placedAt must be Unix seconds (0 or more)"];
  if (value < BigInt(EARLIEST_PLACED_AT)) {
    return [`placedAt must be ${EARLIEST_PLACED_AT} (2 December 2024) or later since no period starts earlier`];
  }
  if (value > BigInt(nowSeconds + MAX_FUTURE_SECONDS)) {
    if (value > BigInt(MAX_PLAUSIBLE_UNIX_SECONDS)) return ["placedAt looks like milliseconds. Send Unix seconds"];
    return [`placedAt is more than ${MAX_FUTURE_SECONDS / 60} minutes in the future`];
  }
  return [];
}

/** Problems of a weight in basis points: a whole number from 0 to 10000. */
export function weightProblems(value: number): string[] {
  if (!Number.isInteger(value) || value < 0 || value > FULL_WEIGHT_BPS) {
    return [`weightBps must be a whole number from 0 to ${FULL_WEIGHT_BPS} basis points (got ${value})`];
  }
  return [];
}

/** A wager as received, before its time is known to fit a number. */
export interface WagerInput {
  readonly id: string;
  readonly userId: string;
  readonly amount: string;
  readonly placedAt: bigint;
  /** Basis points; absent counts fully. */
  readonly weightBps?: number | undefined;
}

export type Checked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problems: string[] };

export function checkUser(user: UserProfile): Checked<UserProfile> {
  const problems = [
    ...idProblems("id", user.id),
    ...idProblems("affiliateId", user.affiliateId),
    ...usernameProblems(user.username),
    ...avatarProblems(user.avatar),
  ];
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value: user };
}

export function checkWager(wager: WagerInput, nowSeconds: number): Checked<WagerRecord> {
  const problems = [
    ...idProblems("id", wager.id),
    ...idProblems("userId", wager.userId),
    ...amountProblems(wager.amount),
    ...placedAtProblems(wager.placedAt, nowSeconds),
    ...(wager.weightBps === undefined ? [] : weightProblems(wager.weightBps)),
  ];
  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    value: {
      id: wager.id,
      userId: wager.userId,
      amount: wager.amount,
      placedAt: Number(wager.placedAt),
      weightBps: wager.weightBps ?? FULL_WEIGHT_BPS,
    },
  };
}
