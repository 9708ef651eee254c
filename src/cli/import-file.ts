/**
 * `import <file>`: users, wagers and voids from JSON Lines or CSV, streamed through the ingest path in batches of
 * 1000; a bad line is reported and skipped. Formats and re-runs: README.md, "Data tools: import, seed, verify".
 */
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { createInterface } from "node:readline";
import { ImportBatches, type ImportCounts } from "../ingest/core/import-batches.js";
import { csvHeader, type Parsed, parseCsvLine, parseJsonLine } from "../ingest/core/import-formats.js";
import type { WagerIngest } from "../ingest/core/wager-ingest.js";

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
