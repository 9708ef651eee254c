/**
 * `topwagers serve` and the server's entry points (issue 20, items 3, 8 and 11): `serve` starts
 * the server from the environment; `node dist/src/main.js --help` / `--version` answer without
 * listening; fatal start-up errors are log lines of the same shape as every other (level, time,
 * service, msg); a Node older than package.json `engines` gets one warning at start.
 */
import { execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import semver from "semver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI_ENTRY, type CliResult, closed, collectOutput } from "../support/cli.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { MOVED_CLOCK } from "../support/moved-clock.js";
import { freePort, SERVER_ENTRY, sleep, startServerProcess, statusThenStop } from "../support/processes.js";
import { VERSION_LINE } from "../support/release.js";

const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { version: string; engines: { node: string } };
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** Runs `node <entry> <args>` with only `env` (and PATH); a process that does not exit within 15 s is killed. */
function runNode(entry: string, args: readonly string[], env: Record<string, string> = {}): Promise<CliResult> {
  const child = spawn(process.execPath, [entry, ...args], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...MOVED_CLOCK, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const killer = setTimeout(() => child.kill("SIGKILL"), 15_000);
  return closed(child, collectOutput(child)).finally(() => clearTimeout(killer));
}

/** The JSON log lines of stderr; fails on any line that is not one. */
function logLines(stderr: string): Record<string, unknown>[] {
  return stderr
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

let database: TestDatabase;
let closedDatabaseUrl: string;

beforeAll(async () => {
  database = await createTestDatabase("serve_command");
  closedDatabaseUrl = `mysql://root@127.0.0.1:${await freePort()}/topwagers_nothing`;
});

afterAll(async () => {
  await database?.drop();
});

describe("every entry point answers --help and --version without listening", () => {
  const SERVE_USAGE = "usage: topwagers serve\n\nrun the server with the settings from the environment";
  // A database that would let a server start: if --help started one, the process would not exit.
  const env = () => ({ DATABASE_URL: database.url, PORT: "0", INTERNAL_PORT: "0" });

  it("node dist/src/main.js --help prints serve's usage and exits 0", async () => {
    const result = await runNode(SERVER_ENTRY, ["--help"], env());
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" });
    expect(result.stdout.startsWith(SERVE_USAGE), result.stdout).toBe(true);
  });

  it("node dist/src/main.js -h and --version", async () => {
    const help = await runNode(SERVER_ENTRY, ["-h"], env());
    expect(help.code).toBe(0);
    expect(help.stdout.startsWith(SERVE_USAGE)).toBe(true);
    expect(await runNode(SERVER_ENTRY, ["--version"], env())).toEqual({
      code: 0,
      signal: null,
      stdout: VERSION_LINE,
      stderr: "",
    });
  });

  it("topwagers serve --help prints serve's usage, and the program's usage lists serve", async () => {
    const result = await runNode(CLI_ENTRY, ["serve", "--help"], env());
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" });
    expect(result.stdout.startsWith(SERVE_USAGE), result.stdout).toBe(true);
    const program = await runNode(CLI_ENTRY, ["--help"], env());
    expect(program.stdout).toContain(
      "\n  topwagers serve\n      run the server with the settings from the environment",
    );
  });

  it("an unknown option of serve is a usage error (exit 2), not a server", async () => {
    const result = await runNode(SERVER_ENTRY, ["--port", "1"], env());
    expect(result.code).toBe(2);
    expect(result.stderr.startsWith("error: Unknown option '--port'")).toBe(true);
    expect(result.stderr).toContain(`\n\n${SERVE_USAGE}`);
  });
});

describe("topwagers serve", () => {
  it("starts the server from the environment, answers, and stops on SIGTERM with exit 0", async () => {
    const server = await startServerProcess({ DATABASE_URL: database.url }, { entry: CLI_ENTRY, args: ["serve"] });
    expect(await statusThenStop(server, "/readyz")).toBe(200);
    expect(server.child.exitCode).toBe(0);
    expect(server.logs.at(-1)?.msg).toBe("stopped");
    expect(server.otherOutput).toEqual([]);
  }, 30_000);
});

describe("a stop signal during start-up", () => {
  it("SIGTERM while migrations wait stops the server once it serves: exit 0, not killed by the signal", async () => {
    // Another holder's migration lease keeps the start waiting in migrate, with the handlers installed.
    await database.db.write.query(
      "UPDATE schema_migration_lease SET holder = 'serve-command-test', expires_at = UNIX_TIMESTAMP() + 60",
    );
    const connections = async () => {
      const [rows] = await database.db.read.query<import("mysql2/promise").RowDataPacket[]>(
        "SELECT COUNT(*) AS n FROM information_schema.processlist WHERE db = ?",
        [database.db.name],
      );
      return Number(rows[0]?.n);
    };
    const before = await connections();
    const child = spawn(process.execPath, [SERVER_ENTRY], {
      env: { PATH: process.env.PATH ?? "", ...MOVED_CLOCK, DATABASE_URL: database.url, PORT: "0", INTERNAL_PORT: "0" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (c: string) => {
      stderr += c;
    });
    const exit = new Promise<[number | null, string | null]>((resolve) =>
      child.once("close", (code, signal) => resolve([code, signal])),
    );
    try {
      for (let i = 0; i < 100 && (await connections()) <= before; i++) await sleep(50);
      expect(await connections()).toBeGreaterThan(before); // it is waiting for the lease now
      child.kill("SIGTERM");
      await sleep(300);
      await database.db.write.query("UPDATE schema_migration_lease SET holder = '', expires_at = 0");
      expect(await exit).toEqual([0, null]);
    } finally {
      await database.db.write.query("UPDATE schema_migration_lease SET holder = '', expires_at = 0");
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
    const messages = logLines(stderr).map((l) => l.msg as string);
    expect(messages.slice(-3)).toEqual([
      expect.stringMatching(/^topwagers listening on /),
      "shutting down: finishing in-flight requests",
      "stopped",
    ]);
  }, 30_000);
});

describe("fatal start-up errors are log lines like every other", () => {
  it("settings: every problem in one line of the usual shape, exit 2", async () => {
    const result = await runNode(SERVER_ENTRY, [], {
      PORT: "80a",
      RATE_LIMIT_POINTS: "0",
      OTEL_TRACES_EXPORTER: "jaeger",
    });
    expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 2, stdout: "" });
    const lines = logLines(result.stderr);
    expect(lines).toHaveLength(1);
    const problems = [
      'OTEL_TRACES_EXPORTER must be none, otlp or console, got "jaeger"',
      'PORT must be a whole number from 0 to 65535, got "80a"',
      'RATE_LIMIT_POINTS must be a whole number from 1 to 1000000000, got "0"',
    ];
    expect(lines[0]).toEqual({
      level: 60,
      time: expect.stringMatching(ISO_TIME),
      service: "topwagers",
      problems,
      msg: `could not start: invalid configuration: ${problems.join("; ")}`,
    });
  });

  it("an unreachable database: one fatal line with time, service, level and msg, exit 1", async () => {
    const result = await runNode(SERVER_ENTRY, [], { DATABASE_URL: closedDatabaseUrl, PORT: "0", INTERNAL_PORT: "0" });
    expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 1, stdout: "" });
    const lines = logLines(result.stderr);
    expect(lines).toHaveLength(1);
    const [line] = lines;
    expect(Object.keys(line ?? {}).sort()).toEqual(["err", "level", "msg", "service", "time"]);
    expect(line).toMatchObject({ level: 60, service: "topwagers", time: expect.stringMatching(ISO_TIME) });
    expect(line?.msg).toMatch(/^could not start: connect ECONNREFUSED 127\.0\.0\.1:\d+$/);
  });
});

/** The machine's own Node (Debian's), when it is older than `engines` allows. */
const oldNode = (() => {
  try {
    const version = execFileSync("/usr/bin/node", ["--version"], { encoding: "utf8" }).trim().replace(/^v/, "");
    return semver.satisfies(version, pkg.engines.node) ? undefined : version;
  } catch {
    return undefined;
  }
})();

describe("Node older than engines", () => {
  it("the project's Node logs no version warning", async () => {
    const result = await runNode(SERVER_ENTRY, [], { DATABASE_URL: closedDatabaseUrl, PORT: "0", INTERNAL_PORT: "0" });
    expect(logLines(result.stderr).filter((l) => l.level === 40)).toEqual([]);
  });

  it.skipIf(oldNode === undefined)(
    `an older Node (/usr/bin/node ${oldNode ?? "-"}) logs one warning at start, and the server still serves`,
    async () => {
      const server = await startServerProcess({ DATABASE_URL: database.url }, { node: "/usr/bin/node" });
      try {
        expect((await fetch(`${server.baseUrl}/healthz`)).status).toBe(200);
      } finally {
        await server.stop();
      }
      const warnings = server.logs.filter((l) => l.level === 40);
      expect(warnings).toEqual([
        {
          level: 40,
          time: expect.stringMatching(ISO_TIME),
          service: "topwagers",
          node: oldNode,
          engines: pkg.engines.node,
          msg: `Node ${oldNode} is older than the versions this package supports (engines: ${pkg.engines.node}); run it on one of those`,
        },
      ]);
      expect(server.logs[0]).toBe(warnings[0]);
    },
    30_000,
  );
});
