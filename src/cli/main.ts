#!/usr/bin/env node
/**
 * The `topwagers` command (`npm run cli -- <command>` from a checkout):
 * operator commands. Their usage lives in usage.ts; `--help` on any command
 * prints it and exits 0 without reading settings or touching the database.
 * Exit codes: 0 done, 1 the data said no (unknown key id, mismatch, bad
 * lines, unreachable database), 2 the command line or a setting is wrong.
 */
import { parseArgs } from "node:util";
import { KeyAdmin, parseDuration, type Refused } from "../auth/key-admin.js";
import { ConfigError } from "../config.js";
import { isEntryPoint } from "../entry.js";
import { packageInfo } from "../package-info.js";
import { listApiKeys, revokeApiKey, setApiKeyRateLimit } from "../storage/api-keys.js";
import type { Database } from "../storage/database.js";
import { LATEST_SCHEMA_VERSION, migrate, migrationStatus } from "../storage/migrations.js";
import { DataError, printJson, UsageError, withDatabase } from "./common.js";
import { importCommand, seedCommand, verifyCommand } from "./data-commands.js";
import { runDemo } from "./demo.js";
import { serveCommand } from "./serve.js";
import { programUsage, usageFor, wantsHelp } from "./usage.js";

/** "100/60s" → { points: 100, windowSeconds: 60 } */
export function parseRateLimit(text: string): { points: number; windowSeconds: number } {
  const match = /^(\d{1,9})\/(\d{1,6})s$/.exec(text.trim());
  if (match === null || Number(match[1]) < 1 || Number(match[2]) < 1) {
    throw new UsageError(`--rate-limit must look like <points>/<seconds>s, e.g. 120/60s; got "${text}"`);
  }
  return { points: Number(match[1]), windowSeconds: Number(match[2]) };
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
        "expires-in": { type: "string" },
        overlap: { type: "string" },
        json: { type: "boolean", default: false },
      },
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

/** A key change refused by the rules (exit 2) or by the data (no such key: exit 1), else what it issued. */
function keyChange<T extends { kind: string }>(result: T | Refused): Exclude<T, Refused> {
  if (result.kind === "invalid") {
    throw new UsageError((result as Extract<Refused, { kind: "invalid" }>).violations.map((v) => v.message).join(". "));
  }
  if (result.kind === "not_found") {
    throw new DataError(
      `no key with id ${(result as Extract<Refused, { kind: "not_found" }>).id} (see: npm run cli -- keys list)`,
    );
  }
  return result as Exclude<T, Refused>;
}

function durationOption(name: string, text: string): number {
  const seconds = parseDuration(text);
  if (seconds === undefined) {
    throw new UsageError(`--${name} must be a whole number with a unit s, m, h, d or w (e.g. 90d), got "${text}"`);
  }
  return seconds;
}

