/**
 * The data commands of `npm run cli`: import, seed and verify. Progress goes
 * to stderr (a bar on a terminal, plain lines otherwise); results to stdout.
 */
import { basename } from "node:path";
import { parseArgs } from "node:util";
import type { SeedPlan } from "../ingest/core/seed-data.js";
import { EARLIEST_PLACED_AT, MAX_FUTURE_SECONDS } from "../ingest/core/validation.js";
import { WagerIngest } from "../ingest/core/wager-ingest.js";
import { mariadbIngest } from "../ingest/sql/ingest-store.js";
import { type RollupContent, verifyRollups } from "../ingest/sql/verify.js";
import { hourStart } from "../values/calendar.js";
import { sameDecimal } from "../values/decimal.js";
import { printJson, UsageError, withDatabase } from "./common.js";
import { type ImportFormat, importFile } from "./import-file.js";
import { formatDuration, Progress } from "./progress.js";
import { type SeedMethod, type SeedProgress, seedDatabase } from "./seed.js";
import { RUN } from "./usage.js";

const number = new Intl.NumberFormat("en-US");

/**
 * Parses `--name value` options plus the `--json` flag; a misspelt or
 * incomplete option is a usage error.
 */
function options<const N extends string>(
  args: string[],
  names: readonly N[],
): { values: Partial<Record<N, string>>; json: boolean; positionals: string[] } {
  try {
    const parsed = parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        ...Object.fromEntries(names.map((name) => [name, { type: "string" as const }])),
        json: { type: "boolean" as const, default: false },
      },
    });
    const { json, ...values } = parsed.values;
    return { values: values as Partial<Record<N, string>>, json: json === true, positionals: parsed.positionals };
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

function wholeNumber(name: string, text: string | undefined, fallback: number, min = 0): number {
  if (text === undefined) return fallback;
  const cleaned = text.replaceAll("_", "");
  if (!/^\d{1,15}$/.test(cleaned) || Number(cleaned) < min) {
    throw new UsageError(`--${name} must be a whole number of at least ${min}, got "${text}"`);
  }
  return Number(cleaned);
}

/**
 * Prints what a data command did: with `--json` one document with the elapsed `seconds` added,
 * else the text made from the elapsed time as people read it.
 */
function printOutcome(json: boolean, started: number, document: object, text: (took: string) => string): void {
  const seconds = (Date.now() - started) / 1000;
  if (json) printJson({ ...document, seconds });
  else process.stdout.write(text(formatDuration(seconds)));
}

/** The wager counts import and seed both report, under the same JSON names. */
function wagerCounts(report: { recorded: number; duplicates: number; voided: number }) {
  return { wagersRecorded: report.recorded, alreadyRecorded: report.duplicates, wagersVoided: report.voided };
}

// ---------------------------------------------------------------- import

export async function importCommand(args: string[]): Promise<void> {
  const { values, json, positionals } = options(args, ["format"]);
  const path = positionals[0];
  if (path === undefined || positionals.length > 1) throw new UsageError("import needs exactly one file");
  const format = values.format;
  if (format !== undefined && format !== "jsonl" && format !== "csv") {
    throw new UsageError(`--format must be jsonl or csv, got "${format}"`);
  }
  const started = Date.now();
  const progress = new Progress({ label: `import ${basename(path)}`, items: "lines", total: 1 });
  let shown = 0;
  const report = await withDatabase((db) =>
    importFile(new WagerIngest(mariadbIngest(db.write)), path, {
      ...(format === undefined ? {} : { format: format as ImportFormat }),
      onProgress: (bytes, size, lines) => progress.update(size === 0 ? 1 : bytes / size, lines),
      onBadLine: (line, problem) => {
        shown += 1;
        if (shown <= 1000) process.stderr.write(`${path}:${line}: ${problem}\n`);
        else if (shown === 1001) process.stderr.write("(more bad lines; only the first 1000 are shown)\n");
      },
    }),
  );
  progress.finish();
  if (report.badLines > 0) process.exitCode = 1;
  printOutcome(
    json,
    started,
    {
      file: path,
      format: report.format ?? null,
      lines: report.lines,
      usersUpserted: report.users,
      ...wagerCounts(report),
      alreadyVoided: report.alreadyVoided,
      pendingVoids: report.pendingVoids,
      badLines: report.badLines,
    },
    (took) =>
      `Imported ${path} (${report.format ?? "empty"}) in ${took}: ` +
      `${number.format(report.lines)} lines, ${number.format(report.users)} users upserted, ` +
      `${number.format(report.recorded)} wagers recorded, ${number.format(report.duplicates)} already recorded, ` +
      (report.voided + report.alreadyVoided + report.pendingVoids > 0
        ? `${number.format(report.voided)} wagers voided, ${number.format(report.alreadyVoided)} already voided, ` +
          `${number.format(report.pendingVoids)} voids pending (wager not recorded yet), `
        : "") +
      `${number.format(report.badLines)} bad lines.\n`,
  );
}

