/**
 * `npm run cli -- <command>`: operator commands.
 *
 *   migrate                                   apply pending schema migrations
 *   keys create --affiliate <id> [--label <text>] [--rate-limit <points>/<seconds>s] [--json]
 *   keys list [--json]                        never prints keys, only their ids
 *   keys revoke <keyId>
 *   keys set-rate-limit <keyId> <points>/<seconds>s|default
 *   import <file> [--format jsonl|csv]        users and wagers from JSON Lines or CSV, through ingest
 *   seed [--seed 42] [--affiliates …] …       deterministic synthetic data (see data-commands.ts)
 *   verify                                    recompute every rollup from raw wagers; exit 1 on a mismatch
 *   demo                                      load demo data, create a demo key, serve
 */
import { parseArgs } from "node:util";
import { generateApiKey } from "../auth/api-key-secret.js";
import { ConfigError, loadConfig } from "../config.js";
import { insertApiKey, listApiKeys, revokeApiKey, setApiKeyRateLimit } from "../storage/api-keys.js";
import { type Database, ensureDatabaseExists, openDatabase } from "../storage/database.js";
import { migrate } from "../storage/migrations.js";
import { importCommand, seedCommand, verifyCommand } from "./data-commands.js";
import { runDemo } from "./demo.js";

const USAGE = `usage: npm run cli -- <command>

  migrate                                      apply pending schema migrations
  keys create --affiliate <affiliateId> [--label <text>] [--rate-limit <points>/<seconds>s] [--json]
  keys list [--json]
  keys revoke <keyId>
  keys set-rate-limit <keyId> <points>/<seconds>s|default
  import <file> [--format jsonl|csv]           users and wagers from JSON Lines or CSV (see README)
  seed [--seed 42] [--affiliates 2000] [--users <n>] [--wagers 1000000] [--months 12]
       [--end <unixSeconds>] [--prefix <text>] [--method auto|record|bulk]
                                               deterministic synthetic users and wagers
  verify [--max-report 100]                    recompute every rollup from raw wagers; exit 1 on a mismatch
  demo [--port <port>]                         demo data, a demo key, and the server

Settings come from the environment (DATABASE_URL, PORT, ...; see README).`;

export class UsageError extends Error {}

/** "100/60s" → { points: 100, windowSeconds: 60 } */
export function parseRateLimit(text: string): { points: number; windowSeconds: number } {
  const match = /^(\d{1,9})\/(\d{1,6})s$/.exec(text.trim());
  if (match === null || Number(match[1]) < 1 || Number(match[2]) < 1) {
    throw new UsageError(`--rate-limit must look like <points>/<seconds>s, e.g. 120/60s; got "${text}"`);
  }
  return { points: Number(match[1]), windowSeconds: Number(match[2]) };
}

/** Runs `work` on the configured database, created and migrated first if needed. */
export async function withDatabase<T>(work: (db: Database) => Promise<T>): Promise<T> {
  const config = loadConfig();
  await ensureDatabaseExists(config.databaseUrl);
  const db = await openDatabase({ url: config.databaseUrl, poolSize: 2 });
  try {
    await migrate(db.write);
    return await work(db);
  } finally {
    await db.close();
  }
}

