/**
 * What every CLI command shares: its two kinds of failure and the database it
 * works on. Kept apart from main.ts so command modules do not import the entry
 * point (and main.ts can import them without a cycle).
 */
import { type ParseArgsOptionsConfig, parseArgs } from "node:util";
import { type Heartbeat, startInstanceHeartbeat } from "../jobs/instance-heartbeat.js";
import { type Config, loadConfig } from "../platform/config.js";
import { type Database, ensureDatabaseExists, openDatabase } from "../platform/database/database.js";
import { secretKeyFingerprints } from "../platform/database/secret-box.js";
import { createLogger } from "../platform/logger.js";
import { packageInfo } from "../platform/package-info.js";
import { migrate } from "../schema/migration-runner.js";
import { assertReleaseMayUse } from "../schema/release-floor.js";

/** The command line itself is wrong: exit 2, with the command's usage. */
export class UsageError extends Error {}

/** The command line is fine but the data says no (an unknown key id, …): exit 1, one line. */
export class DataError extends Error {}

/**
 * A command family's options (`options`, as parseArgs takes them) and positionals; a misspelt or incomplete
 * option is a usage error (exit 2).
 */
export function parseCommandOptions<const T extends ParseArgsOptionsConfig>(
  args: string[],
  options: T,
): ReturnType<typeof parseArgs<{ args: string[]; allowPositionals: true; options: T }>> {
  try {
    return parseArgs({ args, allowPositionals: true, options });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

export interface DatabaseUse {
  /** The settings; default: read from the environment. */
  readonly config?: Config;
  /** Connections in the pool; default 2. */
  readonly poolSize?: number;
  /** Create the database when it does not exist yet; default: MIGRATE_ON_START. */
  readonly create?: boolean;
  /** Apply pending migrations before `work`; default: MIGRATE_ON_START. */
  readonly migrate?: boolean;
  /** Refuse when the schema's release floor names a newer release than this one; default true. */
  readonly releaseCheck?: boolean;
  /** Register in `instances` while it runs (a command that writes nothing, e.g. migrate --status, does not); default true. */
  readonly register?: boolean;
}

/**
 * Runs `work` on the configured database and closes it after. By default the database is
 * created and migrated first if needed (unless MIGRATE_ON_START=false: then the schema must be
 * migrated already, by `migrate`).
 */
export async function withDatabase<T>(work: (db: Database) => Promise<T>, use: DatabaseUse = {}): Promise<T> {
  const config = use.config ?? loadConfig();
  if (use.create ?? config.migrateOnStart) {
    await ensureDatabaseExists(config.databaseUrl, config.databaseTlsCa, config.databaseConnectTimeoutMs);
  }
  const db = await openDatabase({
    url: config.databaseUrl,
    poolSize: use.poolSize ?? 2,
    tlsCa: config.databaseTlsCa,
    connectTimeoutMs: config.databaseConnectTimeoutMs,
    probeTimeoutMs: config.databaseProbeTimeoutMs,
  });
  let heartbeat: Heartbeat | undefined;
  try {
    // migrate() refuses an older release than the schema's floor itself.
    if (use.migrate ?? config.migrateOnStart) await migrate(db.write);
    else if (use.releaseCheck ?? true) await assertReleaseMayUse(db.write, packageInfo().version);
    // Registered while it runs, so the retention job knows its connections for this release's (jobs/wager-retention.ts).
    if (use.register === false) return await work(db);
    heartbeat = startInstanceHeartbeat({
      database: db,
      role: "cli",
      keys: secretKeyFingerprints(config.webhooks),
      logger: createLogger("silent"),
    });
    return await work(db);
  } finally {
    await heartbeat?.stop();
    await db.close();
  }
}

/** Writes one JSON document (and a newline) to stdout: what `--json` prints. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** Unix seconds as ISO 8601 UTC without fractions, e.g. 2025-01-01T00:00:00Z. */
export function isoSeconds(unixSeconds: number): string {
  return new Date(unixSeconds * 1000).toISOString().replace(/\.\d+Z$/, "Z");
}