// ---------------------------------------------------------------- seed

const SEED_OPTIONS = [
  "seed",
  "affiliates",
  "users",
  "wagers",
  "months",
  "end",
  "prefix",
  "method",
  "void-per-mille",
] as const;

type SeedValues = Partial<Record<(typeof SEED_OPTIONS)[number], string>>;

export async function seedCommand(args: string[]): Promise<void> {
  const { values, json, positionals } = options(args, SEED_OPTIONS);
  if (positionals.length > 0) throw new UsageError(`seed takes no arguments, got "${positionals.join(" ")}"`);
  const plan = seedPlanOf(values);
  const voidPerMille = wholeNumber("void-per-mille", values["void-per-mille"], 0);
  if (voidPerMille > 1000) throw new UsageError(`--void-per-mille must be 0 to 1000, got "${voidPerMille}"`);
  const method = values.method ?? "auto";
  if (!["auto", "record", "bulk"].includes(method)) {
    throw new UsageError(`--method must be auto, record or bulk, got "${method}"`);
  }
  const reproduce =
    `--seed ${plan.seed} --affiliates ${plan.affiliates}${plan.users === undefined ? "" : ` --users ${plan.users}`} ` +
    `--wagers ${plan.wagers} --months ${plan.months} --end ${plan.end} --prefix ${plan.prefix}` +
    (voidPerMille > 0 ? ` --void-per-mille ${voidPerMille}` : "");
  process.stderr.write(`Seeding ${reproduce} (window ending ${new Date(plan.end * 1000).toISOString()})\n`);
  const started = Date.now();
  const report = await withDatabase((db) =>
    seedDatabase(db, plan, {
      method: method as SeedMethod,
      voidPerMille,
      notice: (text) => process.stderr.write(`note: ${text}\n`),
      progress: seedProgressBars(),
    }),
  );
  printOutcome(
    json,
    started,
    {
      plan: { ...plan },
      method: report.method,
      affiliates: report.affiliates,
      users: report.users,
      wagers: report.wagers,
      ...wagerCounts(report),
    },
    (took) =>
      `Seeded ${number.format(report.affiliates)} affiliates, ${number.format(report.users)} users and ` +
      `${number.format(report.wagers)} wagers (${number.format(report.recorded)} new, ` +
      `${number.format(report.duplicates)} already there${report.voided > 0 ? `, ${number.format(report.voided)} voided` : ""}) by ${report.method} in ` +
      `${took}.\nSame data again: ${RUN} seed ${reproduce}\n`,
  );
}

