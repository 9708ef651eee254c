/**
 * CLI edges (issue 20, item 5): output piped into a reader that stops early (`| head -1`) ends the
 * command quietly with 0, whatever the command; `import` reports bad lines in line order, also the
 * ones only its batch write can find (an unknown user, a conflicting wager).
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI_ENTRY, collectOutput, importFile, runCli } from "../support/cli.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { createKey } from "../support/fixtures.js";
import { MOVED_CLOCK } from "../support/moved-clock.js";

let database: TestDatabase;
let work: string;

beforeAll(async () => {
  database = await createTestDatabase("cli_edges");
  work = mkdtempSync(path.join(tmpdir(), "topwagers-cli-edges-"));
});

afterAll(async () => {
  rmSync(work, { recursive: true, force: true });
  await database?.drop();
});

/**
 * `node dist/src/cli/main.js <args> <redirect> | head -1` in bash: the CLI's exit code (not head's), what head
 * printed, and the CLI's stderr when it is not part of the pipe.
 */
function pipedIntoHead(
  args: readonly string[],
  redirect = "",
): Promise<{ code: number; first: string; stderr: string }> {
  const quoted = args.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(" ");
  const script = `"$NODE" "$CLI" ${quoted} ${redirect} | head -1; exit "\${PIPESTATUS[0]}"`;
  const child = spawn("bash", ["-c", script], {
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      ...MOVED_CLOCK,
      NODE: process.execPath,
      CLI: CLI_ENTRY,
      DATABASE_URL: database.url,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output = collectOutput(child);
  return new Promise((resolve) =>
    child.once("close", (code) => resolve({ code: code ?? -1, first: output.stdout, stderr: output.stderr })),
  );
}

describe("| head -1 ends every command quietly with exit 0", () => {
  beforeAll(async () => {
    // Far more than a pipe holds (64 KiB): the CLI is still writing when head has gone.
    const { id } = await createKey(database.db, "pipe-aff");
    const [rows] = await database.db.read.query<import("mysql2/promise").RowDataPacket[]>(
      "SELECT affiliate_id, created_at FROM api_keys WHERE id = ?",
      [id],
    );
    const { affiliate_id: affiliateId, created_at: createdAt } = rows[0] as {
      affiliate_id: number;
      created_at: number;
    };
    for (let chunk = 0; chunk < 3; chunk++) {
      const values: unknown[] = [];
      for (let i = 0; i < 1000; i++) {
        values.push(
          `key_pipe${chunk}x${i}`,
          randomBytes(32),
          affiliateId,
          "a label long enough to fill lines",
          createdAt,
        );
      }
      await database.db.write.query(
        `INSERT INTO api_keys (id, key_hash, affiliate_id, label, created_at) VALUES ${Array(1000).fill("(?, ?, ?, ?, ?)").join(", ")}`,
        values,
      );
    }
  }, 60_000);

  it("keys list (3001 keys) | head -1", async () => {
    for (let run = 0; run < 3; run++) {
      const result = await pipedIntoHead(["keys", "list"]);
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      expect(result.first.split("\n")).toHaveLength(2); // one line and its newline
    }
  }, 60_000);

  it("keys list --json | head -1", async () => {
    const result = await pipedIntoHead(["keys", "list", "--json"]);
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" });
  }, 30_000);

  it("import with 1000 bad lines 2>&1 | head -1 (stderr into the closed pipe)", async () => {
    const file = path.join(work, "bad.jsonl");
    writeFileSync(file, `${Array.from({ length: 1500 }, (_, i) => `not json ${i}`).join("\n")}\n`);
    const result = await pipedIntoHead(["import", file], "2>&1");
    expect(result.code).toBe(0);
    expect(result.first).toBe(`${file}:1: not valid JSON (Unexpected token 'o', "not json 0" is not valid JSON)\n`);
  }, 30_000);

  it("--help, --version, migrate --status --json, verify | head -1", async () => {
    for (const args of [["--help"], ["--version"], ["migrate", "--status", "--json"], ["verify"]]) {
      const result = await pipedIntoHead(args);
      expect({ args, code: result.code }).toEqual({ args, code: 0 });
      expect(result.stderr).not.toMatch(/EPIPE|Error/); // verify's progress line is its own stderr
    }
  }, 60_000);
});

describe("import reports bad lines in line order", () => {
  it("lines refused at the batch write (unknown user, conflict) come in order with the others", async () => {
    const earlier = importFile(work, "earlier.jsonl", [
      '{"type":"user","id":"ord-u1","affiliateId":"ord-aff","username":"alice"}',
      '{"type":"wager","id":"ord-w0","userId":"ord-u1","amount":"5","placedAt":1733115600}',
    ]);
    expect((await runCli(["import", earlier], database.url)).code).toBe(0);
    const file = importFile(work, "order.jsonl", [
      '{"type":"user","id":"ord-u2","affiliateId":"ord-aff","username":"bob"}', // 1
      '{"type":"wager","id":"ord-w1","userId":"ord-u2","amount":"1","placedAt":1733115601}', // 2
      '{"type":"wager","id":"ord-w2","userId":"ord-ghost","amount":"1","placedAt":1733115602}', // 3: unknown user
      "not json", // 4
      '{"type":"wager","id":"ord-w1","userId":"ord-u2","amount":"2","placedAt":1733115601}', // 5: repeats line 2
      '{"type":"wager","id":"ord-w0","userId":"ord-u1","amount":"6","placedAt":1733115600}', // 6: conflicts
      '{"type":"wager","id":"ord-w3","userId":"ord-u2","amount":"-1","placedAt":1733115603}', // 7
      '{"type":"wager","id":"ord-w4","userId":"ord-ghost","amount":"1","placedAt":1733115604}', // 8: unknown user
      '{"type":"other"}', // 9
      "",
    ]);
    const result = await runCli(["import", file], database.url);
    expect(result.code).toBe(1);
    expect(result.stderr.split("\n").filter((l) => l.startsWith(`${file}:`))).toEqual([
      `${file}:3: user "ord-ghost" is unknown (not among the user lines so far, not stored)`,
      `${file}:4: not valid JSON (Unexpected token 'o', "not json" is not valid JSON)`,
      `${file}:5: wager "ord-w1" repeats the id of line 2 with another user, amount, time or weight`,
      `${file}:6: wager "ord-w0" was already recorded with another user, amount, time or weight`,
      `${file}:7: amount must be a positive decimal without a sign`,
      `${file}:8: user "ord-ghost" is unknown (not among the user lines so far, not stored)`,
      `${file}:9: "type" must be "user", "wager" or "void", got "other"`,
    ]);
  }, 30_000);
});

describe("import refuses placedAt outside the ingest bounds, naming the line, the field and the bound", () => {
  it("placedAt 1000 and more than 5 minutes ahead are bad lines; the bounds themselves are fine", async () => {
    const now = Math.floor(Date.now() / 1000);
    const file = importFile(work, "bounds.csv", [
      "type,id,affiliateId,username,userId,amount,placedAt",
      "user,b-u1,b-aff,carol,,,",
      "wager,b-w1,,,b-u1,1,1000",
      "wager,b-w2,,,b-u1,1,1733115599",
      "wager,b-w3,,,b-u1,1,1733115600",
      `wager,b-w4,,,b-u1,1,${now + 3600}`,
      `wager,b-w5,,,b-u1,1,${now}`,
      "",
    ]);
    const result = await runCli(["import", file, "--json"], database.url);
    expect(result.code).toBe(1);
    const early = "placedAt must be 1733115600 (2 December 2024) or later since no period starts earlier";
    expect(result.stderr.split("\n").filter((l) => l.startsWith(`${file}:`))).toEqual([
      `${file}:3: ${early}`,
      `${file}:4: ${early}`,
      `${file}:6: placedAt is more than 5 minutes in the future`,
    ]);
    expect(JSON.parse(result.stdout)).toMatchObject({ wagersRecorded: 2, badLines: 3 });
  }, 30_000);
});
