/**
 * The `topwagers` program, loaded by main.ts: operator commands. Their usage lives in usage.ts;
 * `--help` on any command prints it and exits 0 without reading settings or touching the database.
 * Exit codes: 0 done, 1 the data said no (unknown key id, mismatch, bad lines, unreachable
 * database), 2 the command line or a setting is wrong.
 */
import { parseArgs } from "node:util";
import { ConfigError } from "../platform/config.js";
import type { Database } from "../platform/database/database.js";
import { packageInfo, versionLine } from "../platform/package-info.js";
import { migrate, migrationStatus } from "../schema/migration-runner.js";
import { readReleaseFloor } from "../schema/release-floor.js";
import { LATEST_SCHEMA_VERSION } from "../schema/schema-migrations.js";
import { isoSeconds, printJson, UsageError, withDatabase } from "./common.js";
import { importCommand, seedCommand, verifyCommand } from "./data-commands.js";
import { runDemo } from "./demo.js";
import { instancesCommand } from "./instances.js";
import { keysCommand } from "./keys.js";
import { logCommand } from "./log.js";
import { racesCommand } from "./races.js";
import { serveCommand } from "./serve.js";
import { signingKeysCommand } from "./signing-keys.js";
import { exitOnHeldStopSignal } from "./stop-signals.js";
import { programUsage, usageFor, wantsHelp } from "./usage.js";
import { webhooksCommand } from "./webhooks.js";

async function migrateCommand(args: string[]): Promise<void> {
  let values: { status: boolean; json: boolean };
  try {
    const parsed = parseArgs({
      args,
      allowPositionals: false,
      options: { status: { type: "boolean", default: false }, json: { type: "boolean", default: false } },
    });
    values = { status: parsed.values.status === true, json: parsed.values.json === true };
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  if (values.status) {
    // Read only: one connection, and the database left exactly as it is.
    // It shows the release floor rather than refusing on it.
    await withDatabase((db) => printMigrationStatus(db, values.json), {
      poolSize: 1,
      create: false,
      migrate: false,
      releaseCheck: false,
      register: false,
    });
    return;
  }
  // Two connections: one runs the migration, the other renews its lease while a long step (an index build) runs.
  await withDatabase((db) => applyMigrations(db, values.json), { poolSize: 2, create: true, migrate: false });
}

/** `migrate --status`: exit 0 when the schema is current, 1 while migrations are pending (a deploy gate). */
async function printMigrationStatus(db: Database, json: boolean): Promise<void> {
  const status = await migrationStatus(db.write);
  const floor = await readReleaseFloor(db.write);
  const current = Math.max(0, ...status.applied.map((m) => m.version));
  if (status.pending.length > 0) process.exitCode = 1;
  if (json) {
    printJson({
      database: db.name,
      databaseExists: status.databaseExists,
      schemaVersion: current,
      latestVersion: LATEST_SCHEMA_VERSION,
      oldestRelease: floor?.oldestRelease ?? null,
      applied: status.applied,
      pending: status.pending.map((m) => ({ version: m.version, name: m.name })),
    });
    return;
  }
  if (!status.databaseExists) process.stdout.write(`Database ${db.name} does not exist yet (migrate creates it).\n`);
  for (const m of status.applied) {
    process.stdout.write(`applied  ${String(m.version).padStart(3)}  ${m.name}  (${isoSeconds(m.appliedAt)})\n`);
  }
  for (const m of status.pending) process.stdout.write(`pending  ${String(m.version).padStart(3)}  ${m.name}\n`);
  process.stdout.write(
    `Schema is at version ${current}; ${status.pending.length === 0 ? "nothing pending" : `${status.pending.length} pending (apply with: ${"topwagers migrate"})`}.\n`,
  );
  if (floor !== undefined) {
    process.stdout.write(
      `Oldest release that may use it: ${floor.oldestRelease} (set by migration ${floor.setByMigration}); this is ${packageInfo().version}.\n`,
    );
  }
}

async function applyMigrations(db: Database, json: boolean): Promise<void> {
  // Each migration as it starts, each wait for another runner's lease and every few seconds of a long step go to
  // stderr (so --json output stays one document); each migration is printed as soon as it is recorded, so an
  // interrupted run shows what it finished.
  const report = await migrate(db.write, undefined, {
    onProgress: (line) => process.stderr.write(`${line}\n`),
    onApplied: (m, seconds) => {
      if (!json) process.stdout.write(`Applied migration ${m.version}: ${m.name} (${seconds.toFixed(1)} s)\n`);
    },
  });
  if (json) {
    printJson({
      database: db.name,
      schemaVersion: report.current,
      applied: report.applied.map((m) => ({ version: m.version, name: m.name })),
    });
    return;
  }
  process.stdout.write(`Schema is at version ${report.current}.\n`);
}

/** The commands that take arguments, by name (their usage is in usage.ts). */
const COMMANDS = new Map<string, (args: string[]) => Promise<void>>([
  ["serve", serveCommand],
  ["migrate", migrateCommand],
  ["instances", instancesCommand],
  ["keys", keysCommand],
  ["races", racesCommand],
  ["webhooks", webhooksCommand],
  ["signing-keys", signingKeysCommand],
  ["import", importCommand],
  ["seed", seedCommand],
  ["verify", verifyCommand],
  ["log", logCommand],
  ["demo", runDemo],
]);

export async function runCli(argv: string[]): Promise<void> {
  if (wantsHelp(argv)) {
    process.stdout.write(`${usageFor(argv)}\n`);
    return;
  }
  const [command, ...args] = argv;
  const run = command === undefined ? undefined : COMMANDS.get(command);
  if (run !== undefined) return run(args);
  switch (command) {
    case "--version":
    case "-V":
    case "version":
      process.stdout.write(`${versionLine()}\n`);
      return;
    case undefined:
      process.stdout.write(`${programUsage()}\n`);
      return;
    case "help":
      process.stdout.write(`${usageFor(args)}\n`);
      return;
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

/**
 * A reader that stops early (`topwagers keys list | head -1`) closes the pipe: that is not a failure
 * of the command. The next write fails with EPIPE; stop there, quietly, with 0.
 */
function stopQuietlyWhenOutputCloses(stream: NodeJS.WriteStream): void {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(0);
    throw error;
  });
}

/** Runs the CLI and exits with its code: 0 done, 1 data error or failure, 2 usage or settings error. */
export function runProgram(argv: string[]): void {
  // `serve` takes the held stop signals over; every other command ends as a signal would end it.
  if (argv[0] !== "serve" || wantsHelp(argv)) exitOnHeldStopSignal();
  stopQuietlyWhenOutputCloses(process.stdout);
  stopQuietlyWhenOutputCloses(process.stderr);
  runCli(argv).catch((error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(`error: ${error.message}\n\n${usageFor(argv)}\n`);
      process.exit(2);
    }
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