/** The data set the options ask for; its end must be a time ingest accepts wagers at. */
function seedPlanOf(values: SeedValues): SeedPlan {
  const now = Math.floor(Date.now() / 1000);
  const seed = wholeNumber("seed", values.seed, 42);
  const plan: SeedPlan = {
    seed,
    affiliates: wholeNumber("affiliates", values.affiliates, 2000, 1),
    ...(values.users === undefined ? {} : { users: wholeNumber("users", values.users, 0, 1) }),
    wagers: wholeNumber("wagers", values.wagers, 1_000_000),
    months: wholeNumber("months", values.months, 12, 1),
    end: wholeNumber("end", values.end, hourStart(now)),
    prefix: values.prefix ?? `s${seed}-`,
  };
  if (plan.end <= EARLIEST_PLACED_AT) {
    throw new UsageError(`--end must be after ${EARLIEST_PLACED_AT} (2 December 2024): ingest refuses earlier wagers`);
  }
  if (plan.end > now + MAX_FUTURE_SECONDS) {
    throw new UsageError("--end must not lie more than 5 minutes in the future (ingest would refuse such wagers)");
  }
  if (plan.users !== undefined && plan.users < plan.affiliates) {
    throw new UsageError("--users must be at least --affiliates (every affiliate gets a user)");
  }
  return plan;
}

/** A progress bar per phase of the seed (users, wagers, voids) on stderr. */
function seedProgressBars(): SeedProgress {
  let progress: Progress | undefined;
  return {
    phase(name, total) {
      progress = new Progress({ label: `seed ${name}`, items: name, total });
    },
    update(done) {
      progress?.update(done);
    },
    done() {
      progress?.finish();
    },
  };
}

// ---------------------------------------------------------------- verify

export async function verifyCommand(args: string[]): Promise<void> {
  const { values, json, positionals } = options(args, ["max-report"]);
  if (positionals.length > 0) throw new UsageError(`verify takes no arguments, got "${positionals.join(" ")}"`);
  const maxReported = wholeNumber("max-report", values["max-report"], 100);
  const started = Date.now();
  const progress = new Progress({ label: "verify", items: "wagers", total: 1 });
  const report = await withDatabase((db) =>
    verifyRollups(db.read, {
      maxReported,
      onProgress: (checked, total) => progress.update(total === 0 ? 1 : checked / total, checked),
    }),
  );
  progress.finish();
  if (report.mismatchCount > 0) process.exitCode = 1;
  // The weighted total is shown where weights change it.
  const what = (v: RollupContent | null) =>
    v === null
      ? "no row"
      : `total ${v.total}${sameDecimal(v.total, v.weightedTotal) ? "" : ` (weighted ${v.weightedTotal})`} in ${v.wagers} wagers`;
  const rows = `${number.format(report.rows.hourly)} hourly, ${number.format(report.rows.daily)} daily, ${number.format(report.rows.halfmonthly)} half-month and ${number.format(report.rows.monthly)} monthly rows`;
  const more = report.mismatchCount - report.mismatches.length;
  printOutcome(
    json,
    started,
    {
      ok: report.mismatchCount === 0,
      wagers: report.wagers,
      rows: report.rows,
      mismatchCount: report.mismatchCount,
      mismatches: report.mismatches,
      checkedFrom: report.checkedFrom,
    },
    (took) =>
      report.mismatches
        .map(
          (m) =>
            `MISMATCH ${m.level} affiliate ${JSON.stringify(m.affiliateId)} user ${JSON.stringify(m.userId)} ` +
            `bucket ${m.bucket} (${new Date(m.bucket * 1000).toISOString()}): ` +
            `raw wagers give ${what(m.expected)}, rollup has ${what(m.found)}\n`,
        )
        .join("") +
      (report.mismatchCount > 0
        ? `verify FAILED: ${number.format(report.mismatchCount)} rollup rows disagree with the raw wagers` +
          `${more > 0 ? ` (first ${report.mismatches.length} shown)` : ""}; checked ${number.format(report.wagers)} wagers ` +
          `against ${rows} in ${took}.\n`
        : `verify OK: ${rows} all equal the totals of ${number.format(report.wagers)} raw wagers (checked in ${took}).\n`) +
      (report.checkedFrom.wagers > 0 || report.checkedFrom.hourly > 0
        ? `Rows before the retention horizons were not checked (raw wagers from ${report.checkedFrom.wagers}, ` +
          `hourly rows from ${report.checkedFrom.hourly}, Unix seconds): their raw wagers were pruned.\n`
        : ""),
  );
}
