/**
 * `import <file>`: users and wagers from a JSON Lines or CSV file, streamed
 * through the same ingest path as the RPC service, in batches of 1000.
 *
 * A bad line (unparseable, breaking a rule, naming an unknown user, or re-using
 * a wager id with other content) is reported with its line number and skipped;
 * the rest goes on. Each batch commits on its own and wager ids make recording
 * idempotent, so after a crash the same command can simply be run again: what
 * was recorded counts as duplicates, the rest is recorded, totals stay exact.
 *
 * JSON Lines, one object per line:
 *   {"type":"user","id":"u1","affiliateId":"aff-1","username":"alice","avatar":"https://…"}
 *   {"type":"wager","id":"w1","userId":"u1","amount":"12.5","placedAt":1733115600,"weightBps":5000}
 *   {"type":"void","id":"w1"}
 * A void line takes the wager with that id out of the totals for good
 * (VoidWagers), whether its wager line comes before, after, or in another file.
 * `amount` must be a JSON string (a JSON number may already have lost digits);
 * `weightBps` (basis points, 0 to 10000) is optional: absent, the wager counts
 * fully. snake_case keys (affiliate_id, user_id, placed_at, weight_bps) are
 * accepted too.
 *
 * CSV: a header line names the columns, in any order, in camelCase or
 * snake_case, quoted or not: users `id,affiliateId,username,avatar` (avatar
 * optional), wagers `id,userId,amount,placedAt[,weightBps]` (an empty weight
 * counts fully). A file may mix both with a
 * `type` column (user, wager or void: the wager id in `id`) and the union of the columns. Fields may be
 * quoted with "…" ("" inside for a quote); a record is one line.
 */
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { createInterface } from "node:readline";
import { sameWagerContent, type UserProfile } from "../values/records.js";
import { checkUser, checkWager, idProblems, MAX_BATCH, type WagerInput } from "./validation.js";
import type { WagerIngest } from "./wager-ingest.js";

export type ImportFormat = "jsonl" | "csv";

export interface ImportOptions {
  readonly format?: ImportFormat;
  readonly now?: () => number;
  /** Reports a refused line (line numbers from 1). */
  readonly onBadLine?: (line: number, problem: string) => void;
  /** Called as the file is read: bytes read so far, file size, lines read. */
  readonly onProgress?: (bytes: number, size: number, lines: number) => void;
}

export interface ImportReport {
  readonly format: ImportFormat | undefined;
  readonly lines: number;
  readonly users: number;
  readonly recorded: number;
  readonly duplicates: number;
  /** Void lines: wagers taken out now, already voided before, and not recorded yet (pending). */
  readonly voided: number;
  readonly alreadyVoided: number;
  readonly pendingVoids: number;
  readonly badLines: number;
}

type Parsed =
  | { readonly kind: "user"; readonly user: UserProfile }
  | { readonly kind: "wager"; readonly wager: WagerInput }
  | { readonly kind: "void"; readonly id: string }
  | { readonly kind: "skip" }
  | { readonly kind: "bad"; readonly problem: string };

export function formatOf(path: string, firstLine: string): ImportFormat {
  if (/\.csv$/i.test(path)) return "csv";
  if (/\.(jsonl|ndjson|json)$/i.test(path)) return "jsonl";
  return firstLine.trimStart().startsWith("{") ? "jsonl" : "csv";
}

