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
import { ImportBatches, type ImportCounts } from "./import-batches.js";
import { csvHeader, type Parsed, parseCsvLine, parseJsonLine } from "./import-formats.js";
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

/** The batches' counts (void lines: voided now, already voided before, pending), with the file's format and lines. */
export interface ImportReport extends ImportCounts {
  readonly format: ImportFormat | undefined;
  readonly lines: number;
}

export function formatOf(path: string, firstLine: string): ImportFormat {
  if (/\.csv$/i.test(path)) return "csv";
  if (/\.(jsonl|ndjson|json)$/i.test(path)) return "jsonl";
  return firstLine.trimStart().startsWith("{") ? "jsonl" : "csv";
}

/** Reads the file line by line into the batches (import-batches.ts), which write and count. */
export async function importFile(
  ingest: WagerIngest,
  path: string,
  options: ImportOptions = {},
): Promise<ImportReport> {
  const now = options.now ?? (() => Math.floor(Date.now() / 1000));
  const size = (await stat(path)).size;
  const stream = createReadStream(path);
  const lines = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
  const batches = new ImportBatches(ingest, options.onBadLine);
  let parse: ((text: string) => Parsed) | undefined;
  let format: ImportFormat | undefined;
  let lineNumber = 0;
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
          batches.bad(lineNumber, header);
          break;
        }
        parse = (line) => parseCsvLine(header, line);
        continue;
      }
    }
    await batches.take(lineNumber, parse(text), now());
    if (lineNumber % 1000 === 0) options.onProgress?.(stream.bytesRead, size, lineNumber);
  }
  const counts = await batches.finish();
  options.onProgress?.(size, size, lineNumber);
  return { format, lines: lineNumber, ...counts };
}
