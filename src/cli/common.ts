/**
 * What every CLI command shares: its two kinds of failure and the database it
 * works on. Kept apart from main.ts so command modules do not import the entry
 * point (and main.ts can import them without a cycle).
 */
import { loadConfig } from "../config.js";
import { type Database, ensureDatabaseExists, openDatabase } from "../storage/database.js";
import { migrate } from "../storage/migrations.js";

/** The command line itself is wrong: exit 2, with the command's usage. */
export class UsageError extends Error {}

/** The command line is fine but the data says no (an unknown key id, …): exit 1, one line. */
export class DataError extends Error {}

/**
 * Runs `work` on the configured database, created and migrated first if needed (unless
 * MIGRATE_ON_START=false: then the schema must be migrated already, by `migrate`).
 */
export async function withDatabase<T>(work: (db: Database) => Promise<T>): Promise<T> {
  const config = loadConfig();
  if (config.migrateOnStart) await ensureDatabaseExists(config.databaseUrl, config.databaseTlsCa);
  const db = await openDatabase({ url: config.databaseUrl, poolSize: 2, tlsCa: config.databaseTlsCa });
  try {
    if (config.migrateOnStart) await migrate(db.write);
    return await work(db);
  } finally {
    await db.close();
  }
}

/** Writes one JSON document (and a newline) to stdout: what `--json` prints. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}