export async function importFile(
  ingest: WagerIngest,
  path: string,
  options: ImportOptions = {},
): Promise<ImportReport> {
  const now = options.now ?? (() => Math.floor(Date.now() / 1000));
  const size = (await stat(path)).size;
  const stream = createReadStream(path);
  const lines = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
  let parse: ((text: string) => Parsed) | undefined;
  let format: ImportFormat | undefined;
  let lineNumber = 0;
  let badLines = 0;
  let usersUpserted = 0;
  let recorded = 0;
  let duplicates = 0;
  let users: { line: number; user: UserProfile }[] = [];
  let wagers: { line: number; wager: WagerInput }[] = [];
  /** The pending batch by wager id: a repeat inside the batch is settled here, as it would be line by line. */
  let pendingIds = new Map<string, { line: number; wager: WagerInput }>();
  let repeats = 0;
  let voids: { line: number; id: string }[] = [];
  const voidCounts = { voided: 0, alreadyVoided: 0, pending: 0 };
  const reports = new LineOrderedReports(options.onBadLine);
  const bad = (line: number, problem: string) => {
    badLines += 1;
    reports.add(line, problem);
  };
  /** The first line still waiting in a batch: a refusal of it can only come at that batch's flush. */
  const firstUnsettledLine = () =>
    Math.min(users[0]?.line ?? Infinity, wagers[0]?.line ?? Infinity, voids[0]?.line ?? Infinity);

  const flushUsers = async () => {
    if (users.length === 0) return;
    const batch = users;
    users = [];
    const result = await ingest.upsertUsers(batch.map((u) => u.user));
    if (result.kind !== "upserted") {
      // Lines were checked one by one already; report whatever the batch check still found.
      const refused = new Set(result.items.map((item) => item.index));
      for (const item of result.items) bad(batch[item.index]?.line ?? 0, item.problems.join("; "));
      users = batch.filter((_, i) => !refused.has(i));
      if (result.items.length > 0) return flushUsers();
      throw new Error(result.batchProblem ?? "users refused");
    }
    usersUpserted += result.upserted;
  };

  /** Reports each wager of the batch that `problem` finds fault with as a bad line; returns their indexes. */
  const refuse = (
    batch: readonly { line: number; wager: WagerInput }[],
    problem: (wager: WagerInput) => string | undefined,
  ): Set<number> => {
    const indexes = new Set<number>();
    for (const [i, w] of batch.entries()) {
      const text = problem(w.wager);
      if (text === undefined) continue;
      bad(w.line, text);
      indexes.add(i);
    }
    return indexes;
  };

  const flushWagers = async () => {
    await flushUsers();
    let batch = wagers;
    wagers = [];
    pendingIds = new Map();
    while (batch.length > 0) {
      const result = await ingest.recordWagers(batch.map((w) => w.wager));
      let refused: Set<number>;
      switch (result.kind) {
        case "recorded":
          recorded += result.recorded;
          duplicates += result.duplicates;
          return;
        case "invalid":
          if (result.items.length === 0) throw new Error(result.batchProblem ?? "wagers refused");
          for (const item of result.items) bad(batch[item.index]?.line ?? 0, item.problems.join("; "));
          refused = new Set(result.items.map((item) => item.index));
          break;
        case "unknown_users": {
          const unknown = new Set(result.userIds);
          refused = refuse(batch, ({ userId }) =>
            unknown.has(userId)
              ? `user ${JSON.stringify(userId)} is unknown (not among the user lines so far, not stored)`
              : undefined,
          );
          break;
        }
        case "conflict": {
          const conflicting = new Set(result.wagerIds);
          refused = refuse(batch, ({ id }) =>
            conflicting.has(id)
              ? `wager ${JSON.stringify(id)} was already recorded with another user, amount, time or weight`
              : undefined,
          );
          break;
        }
      }
      // Every refusal names at least one line, so this loop ends.
      batch = batch.filter((_, i) => !refused.has(i));
    }
  };

  const flushVoids = async () => {
    if (voids.length === 0) return;
    // Wagers first, so a void of a wager earlier in the file finds it recorded (either order is exact).
    await flushWagers();
    const batch = voids;
    voids = [];
    const result = await ingest.voidWagers(batch.map((v) => v.id));
    if (result.kind === "invalid") {
      // Ids were checked line by line already; a refusal here is a bug, not data.
      throw new Error(result.batchProblem ?? "void ids refused");
    }
    voidCounts.voided += result.voided;
    voidCounts.alreadyVoided += result.alreadyVoided;
    voidCounts.pending += result.pending;
  };

  for await (const text of lines) {
    lineNumber += 1;
    if (parse === undefined) {
      if (text.trim() === "") continue;
      format = options.format ?? formatOf(path, text);
      if (format === "jsonl") {
        parse = parseJsonLine;
      } else {
        const header = csvHeader(text);
        if (typeof header === "string") {
          bad(lineNumber, header);
          break;
        }
        parse = (line) => parseCsvLine(header, line);
        continue;
      }
    }
    const parsed = parse(text);
    switch (parsed.kind) {
      case "skip":
        break;
      case "bad":
        bad(lineNumber, parsed.problem);
        break;
      case "user": {
        const checked = checkUser(parsed.user);
        if (!checked.ok) bad(lineNumber, checked.problems.join("; "));
        else {
          users.push({ line: lineNumber, user: parsed.user });
          if (users.length === MAX_BATCH) await flushUsers();
        }
        break;
      }
      case "void": {
        const problems = idProblems("id", parsed.id);
        if (problems.length > 0) bad(lineNumber, problems.join("; "));
        else {
          voids.push({ line: lineNumber, id: parsed.id });
          if (voids.length === MAX_BATCH) await flushVoids();
        }
        break;
      }
      case "wager": {
        const checked = checkWager(parsed.wager, now());
        if (!checked.ok) bad(lineNumber, checked.problems.join("; "));
        else {
          const earlier = pendingIds.get(parsed.wager.id);
          if (earlier === undefined) {
            const item = { line: lineNumber, wager: parsed.wager };
            pendingIds.set(parsed.wager.id, item);
            wagers.push(item);
            if (wagers.length === MAX_BATCH) await flushWagers();
          } else if (sameWagerContent(earlier.wager, parsed.wager)) {
            repeats += 1;
          } else {
            bad(
              lineNumber,
              `wager ${JSON.stringify(parsed.wager.id)} repeats the id of line ${earlier.line} with another user, amount, time or weight`,
            );
          }
        }
        break;
      }
    }
    reports.releaseBefore(firstUnsettledLine());
    if (lineNumber % 1000 === 0) options.onProgress?.(stream.bytesRead, size, lineNumber);
  }
  await flushWagers();
  await flushUsers();
  await flushVoids();
  reports.releaseBefore(Infinity);
  options.onProgress?.(size, size, lineNumber);
  return {
    format,
    lines: lineNumber,
    users: usersUpserted,
    recorded,
    duplicates: duplicates + repeats,
    voided: voidCounts.voided,
    alreadyVoided: voidCounts.alreadyVoided,
    pendingVoids: voidCounts.pending,
    badLines,
  };
}