/** The options of the keys commands; a misspelt or incomplete option is a usage error (exit 2). */
function parseKeysOptions(args: string[]) {
  try {
    return parseArgs({
      args,
      allowPositionals: true,
      options: {
        affiliate: { type: "string" },
        label: { type: "string" },
        "rate-limit": { type: "string" },
        json: { type: "boolean", default: false },
      },
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

async function keysCommand(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseKeysOptions(rest);
  switch (sub) {
    case "create": {
      const affiliate = values.affiliate;
      if (affiliate === undefined || affiliate.length < 1 || affiliate.length > 64) {
        throw new UsageError("keys create needs --affiliate <affiliateId> (1 to 64 characters)");
      }
      const rateLimit = values["rate-limit"] === undefined ? null : parseRateLimit(values["rate-limit"]);
      const generated = generateApiKey();
      const stored = await withDatabase((db) =>
        insertApiKey(db.write, {
          id: generated.id,
          hash: generated.hash,
          affiliateExternalId: affiliate,
          label: values.label ?? "",
          rateLimit,
        }),
      );
      if (values.json) {
        process.stdout.write(`${JSON.stringify({ id: stored.id, key: generated.secret, affiliateId: affiliate })}\n`);
      } else {
        process.stdout.write(
          `Created key ${stored.id} for affiliate ${affiliate}.\n\n  ${generated.secret}\n\n` +
            "This is the only time the key is shown: only its SHA-256 hash is stored.\n",
        );
      }
      return;
    }
    case "list": {
      const keys = await withDatabase((db) => listApiKeys(db.read));
      if (values.json) {
        for (const k of keys) {
          process.stdout.write(
            `${JSON.stringify({
              id: k.id,
              affiliateId: k.affiliateExternalId,
              label: k.label,
              createdAt: k.createdAt,
              revokedAt: k.revokedAt,
              rateLimit: k.rateLimit,
            })}\n`,
          );
        }
        return;
      }
      if (keys.length === 0) {
        process.stdout.write("No keys yet. Create one with: npm run cli -- keys create --affiliate <affiliateId>\n");
        return;
      }
      process.stdout.write(
        "id                    affiliate         status   rate limit    created               label\n",
      );
      for (const k of keys) {
        const status = k.revokedAt === null ? "active" : "revoked";
        const limit = k.rateLimit === null ? "default" : `${k.rateLimit.points}/${k.rateLimit.windowSeconds}s`;
        const created = new Date(k.createdAt * 1000).toISOString().replace(/\.\d+Z$/, "Z");
        process.stdout.write(
          `${k.id.padEnd(22)}${k.affiliateExternalId.padEnd(18)}${status.padEnd(9)}${limit.padEnd(14)}${created.padEnd(22)}${k.label}\n`,
        );
      }
      return;
    }
    case "revoke": {
      const id = positionals[0];
      if (id === undefined) throw new UsageError("keys revoke needs the key id (see: npm run cli -- keys list)");
      const found = await withDatabase((db) => revokeApiKey(db.write, id));
      if (!found) throw new UsageError(`no key with id ${id} (see: npm run cli -- keys list)`);
      process.stdout.write(`Revoked ${id}. Running servers refuse it within 5 seconds.\n`);
      return;
    }
    case "set-rate-limit": {
      const [id, limitText] = positionals;
      if (id === undefined || limitText === undefined) {
        throw new UsageError("keys set-rate-limit needs <keyId> and <points>/<seconds>s or default");
      }
      const rateLimit = limitText === "default" ? null : parseRateLimit(limitText);
      const found = await withDatabase((db) => setApiKeyRateLimit(db.write, id, rateLimit));
      if (!found) throw new UsageError(`no key with id ${id} (see: npm run cli -- keys list)`);
      process.stdout.write(`Rate limit of ${id} is now ${limitText}. Running servers apply it within 5 seconds.\n`);
      return;
    }
    default:
      throw new UsageError(`unknown keys command "${sub ?? ""}"`);
  }
}

export async function runCli(argv: string[]): Promise<void> {
  const [command, ...args] = argv;
  switch (command) {
    case "migrate": {
      const config = loadConfig();
      await ensureDatabaseExists(config.databaseUrl);
      const db = await openDatabase({ url: config.databaseUrl, poolSize: 1 });
      try {
        const report = await migrate(db.write);
        for (const m of report.applied) process.stdout.write(`Applied migration ${m.version}: ${m.name}\n`);
        process.stdout.write(`Schema is at version ${report.current}.\n`);
      } finally {
        await db.close();
      }
      return;
    }
    case "keys":
      return keysCommand(args);
    case "import":
      return importCommand(args);
    case "seed":
      return seedCommand(args);
    case "verify":
      return verifyCommand(args);
    case "demo":
      return runDemo(args);
    case undefined:
    case "help":
    case "--help":
    case "-h":
      process.stdout.write(`${USAGE}\n`);
      return;
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runCli(process.argv.slice(2)).catch((error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(`error: ${error.message}\n\n${USAGE}\n`);
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
