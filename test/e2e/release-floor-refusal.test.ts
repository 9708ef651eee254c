/**
 * A build refusing a schema whose release floor names a newer release (issue 38): `topwagers migrate`, a command
 * run with MIGRATE_ON_START=false and `serve` (with and without migrating at start) each stop with the message that
 * names both versions, exit 1; `migrate --status` shows the floor instead of refusing.
 */
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliResult, closed, collectOutput, startCli } from "../support/cli.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { MOVED_CLOCK } from "../support/moved-clock.js";
import { SERVER_ENTRY } from "../support/processes.js";
import { RELEASE } from "../support/release.js";

const REFUSAL =
  `this release (${RELEASE.version}) is older than the oldest release this database's schema allows ` +
  "(99.1.0, set by migration 99): run 99.1.0 or newer. Going back below it means restoring the backup " +
  'taken before migration 99 (docs/operations.md, "Rolling back")';

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase("release_floor_refusal");
  await database.db.write.query(
    "UPDATE schema_release_floor SET oldest_release = '99.1.0', set_by_migration = 99 WHERE id = 1",
  );
});

afterAll(async () => {
  await database?.drop();
});

/** The built server with `env`; killed if it has not exited within 20 s (a refusal exits at once). */
function runServer(env: Record<string, string>): Promise<CliResult> {
  const child = spawn(process.execPath, [SERVER_ENTRY], {
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      ...MOVED_CLOCK,
      DATABASE_URL: database.url,
      PORT: "0",
      INTERNAL_PORT: "0",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const killer = setTimeout(() => child.kill("SIGKILL"), 20_000);
  return closed(child, collectOutput(child)).finally(() => clearTimeout(killer));
}

describe("a schema whose floor names a newer release", () => {
  it("migrate refuses with the message naming both versions, exit 1", async () => {
    const result = await startCli(["migrate"], database.url).done;
    expect(result).toEqual({ code: 1, signal: null, stdout: "", stderr: `error: ${REFUSAL}\n` });
  });

  it("a command with MIGRATE_ON_START=false refuses the same way", async () => {
    const result = await startCli(["keys", "list"], database.url, { MIGRATE_ON_START: "false" }).done;
    expect(result).toEqual({ code: 1, signal: null, stdout: "", stderr: `error: ${REFUSAL}\n` });
  });

  it("migrate --status shows the floor and this release", async () => {
    const result = await startCli(["migrate", "--status"], database.url).done;
    expect(result.code).toBe(0);
    expect(
      result.stdout.endsWith(
        `Oldest release that may use it: 99.1.0 (set by migration 99); this is ${RELEASE.version}.\n`,
      ),
    ).toBe(true);
  });

  for (const migrateOnStart of ["true", "false"]) {
    it(`serve with MIGRATE_ON_START=${migrateOnStart} does not start: one fatal line with the message, exit 1`, async () => {
      const result = await runServer({ MIGRATE_ON_START: migrateOnStart });
      expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 1, stdout: "" });
      const fatal = result.stderr
        .split("\n")
        .filter((line) => line !== "")
        .map((line) => JSON.parse(line) as { level: number; msg: string })
        .filter((line) => line.level === 60)
        .map((line) => line.msg);
      expect(fatal).toEqual([`could not start: ${REFUSAL}`]);
    });
  }
});