function isoSeconds(unixSeconds: number): string {
  return new Date(unixSeconds * 1000).toISOString().replace(/\.\d+Z$/, "Z");
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
      const expiresIn =
        values["expires-in"] === undefined ? undefined : durationOption("expires-in", values["expires-in"]);
      const result = await withDatabase((db) =>
        new KeyAdmin(db.write).create({
          affiliateId: affiliate,
          label: values.label ?? "",
          rateLimit,
          expiresAt: expiresIn === undefined ? null : Math.floor(Date.now() / 1000) + expiresIn,
        }),
      );
      const issued = keyChange(result);
      const stored = issued.key;
      if (values.json) {
        process.stdout.write(
          `${JSON.stringify({
            id: stored.id,
            key: issued.secret,
            affiliateId: affiliate,
            ...(stored.expiresAt === null ? {} : { expiresAt: stored.expiresAt }),
          })}\n`,
        );
      } else {
        process.stdout.write(
          `Created key ${stored.id} for affiliate ${affiliate}${stored.expiresAt === null ? "" : ` (expires ${isoSeconds(stored.expiresAt)})`}.\n\n  ${issued.secret}\n\n` +
            "This is the only time the key is shown: only its SHA-256 hash is stored.\n",
        );
      }
      return;
    }
    case "rotate": {
      const id = positionals[0];
      if (id === undefined || positionals.length > 1) {
        throw new UsageError("keys rotate needs the key id (see: npm run cli -- keys list)");
      }
      const overlap = values.overlap === undefined ? 0 : durationOption("overlap", values.overlap);
      const issued = keyChange(await withDatabase((db) => new KeyAdmin(db.write).rotate(id, overlap)));
      // The old key's real end: the overlap, or its own earlier expiry or revocation, whichever comes first.
      const old = issued.replaced;
      if (values.json) {
        process.stdout.write(
          `${JSON.stringify({
            id: issued.key.id,
            key: issued.secret,
            affiliateId: issued.key.affiliateExternalId,
            replaces: id,
            oldKeyExpiresAt: old.expiresAt,
            oldKeyRevokedAt: old.revokedAt,
          })}\n`,
        );
      } else {
        const oldEnd =
          old.revokedAt !== null
            ? `${id} was already revoked.`
            : `${id} keeps working until ${isoSeconds(old.expiresAt ?? 0)}; running servers refuse it within 5 seconds after that.`;
        process.stdout.write(
          `Created key ${issued.key.id} for affiliate ${issued.key.affiliateExternalId}, replacing ${id}.\n\n  ${issued.secret}\n\n` +
            `This is the only time the key is shown: only its SHA-256 hash is stored.\n${oldEnd}\n`,
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
              expiresAt: k.expiresAt,
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
        "id                    affiliate         status   rate limit    created               expires               label\n",
      );
      const now = Math.floor(Date.now() / 1000);
      for (const k of keys) {
        const status =
          k.revokedAt !== null ? "revoked" : k.expiresAt !== null && k.expiresAt <= now ? "expired" : "active";
        const limit = k.rateLimit === null ? "default" : `${k.rateLimit.points}/${k.rateLimit.windowSeconds}s`;
        const created = isoSeconds(k.createdAt);
        const expires = k.expiresAt === null ? "never" : isoSeconds(k.expiresAt);
        process.stdout.write(
          `${k.id.padEnd(22)}${k.affiliateExternalId.padEnd(18)}${status.padEnd(9)}${limit.padEnd(14)}${created.padEnd(22)}${expires.padEnd(22)}${k.label}\n`,
        );
      }
      return;
    }
    case "revoke": {
      const id = positionals[0];
      if (id === undefined) throw new UsageError("keys revoke needs the key id (see: npm run cli -- keys list)");
      const found = await withDatabase((db) => revokeApiKey(db.write, id));
      if (!found) throw new DataError(`no key with id ${id} (see: npm run cli -- keys list)`);
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
      if (!found) throw new DataError(`no key with id ${id} (see: npm run cli -- keys list)`);
      process.stdout.write(`Rate limit of ${id} is now ${limitText}. Running servers apply it within 5 seconds.\n`);
      return;
    }
    default:
      throw new UsageError(`unknown keys command "${sub ?? ""}"`);
  }
}

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
    await withDatabase((db) => printMigrationStatus(db, values.json), { poolSize: 1, create: false, migrate: false });
    return;
  }
  // Two connections: one runs the migration, the other renews its lease while a long step (an index build) runs.
  await withDatabase((db) => applyMigrations(db, values.json), { poolSize: 2, create: true, migrate: false });
}

/** `migrate --status`: exit 0 when the schema is current, 1 while migrations are pending (a deploy gate). */
async function printMigrationStatus(db: Database, json: boolean): Promise<void> {
  const status = await migrationStatus(db.write);
  const current = Math.max(0, ...status.applied.map((m) => m.version));
  if (status.pending.length > 0) process.exitCode = 1;
  if (json) {
    printJson({
      database: db.name,
      databaseExists: status.databaseExists,
      schemaVersion: current,
      latestVersion: LATEST_SCHEMA_VERSION,
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
}

async function applyMigrations(db: Database, json: boolean): Promise<void> {
  // Long steps say every few seconds that they are still running (stderr, so --json output stays one document).
  const report = await migrate(db.write, undefined, { onProgress: (line) => process.stderr.write(`${line}\n`) });
  if (json) {
    printJson({
      database: db.name,
      schemaVersion: report.current,
      applied: report.applied.map((m) => ({ version: m.version, name: m.name })),
    });
    return;
  }
  for (const m of report.applied) process.stdout.write(`Applied migration ${m.version}: ${m.name}\n`);
  process.stdout.write(`Schema is at version ${report.current}.\n`);
}

/** The commands that take arguments, by name (their usage is in usage.ts). */
const COMMANDS = new Map<string, (args: string[]) => Promise<void>>([
  ["serve", serveCommand],
  ["migrate", migrateCommand],
  ["keys", keysCommand],
  ["import", importCommand],
  ["seed", seedCommand],
  ["verify", verifyCommand],
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
      process.stdout.write(`${packageInfo().version}\n`);
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
export function main(argv: string[]): void {
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

if (isEntryPoint(import.meta.url)) main(process.argv.slice(2));
