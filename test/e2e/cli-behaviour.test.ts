/**
 * Starts however it is installed, and a CLI that behaves (issue 13): the
 * server and CLI through a symlinked checkout whose path has a space and as an
 * npm `bin` link; `--help` on every command without touching the database;
 * exit codes; every `--json` output parsed.
 */
import { spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliResult, closed, collectOutput, importFile, runCli } from "../support/cli.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { MOVED_CLOCK } from "../support/moved-clock.js";
import { freePort, startServerProcess, statusThenStop } from "../support/processes.js";
import { VERSION_LINE } from "../support/release.js";

const root = process.cwd();
let work: string;
/** The checkout as a release behind a `current` symlink, in a folder whose path has spaces. */
let linkedCheckout: string;
let database: TestDatabase;

function run(file: string, args: readonly string[], env: Record<string, string>): Promise<CliResult> {
  const child = spawn(file, args, { env: { ...MOVED_CLOCK, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  return closed(child, collectOutput(child));
}

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), "topwagers cli "));
  mkdirSync(path.join(work, "my releases"));
  symlinkSync(root, path.join(work, "my releases", "release 1"));
  linkedCheckout = path.join(work, "current app");
  symlinkSync(path.join(work, "my releases", "release 1"), linkedCheckout);
  database = await createTestDatabase("cli_behaviour");
});

afterAll(async () => {
  rmSync(work, { recursive: true, force: true });
  await database?.drop();
});

describe("starts however it is installed", () => {
  it("the server runs through a symlinked checkout whose path has spaces, and stops on SIGTERM", async () => {
    const entry = path.join(linkedCheckout, "dist", "src", "main.js");
    const server = await startServerProcess({ DATABASE_URL: database.url }, { entry });
    expect(await statusThenStop(server, "/healthz")).toBe(200);
    expect(server.child.exitCode).toBe(0);
  }, 30_000);

  it("the CLI runs through the same symlinked path", async () => {
    const result = await run(
      process.execPath,
      [path.join(linkedCheckout, "dist", "src", "cli", "main.js"), "--version"],
      { PATH: process.env.PATH ?? "" },
    );
    expect(result).toEqual({ code: 0, signal: null, stdout: VERSION_LINE, stderr: "" });
  });

  it("the CLI runs as an npm bin link (node_modules/.bin/topwagers -> the package's bin file, run by its shebang)", async () => {
    const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { bin: Record<string, string> };
    expect(pkg.bin).toEqual({ topwagers: "dist/src/cli/main.js" });
    const target = path.join(linkedCheckout, pkg.bin.topwagers as string);
    expect(readFileSync(target, "utf8").startsWith("#!/usr/bin/env node\n")).toBe(true);
    // What npm does on install: a relative symlink in node_modules/.bin and the target made executable.
    chmodSync(target, statSync(target).mode | 0o111);
    const binDir = path.join(work, "node_modules", ".bin");
    mkdirSync(binDir, { recursive: true });
    symlinkSync(path.relative(binDir, target), path.join(binDir, "topwagers"));
    // The project's Node first on PATH, as `npm run` / `npx` arrange.
    const env = { PATH: `${binDir}:${path.dirname(process.execPath)}:${process.env.PATH ?? ""}` };
    const result = await run(path.join(binDir, "topwagers"), ["--version"], env);
    expect(result).toEqual({ code: 0, signal: null, stdout: VERSION_LINE, stderr: "" });
    const help = await run("topwagers", ["keys", "list", "--help"], env);
    expect(help.code).toBe(0);
    expect(help.stdout.startsWith("usage: topwagers keys list [--json]\n")).toBe(true);
  });
});

