/**
 * The two line formats of `import` (JSON Lines and CSV, read by cli/import-file.ts): one line in, one
 * parsed record (a user, a wager, a void, nothing, or a problem) out. No state beyond a CSV header.
 */
import type { UserProfile } from "../../values/records.js";
import type { WagerInput } from "./validation.js";

export type Parsed =
  | { readonly kind: "user"; readonly user: UserProfile }
  | { readonly kind: "wager"; readonly wager: WagerInput }
  | { readonly kind: "void"; readonly id: string }
  | { readonly kind: "skip" }
  | { readonly kind: "bad"; readonly problem: string };

// ---------------------------------------------------------------- JSON Lines

export function parseJsonLine(text: string): Parsed {
  if (text.trim() === "") return { kind: "skip" };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { kind: "bad", problem: `not valid JSON (${(error as Error).message})` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { kind: "bad", problem: 'expected a JSON object with "type": "user", "wager" or "void"' };
  }
  return fromRecord(value as Record<string, unknown>, "JSON");
}

/** Builds a user or wager from named fields (JSON object or CSV row), naming every wrong field. */
function fromRecord(record: Record<string, unknown>, source: "JSON" | "CSV"): Parsed {
  const field = (camel: string, snake = camel) => (Object.hasOwn(record, camel) ? record[camel] : record[snake]);
  const problems: string[] = [];
  const text = (name: string, value: unknown, required = true): string => {
    if (value === undefined || value === null) {
      if (required) problems.push(`${name} is required`);
      return "";
    }
    if (typeof value !== "string") {
      problems.push(
        name === "amount"
          ? `amount must be a string in ${source} (e.g. "12.5") so that no digit is lost`
          : `${name} must be a string`,
      );
      return "";
    }
    return value;
  };
  const type = field("type");
  if (type === "user") {
    const user = {
      id: text("id", field("id")),
      affiliateId: text("affiliateId", field("affiliateId", "affiliate_id")),
      username: text("username", field("username")),
      avatar: text("avatar", field("avatar"), false),
    };
    return problems.length > 0 ? { kind: "bad", problem: problems.join("; ") } : { kind: "user", user };
  }
  if (type === "wager") {
    const id = text("id", field("id"));
    const userId = text("userId", field("userId", "user_id"));
    const amount = text("amount", field("amount"));
    const rawTime = field("placedAt", "placed_at");
    let placedAt = 0n;
    if (typeof rawTime === "number" && Number.isSafeInteger(rawTime)) placedAt = BigInt(rawTime);
    else if (typeof rawTime === "string" && /^-?\d{1,20}$/.test(rawTime)) placedAt = BigInt(rawTime);
    else if (rawTime === undefined || rawTime === null || rawTime === "") problems.push("placedAt is required");
    else problems.push(`placedAt must be whole Unix seconds, got ${JSON.stringify(rawTime)}`);
    // Absent or empty: the wager counts fully. The range is checked with the other rules.
    const rawWeight = field("weightBps", "weight_bps");
    let weightBps: number | undefined;
    if (typeof rawWeight === "number" && Number.isSafeInteger(rawWeight)) weightBps = rawWeight;
    else if (typeof rawWeight === "string" && /^-?\d{1,9}$/.test(rawWeight)) weightBps = Number(rawWeight);
    else if (rawWeight !== undefined && rawWeight !== null && rawWeight !== "") {
      problems.push(
        `weightBps must be a whole number of basis points from 0 to 10000, got ${JSON.stringify(rawWeight)}`,
      );
    }
    return problems.length > 0
      ? { kind: "bad", problem: problems.join("; ") }
      : { kind: "wager", wager: { id, userId, amount, placedAt, ...(weightBps === undefined ? {} : { weightBps }) } };
  }
  if (type === "void") {
    const id = text("id", field("id"));
    return problems.length > 0 ? { kind: "bad", problem: problems.join("; ") } : { kind: "void", id };
  }
  return { kind: "bad", problem: `"type" must be "user", "wager" or "void", got ${JSON.stringify(type ?? null)}` };
}

// ---------------------------------------------------------------- CSV

export interface CsvHeader {
  /** Canonical field name of each column. */
  readonly names: readonly string[];
  /** The record type when the file has no type column. */
  readonly type: "user" | "wager" | undefined;
}

const CANONICAL: Record<string, string> = {
  type: "type",
  id: "id",
  affiliateid: "affiliateId",
  username: "username",
  avatar: "avatar",
  userid: "userId",
  amount: "amount",
  placedat: "placedAt",
  weightbps: "weightBps",
};

/** Parses the header line; a string is the problem with it. */
export function csvHeader(line: string): CsvHeader | string {
  const cells = splitCsv(line);
  if (typeof cells === "string") return `header: ${cells}`;
  const names = cells.map((c) => CANONICAL[c.trim().toLowerCase().replaceAll("_", "")] ?? c.trim());
  const has = (name: string) => names.includes(name);
  const unknown = names.filter((n) => !Object.values(CANONICAL).includes(n));
  if (unknown.length > 0) return `header: unknown columns ${unknown.map((n) => JSON.stringify(n)).join(", ")}`;
  if (has("type")) return { names, type: undefined };
  if (has("amount") || has("placedAt") || has("userId")) return { names, type: "wager" };
  if (has("username") || has("affiliateId")) return { names, type: "user" };
  return "header: expected the columns id,affiliateId,username,avatar (users) or id,userId,amount,placedAt (wagers)";
}

export function parseCsvLine(header: CsvHeader, line: string): Parsed {
  if (line.trim() === "") return { kind: "skip" };
  const cells = splitCsv(line);
  if (typeof cells === "string") return { kind: "bad", problem: cells };
  if (cells.length !== header.names.length) {
    return { kind: "bad", problem: `expected ${header.names.length} fields, found ${cells.length}` };
  }
  const record: Record<string, unknown> = {};
  for (const [i, name] of header.names.entries()) record[name] = cells[i];
  if (header.type !== undefined) record.type = header.type;
  return fromRecord(record, "CSV");
}

/** One CSV record of one line: fields separated by commas, optionally "quoted" with "" for a quote. */
export function splitCsv(line: string): string[] | string {
  const cells: string[] = [];
  let i = 0;
  for (;;) {
    if (line[i] === '"') {
      let value = "";
      i += 1;
      for (;;) {
        const quote = line.indexOf('"', i);
        if (quote < 0) return "a quoted field is not closed on this line";
        value += line.slice(i, quote);
        if (line[quote + 1] === '"') {
          value += '"';
          i = quote + 2;
        } else {
          i = quote + 1;
          break;
        }
      }
      cells.push(value);
      if (i === line.length) return cells;
      if (line[i] !== ",") return "unexpected text after a quoted field";
      i += 1;
    } else {
      const comma = line.indexOf(",", i);
      if (comma < 0) {
        cells.push(line.slice(i));
        return cells;
      }
      cells.push(line.slice(i, comma));
      i = comma + 1;
    }
  }
}
