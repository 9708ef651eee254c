/**
 * `topwagers log verify`: reads the whole results log and checks it against itself and the races
 * (results-log/core/log-audit.ts): every entry once at a dense index, its leaf hash, each tile hash, each
 * checkpoint's signature and root, and every race final or cancelled after its start since the log began logged
 * with exactly the entry the database gives. A progress line on stderr while entries are read; the outcome on
 * stdout (one JSON document with --json). Exit 0: the log holds; 1: a problem (each listed); 2: the command line.
 */
import { parseArgs } from "node:util";
import { SecretBox } from "../platform/database/secret-box.js";
import { loggableRaces } from "../races/sql/logged-races.js";
import { auditLog, type LogAuditReport } from "../results-log/core/log-audit.js";
import { mariadbLog } from "../results-log/sql/log-store.js";
import { printJson, UsageError, withDatabase } from "./common.js";
import { formatDuration, Progress } from "./progress.js";

const number = new Intl.NumberFormat("en-US");

export async function logCommand(args: string[]): Promise<void> {
  const [subcommand, ...rest] = args;
  if (subcommand !== "verify") throw new UsageError(`unknown log subcommand "${subcommand ?? ""}"`);
  let values: { json?: boolean; "max-report"?: string };
  try {
    values = parseArgs({
      args: rest,
      allowPositionals: false,
      options: { json: { type: "boolean", default: false }, "max-report": { type: "string" } },
    }).values;
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const maxText = values["max-report"] ?? "100";
  if (!/^\d{1,9}$/.test(maxText)) throw new UsageError(`--max-report must be a whole number, got "${maxText}"`);
  const started = Date.now();
  const progress = new Progress({ label: "log verify", items: "entries", total: 1 });
  const report = await withDatabase(
    (db) =>
      // The public half of the log's key is enough: no WEBHOOK_SECRET_KEY is needed to check the log.
      auditLog(mariadbLog(db.read, new SecretBox(undefined)), (after, limit) => loggableRaces(db.read, after, limit), {
        maxReported: Number(maxText),
        onProgress: (read, total) => progress.update(total === 0 ? 1 : read / total, read),
      }),
    { migrate: false, create: false },
  );
  progress.finish();
  if (report.problemCount > 0) process.exitCode = 1;
  const seconds = (Date.now() - started) / 1000;
  if (values.json === true) printJson({ ok: report.problemCount === 0, ...report, seconds });
  else process.stdout.write(reportText(report, formatDuration(seconds)));
}

function reportText(report: LogAuditReport, took: string): string {
  const lines = report.problems.map((problem) => `PROBLEM ${problem}\n`);
  const more = report.problemCount - report.problems.length;
  if (more > 0) lines.push(`… and ${number.format(more)} more problems (--max-report)\n`);
  const pending = report.entries - report.treeSize;
  lines.push(
    `${number.format(report.entries)} entries (${number.format(report.finals)} final, ` +
      `${number.format(report.cancellations)} cancelled)${pending > 0 ? `, ${number.format(pending)} not yet in a checkpoint` : ""}; ` +
      `${number.format(report.checkpoints)} checkpoints, the latest of ${number.format(report.treeSize)} entries ` +
      `(root ${report.root ?? "none"}); key ${report.verifierKey ?? "none yet"}\n`,
    `${number.format(report.racesChecked)} races final or cancelled after their start checked against the log ` +
      `(${number.format(report.racesBeforeLog)} from before it began)\n`,
    report.problemCount === 0
      ? `The log holds: every result once, every checkpoint consistent (${took}).\n`
      : `${number.format(report.problemCount)} problems (${took}).\n`,
  );
  return lines.join("");
}