describe("--help on every command prints its usage and exits 0 without touching the database", () => {
  // Written out here, not read from the CLI's own table.
  const commands: [string[], string][] = [
    [[], "usage: topwagers <command> [options]\n"],
    [["help"], "usage: topwagers <command> [options]\n"],
    [["migrate"], "usage: topwagers migrate [--status] [--json]\n"],
    [["migrate", "--status"], "usage: topwagers migrate [--status] [--json]\n"],
    [["keys"], "usage: topwagers keys <subcommand>\n"],
    [["keys", "create", "--affiliate", "a"], "usage: topwagers keys create --affiliate <affiliateId>"],
    [["keys", "list"], "usage: topwagers keys list [--json]\n"],
    [["keys", "revoke", "key_x"], "usage: topwagers keys revoke <keyId>\n"],
    [["keys", "set-rate-limit"], "usage: topwagers keys set-rate-limit <keyId> <points>/<seconds>s|default\n"],
    [["import", "no-such-file.jsonl"], "usage: topwagers import <file> [--format jsonl|csv] [--json]\n"],
    [["seed"], "usage: topwagers seed [--seed 42]"],
    [["verify"], "usage: topwagers verify [--max-report 100] [--json]\n"],
    [["demo"], "usage: topwagers demo [--port <port>]\n"],
  ];
  let url: string;
  beforeAll(async () => {
    url = `mysql://root@127.0.0.1:${await freePort()}/topwagers_nothing`;
  });

  for (const [index, [args, start]] of commands.entries()) {
    // `-h` on a few of them only: each case is a Node process, and they all go through the same check.
    for (const flag of index % 4 === 0 ? ["--help", "-h"] : ["--help"]) {
      it(`${[...args, flag].join(" ")}`, async () => {
        const result = await runCli([...args, flag], url);
        expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" });
        expect(result.stdout.startsWith(start), result.stdout).toBe(true);
      });
    }
  }

  it("the closed port really is closed: a command that needs the database fails there with one line, exit 1", async () => {
    const result = await runCli(["migrate", "--status"], url);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/^error: [^\n]*ECONNREFUSED[^\n]*\n$/);
  });

  it("--version prints the package's version and the commit it was built from", async () => {
    expect(await runCli(["--version"], url)).toEqual({ code: 0, signal: null, stdout: VERSION_LINE, stderr: "" });
  });
});

describe("exit codes", () => {
  it("a usage error exits 2 with the command's usage, not the whole program's", async () => {
    const result = await runCli(["verify", "--max-reprot", "3"], database.url);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/^error: Unknown option '--max-reprot'/);
    expect(result.stderr).toContain("\n\nusage: topwagers verify [--max-report 100] [--json]\n");
    expect(result.stderr).not.toContain("topwagers seed");
  });

  it("an unknown command exits 2", async () => {
    const result = await runCli(["frobnicate"], database.url);
    expect(result.code).toBe(2);
    expect(result.stderr.startsWith('error: unknown command "frobnicate"\n\nusage: topwagers <command>')).toBe(true);
  });

  it("a wrong setting exits 2 with the problem", async () => {
    const result = await runCli(["migrate"], "http://example.com/db");
    expect(result).toEqual({
      code: 2,
      signal: null,
      stdout: "",
      stderr:
        'invalid configuration:\n  - DATABASE_URL must be a mysql: or mariadb: URL, got "http://example.com/db"\n',
    });
  });

  it("an unknown key id is a data error: exit 1, one line", async () => {
    const result = await runCli(["keys", "revoke", "key_unknown1"], database.url);
    expect(result).toEqual({
      code: 1,
      signal: null,
      stdout: "",
      stderr: "error: no key with id key_unknown1 (see: npm run cli -- keys list)\n",
    });
  });
});