/**
 * Bad-line reports, passed on in line order: a line refused at its batch's flush (an unknown user, a
 * conflict) was read before lines already refused on their own, so reports wait until every earlier
 * line is settled.
 */
class LineOrderedReports {
  private held: { line: number; problem: string }[] = [];
  private sorted = true;

  constructor(private readonly report: ((line: number, problem: string) => void) | undefined) {}

  add(line: number, problem: string): void {
    const last = this.held.at(-1);
    if (last !== undefined && line < last.line) this.sorted = false;
    this.held.push({ line, problem });
  }

  /** Passes on every held report of a line before `line`, in line order (the same line: in the order found). */
  releaseBefore(line: number): void {
    if (!this.sorted) {
      this.held.sort((a, b) => a.line - b.line); // stable: one line's reports keep their order
      this.sorted = true;
    }
    const count = this.held.findIndex((r) => r.line >= line);
    const released = this.held.splice(0, count < 0 ? this.held.length : count);
    for (const r of released) this.report?.(r.line, r.problem);
  }
}

// ---------------------------------------------------------------- JSON Lines

function parseJsonLine(text: string): Parsed {
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

interface CsvHeader {
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
function csvHeader(line: string): CsvHeader | string {
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

function parseCsvLine(header: CsvHeader, line: string): Parsed {
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
