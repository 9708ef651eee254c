/**
 * docs/verify.md's "Checking the log with Go", run as written (issue 46 part 3): the page's curl lines fetch the
 * log's verifier key and a race's signed result from a real server, and its Go program, built and run in GOPATH mode
 * over Debian's golang.org/x/mod/sumdb (offline, its cache in a temporary HOME), says the race is logged, result
 * #n of the checkpoint's tree. It refuses, each with its reason: another race's id, a result.json whose JWS is another
 * result's, a changed proof hash, entry or checkpoint, a verifier key of another log, a result not yet in a
 * checkpoint, and an entry written in another (non-canonical) form.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeLogKey } from "../../src/results-log/core/sequencer.js";
import { verifierKey } from "../../src/results-log/core/signed-note.js";
import { docSection, fencedBlocks } from "../support/doc-blocks.js";
import { MOVED_CLOCK } from "../support/moved-clock.js";
import { useTestServer } from "../support/server.js";
import { activeSigningKey, signedRace } from "../support/signed-races.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SECTION = docSection(readFileSync(join(ROOT, "docs", "verify.md"), "utf8"), "Checking the log with Go");
const ISSUER = "https://casino.example";
const server = useTestServer("verify_log_docs", { ISSUER });
const work = mkdtempSync(join(tmpdir(), "verify-log-doc-"));
const races: string[] = [];
let answer: Record<string, unknown> = {};

/** Runs a bash block of the page in the work directory, with the page's variables; exit code and output. */
function bash(script: string, raceId: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: work,
    GOCACHE: join(work, "cache"),
    TOPWAGERS_URL: server.baseUrl,
    RACE_ID: raceId,
    ...MOVED_CLOCK,
  };
  return new Promise((resolve) => {
    execFile(
      "bash",
      ["--norc", "-eo", "pipefail", "-c", script],
      { cwd: work, env, timeout: 120_000 },
      (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr }),
    );
  });
}

const [fetchBlock, runBlock] = fencedBlocks(SECTION, "bash") as [string, string];
const check = (raceId: string) => bash(runBlock, raceId);

beforeAll(async () => {
  await activeSigningKey(server.database.db);
  // The log's first checkpoint (the empty tree) makes its key: the races after it are not in a checkpoint yet.
  await server.app.resultsLog.sequencer.run();
  races.push(await signedRace(server.database.db, "log-docs-aff", ISSUER));
  races.push(await signedRace(server.database.db, "log-docs-aff", ISSUER, 1));
  writeFileSync(join(work, "checklog.go"), fencedBlocks(SECTION, "go")[0] as string);
}, 60_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Writes result.json as `change` leaves the race's answer. */
function resultJson(change: (answer: Record<string, unknown>) => unknown): void {
  writeFileSync(join(work, "result.json"), JSON.stringify(change(structuredClone(answer))));
}

describe("docs/verify.md: checking the log with Go", () => {
  it("says a result is not in a checkpoint yet, then, once it is, that it is logged", async () => {
    const [first] = races as [string];
    expect((await bash(fetchBlock, first)).code).toBe(0);
    const pending = await check(first);
    expect([pending.code, pending.stderr]).toEqual([
      1,
      "not in a checkpoint yet: fetch result.json again in a few seconds\nexit status 1\n",
    ]);
    await server.app.resultsLog.sequencer.run();
    expect((await bash(fetchBlock, first)).code).toBe(0);
    answer = JSON.parse(readFileSync(join(work, "result.json"), "utf8")) as Record<string, unknown>;
    const index = (answer.log as { index: number }).index;
    const logged = await check(first);
    expect(logged).toEqual({
      code: 0,
      stdout: `logged: race ${first} is result #${index + 1} of 2 in casino.example/topwagers's log\n`,
      stderr: "",
    });
  }, 120_000);

  it("refuses another race, another result's JWS, a changed proof, entry or checkpoint, and another log's key", async () => {
    const [first, second] = races as [string, string];
    const other = (await (await fetch(`${server.baseUrl}/verify/${second}/signed`)).json()) as { jws: string };
    const keyId = readFileSync(join(work, "log.vkey"), "utf8").split("+")[1];
    type Log = { entry: string; checkpoint: string; proof: string[] };
    const flip = (hash: string) =>
      Buffer.from(Buffer.from(hash, "base64").map((b, i) => (i === 5 ? b ^ 1 : b))).toString("base64");
    const cases: [string, (a: Record<string, unknown>) => unknown, string][] = [
      ["another race", (a) => a, `the entry is race ${first}'s, not ${second}'s\n`],
      ["another JWS", (a) => ({ ...a, jws: other.jws }), "the entry names another signed result than result.json's\n"],
      [
        "a changed proof",
        (a) => ({ ...a, log: { ...(a.log as Log), proof: (a.log as Log).proof.map(flip) } }),
        "the entry is not in the tree the checkpoint signs: invalid transparency proof\n",
      ],
      [
        "a changed checkpoint",
        (a) => ({ ...a, log: { ...(a.log as Log), checkpoint: (a.log as Log).checkpoint.replace("\n2\n", "\n3\n") } }),
        `the checkpoint is not signed by casino.example/topwagers: invalid signature for key casino.example/topwagers+${keyId}\n`,
      ],
      [
        "an entry in another form",
        (a) => ({ ...a, log: { ...(a.log as Log), entry: (a.log as Log).entry.replace('"at":', ' "at":') } }),
        "the entry is not in its canonical form\n",
      ],
    ];
    for (const [what, change, reason] of cases) {
      resultJson(change);
      const refused = await check(what === "another race" ? second : first);
      // `go run` adds the program's exit status.
      expect([what, refused.code, refused.stderr]).toEqual([what, 1, `${reason}exit status 1\n`]);
    }
    resultJson((a) => a);
    writeFileSync(join(work, "log.vkey"), `${verifierKey(makeLogKey("casino.example/topwagers"))}\n`);
    const otherKey = await check(first);
    expect([otherKey.code, otherKey.stderr]).toEqual([
      1,
      "the checkpoint is not signed by casino.example/topwagers: note has no verifiable signatures\nexit status 1\n",
    ]);
  }, 120_000);
});