describe("--json prints one JSON document on stdout", () => {
  const json = (result: CliResult): unknown => {
    expect(result.stdout.endsWith("\n")).toBe(true);
    expect(result.stdout.indexOf("\n")).toBe(result.stdout.length - 1);
    return JSON.parse(result.stdout);
  };
  const migrations = [
    { version: 1, name: "affiliates, users, wagers and api keys" },
    { version: 2, name: "hourly, daily and monthly wager totals per affiliate and user" },
    { version: 3, name: "half-month wager totals (1st-15th and 16th-end) per affiliate and user" },
    { version: 4, name: "wager voids and the change feed" },
    { version: 5, name: "api key expiry" },
    { version: 6, name: "publishable api keys, and api key changes in the change feed" },
    { version: 7, name: "wager weights (basis points) and weighted totals" },
    { version: 8, name: "wager weights in the covering index of the raw edges" },
    { version: 9, name: "api key scopes" },
    { version: 10, name: "races and their frozen results" },
    { version: 11, name: "outgoing webhooks: endpoints, events (the outbox), deliveries and their attempts" },
    { version: 12, name: "the weighted total stored beside the plain one, backfilled in batches" },
    { version: 13, name: "signing keys, and the signed final results chained per affiliate" },
    {
      version: 14,
      name: "a race's history: every change with when and by whom, and the voids that reached its standings",
    },
    { version: 15, name: "a cancelled or deleted race's slug can be used again" },
    { version: 16, name: "webhook events indexed by the race they are about" },
    { version: 17, name: "retention horizons and the hashes of pruned wagers" },
    { version: 18, name: "late wagers of a race's period recorded during its review" },
    { version: 19, name: "the live signing key, apart from the results' keys" },
    { version: 20, name: "a counter on each affiliate that every capped create bumps" },
    { version: 21, name: "the results log: its entries, tile hashes, checkpoints and note key" },
    { version: 22, name: "retention held per affiliate by its races that are not final" },
    { version: 23, name: "every process registers itself, and how far retention has deleted" },
    { version: 24, name: "each month's totals indexed by affiliate, month and total (plain and weighted)" },
    { version: 25, name: "one index of each month's totals for both rankings" },
  ];
  const latest = Math.max(...migrations.map((m) => m.version));

  it("migrate --status lists pending migrations without applying them, then migrate applies them", async () => {
    const name = `tw_test_cli_fresh_${process.pid}`;
    const url = database.url.replace(/\/[^/]*$/, `/${name}`);
    try {
      const before = await runCli(["migrate", "--status", "--json"], url);
      // Issue 20: --status exits 1 while migrations are pending (it was 0; the requirement changed).
      expect(before.code).toBe(1);
      expect(json(before)).toEqual({
        database: name,
        databaseExists: false,
        schemaVersion: 0,
        latestVersion: latest,
        oldestRelease: null,
        applied: [],
        pending: migrations,
      });
      // Still nothing there: --status created and applied nothing.
      expect(json(await runCli(["migrate", "--status", "--json"], url))).toMatchObject({ databaseExists: false });
      const applied = await runCli(["migrate", "--json"], url);
      expect(applied.code).toBe(0);
      expect(json(applied)).toEqual({ database: name, schemaVersion: latest, applied: migrations });
      const after = await runCli(["migrate", "--status", "--json"], url);
      const status = json(after) as { applied: { version: number; name: string; appliedAt: number }[] };
      expect(status).toMatchObject({
        databaseExists: true,
        schemaVersion: latest,
        oldestRelease: "0.2.0",
        pending: [],
      });
      expect(status.applied.map(({ version, name }) => ({ version, name }))).toEqual(migrations);
      const now = Date.now() / 1000;
      for (const m of status.applied) expect(Math.abs(m.appliedAt - now)).toBeLessThan(120);
      expect(json(await runCli(["migrate", "--json"], url))).toEqual({
        database: name,
        schemaVersion: latest,
        applied: [],
      });
      const text = await runCli(["migrate", "--status"], url);
      expect(text.stdout).toContain(`Schema is at version ${latest}; nothing pending.\n`);
      expect(after.code).toBe(0);
      expect(text.code).toBe(0);
    } finally {
      await database.db.write.query(`DROP DATABASE IF EXISTS ${name}`);
    }
  }, 30_000);

  it("import --json, then verify --json", async () => {
    const file = importFile(work, "history.jsonl", [
      '{"type":"user","id":"cli-u1","affiliateId":"cli-aff","username":"alice"}',
      '{"type":"wager","id":"cli-w1","userId":"cli-u1","amount":"12.50","placedAt":1733115600}',
      '{"type":"wager","id":"cli-w2","userId":"cli-u1","amount":"0.25","placedAt":1733119200}',
      "not json",
      "",
    ]);
    const imported = await runCli(["import", file, "--json"], database.url);
    expect(imported.code).toBe(1); // one bad line
    const report = json(imported) as Record<string, unknown>;
    expect(typeof report.seconds).toBe("number");
    expect({ ...report, seconds: 0 }).toEqual({
      file,
      format: "jsonl",
      lines: 4,
      usersUpserted: 1,
      wagersRecorded: 2,
      alreadyRecorded: 0,
      wagersVoided: 0,
      alreadyVoided: 0,
      pendingVoids: 0,
      badLines: 1,
      seconds: 0,
    });
    expect(imported.stderr).toContain(`${file}:4: `);
    const verified = await runCli(["verify", "--json"], database.url);
    expect(verified.code).toBe(0);
    const v = json(verified) as Record<string, unknown>;
    // Two wagers an hour apart on the same day: 2 hourly rows, 1 of each other level.
    expect({ ...v, seconds: 0 }).toEqual({
      ok: true,
      wagers: 2,
      rows: { hourly: 2, daily: 1, halfmonthly: 1, monthly: 1 },
      mismatchCount: 0,
      mismatches: [],
      checkedFrom: { wagers: 0, hourly: 0 },
      seconds: 0,
    });
  }, 30_000);

  it("seed --json", async () => {
    const db = await createTestDatabase("cli_seed");
    try {
      const end = 1_733_184_000;
      const args = ["seed", "--seed", "7", "--affiliates", "2", "--users", "5", "--wagers", "40", "--months", "1"];
      const result = await runCli([...args, "--end", String(end), "--prefix", "c-", "--json"], db.url);
      expect(result.code).toBe(0);
      const report = json(result) as Record<string, unknown>;
      expect({ ...report, seconds: 0 }).toEqual({
        plan: { seed: 7, affiliates: 2, users: 5, wagers: 40, months: 1, end, prefix: "c-" },
        method: "record",
        affiliates: 2,
        users: 5,
        wagers: 40,
        wagersRecorded: 40,
        alreadyRecorded: 0,
        wagersVoided: 0,
        seconds: 0,
      });
    } finally {
      await db.drop();
    }
  }, 30_000);
});
