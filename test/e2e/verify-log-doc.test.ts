/**
 * docs/verify.md's "Checking the log with Go" and "… with Python", run as written (issue 46 part 3): the page's
 * curl lines fetch the log's verifier key and a race's signed result from a real server; its Go program, built and
 * run in GOPATH mode over Debian's golang.org/x/mod/sumdb (offline, its cache in a temporary HOME), and its Python
 * script (Debian's cryptography; skipped, saying what to install, without it) each say the race is logged, result
 * #n of the checkpoint's tree. Each refuses, with its reason: another race's id, a result.json whose JWS is another
 * result's, a changed proof hash, entry or checkpoint, a verifier key of another log, a result not yet in a
 * checkpoint, and an entry written in another (non-canonical) form. The page's monitor (Go, over the tiles) lists
 * the affiliate's results, then only the one added after another freeze, and calls out a fork: a checkpoint kept
 * from before, signed with the log's own key, that the new tree does not extend.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SecretBox } from "../../src/platform/database/secret-box.js";
import type { LogKey } from "../../src/ports/results-log.js";
import { checkpointText } from "../../src/results-log/core/checkpoint.js";
import { makeLogKey, privateKeyOf } from "../../src/results-log/core/sequencer.js";
import { signNote, verifierKey } from "../../src/results-log/core/signed-note.js";
import { mariadbLog } from "../../src/results-log/sql/log-store.js";
import { docSection, fencedBlocks } from "../support/doc-blocks.js";
import { MOVED_CLOCK } from "../support/moved-clock.js";
import { withoutPythonModules } from "../support/python.js";
import { useTestServer } from "../support/server.js";
import { activeSigningKey, signedRace } from "../support/signed-races.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const VERIFY_MD = readFileSync(join(ROOT, "docs", "verify.md"), "utf8");
const SECTION = docSection(VERIFY_MD, "Checking the log with Go");
const PYTHON_SECTION = docSection(VERIFY_MD, "Checking the log with Python");
const MONITOR_SECTION = docSection(VERIFY_MD, "Monitoring the log");
const ISSUER = "https://casino.example";
const server = useTestServer("verify_log_docs", { ISSUER });
const work = mkdtempSync(join(tmpdir(), "verify-log-doc-"));
const races: string[] = [];
let answer: Record<string, unknown> = {};

/** Runs a bash block of the page in the work directory, with the page's variables; exit code and output. */
function bash(
  script: string,
  raceId: string,
  affiliateId = "log-docs-aff",
): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: work,
    GOCACHE: join(work, "cache"),
    TOPWAGERS_URL: server.baseUrl,
    RACE_ID: raceId,
    AFFILIATE_ID: affiliateId,
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
const [pythonRunBlock] = fencedBlocks(PYTHON_SECTION, "bash") as [string];
/** The Go check as the page runs it; `go run` adds the program's exit status to what it says. */
const goCheck = async (raceId: string) => {
  const run = await bash(runBlock, raceId);
  return { ...run, stderr: run.stderr.replace(/exit status 1\n$/, "") };
};
const pythonCheck = (raceId: string) => bash(pythonRunBlock, raceId);
const pythonMissing = withoutPythonModules(
  "cryptography",
  "SKIPPED: Debian's cryptography is missing; install it with: apt-get install -y python3-cryptography",
);

beforeAll(async () => {
  await activeSigningKey(server.database.db);
  // The log's first checkpoint (the empty tree) makes its key: the races after it are not in a checkpoint yet.
  await server.app.resultsLog.sequencer.run();
  races.push(await signedRace(server.database.db, "log-docs-aff", ISSUER));
  races.push(await signedRace(server.database.db, "log-docs-aff", ISSUER, 1));
  writeFileSync(join(work, "checklog.go"), fencedBlocks(SECTION, "go")[0] as string);
  writeFileSync(join(work, "check_log.py"), fencedBlocks(PYTHON_SECTION, "python")[0] as string);
  writeFileSync(join(work, "monitor.go"), fencedBlocks(MONITOR_SECTION, "go")[0] as string);
}, 60_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Writes result.json as `change` leaves the race's answer. */
function resultJson(change: (answer: Record<string, unknown>) => unknown): void {
  writeFileSync(join(work, "result.json"), JSON.stringify(change(structuredClone(answer))));
}

/** What each check says when it refuses, where the Go and Python checks word it differently. */
interface Reasons {
  readonly changedProof: string;
  readonly changedCheckpoint: (keyId: string) => string;
  readonly otherKey: string;
}

const GO: Reasons = {
  changedProof: "the entry is not in the tree the checkpoint signs: invalid transparency proof\n",
  changedCheckpoint: (keyId) =>
    `the checkpoint is not signed by casino.example/topwagers: invalid signature for key casino.example/topwagers+${keyId}\n`,
  otherKey: "the checkpoint is not signed by casino.example/topwagers: note has no verifiable signatures\n",
};
const PYTHON: Reasons = {
  changedProof: "the entry is not in the tree the checkpoint signs\n",
  changedCheckpoint: () => "the checkpoint is not signed by casino.example/topwagers\n",
  otherKey: "the checkpoint is not signed by casino.example/topwagers\n",
};

/** Every refusal the page's checks make, for `check`, with its wording `reasons`. */
async function refusals(check: (raceId: string) => Promise<{ code: number; stderr: string }>, reasons: Reasons) {
  const [first, second] = races as [string, string];
  const other = (await (await fetch(`${server.baseUrl}/verify/${second}/signed`)).json()) as { jws: string };
  const keyId = readFileSync(join(work, "log.vkey"), "utf8").split("+")[1] as string;
  type Log = { entry: string; checkpoint: string; proof: string[] };
  const flip = (hash: string) =>
    Buffer.from(Buffer.from(hash, "base64").map((b, i) => (i === 5 ? b ^ 1 : b))).toString("base64");
  const cases: [string, (a: Record<string, unknown>) => unknown, string][] = [
    ["another race", (a) => a, `the entry is race ${first}'s, not ${second}'s\n`],
    ["another JWS", (a) => ({ ...a, jws: other.jws }), "the entry names another signed result than result.json's\n"],
    [
      "a changed proof",
      (a) => ({ ...a, log: { ...(a.log as Log), proof: (a.log as Log).proof.map(flip) } }),
      reasons.changedProof,
    ],
    [
      "a changed checkpoint",
      (a) => ({ ...a, log: { ...(a.log as Log), checkpoint: (a.log as Log).checkpoint.replace("\n2\n", "\n3\n") } }),
      reasons.changedCheckpoint(keyId),
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
    expect([what, refused.code, refused.stderr]).toEqual([what, 1, reason]);
  }
  resultJson((a) => a);
  const kept = readFileSync(join(work, "log.vkey"));
  writeFileSync(join(work, "log.vkey"), `${verifierKey(makeLogKey("casino.example/topwagers"))}\n`);
  const otherKey = await check(first);
  writeFileSync(join(work, "log.vkey"), kept);
  expect([otherKey.code, otherKey.stderr]).toEqual([1, reasons.otherKey]);
}

describe("docs/verify.md: checking the log with Go and with Python", () => {
  it("says a result is not in a checkpoint yet, then, once it is, that it is logged", async () => {
    const [first] = races as [string];
    expect((await bash(fetchBlock, first)).code).toBe(0);
    const checks = pythonMissing === undefined ? [goCheck, pythonCheck] : [goCheck];
    for (const check of checks) {
      const pending = await check(first);
      expect([pending.code, pending.stderr]).toEqual([
        1,
        "not in a checkpoint yet: fetch result.json again in a few seconds\n",
      ]);
    }
    await server.app.resultsLog.sequencer.run();
    expect((await bash(fetchBlock, first)).code).toBe(0);
    answer = JSON.parse(readFileSync(join(work, "result.json"), "utf8")) as Record<string, unknown>;
    const index = (answer.log as { index: number }).index;
    for (const check of checks) {
      expect(await check(first)).toEqual({
        code: 0,
        stdout: `logged: race ${first} is result #${index + 1} of 2 in casino.example/topwagers's log\n`,
        stderr: "",
      });
    }
  }, 120_000);

  it("Go refuses another race, another result's JWS, a changed proof, entry or checkpoint, and another log's key", async () => {
    await refusals(goCheck, GO);
  }, 120_000);

  it.skipIf(pythonMissing !== undefined)(pythonMissing ?? "Python refuses the same, each with its reason", async () => {
    await refusals(pythonCheck, PYTHON);
  });
});

describe("docs/verify.md: monitoring the log", () => {
  const [monitorBlock] = fencedBlocks(MONITOR_SECTION, "bash") as [string];
  const monitor = async () => {
    const run = await bash(monitorBlock, "", "log-docs-aff");
    return { ...run, stderr: run.stderr.replace(/exit status 1\n$/, "") };
  };

  it("lists the affiliate's results, then only the ones added, each checkpoint proved an extension of the last", async () => {
    const [first, second] = races as [string, string];
    const firstRun = await monitor();
    expect(firstRun).toEqual({
      code: 0,
      stdout:
        `#1 final ${first}\n#2 final ${second}\n` +
        "casino.example/topwagers: 2 entries, consistent with the last checkpoint seen; log-docs-aff has 2 results in it\n",
      stderr: "",
    });
    races.push(await signedRace(server.database.db, "log-docs-aff", ISSUER, 2));
    await server.app.resultsLog.sequencer.run();
    const secondRun = await monitor();
    expect(secondRun).toEqual({
      code: 0,
      stdout:
        `#3 final ${races[2]}\n` +
        "casino.example/topwagers: 3 entries, consistent with the last checkpoint seen; log-docs-aff has 3 results in it\n",
      stderr: "",
    });
  }, 120_000);

  it("says the log changed its past when the checkpoint it kept is not a prefix of the new one", async () => {
    // A second tree of size 2 signed with the log's own key: the fork a monitor is there to catch.
    const store = mariadbLog(server.database.db.write, new SecretBox(undefined));
    const key = (await store.key()) as LogKey;
    const forged = checkpointText({ origin: key.name, size: 2, root: new Uint8Array(32).fill(7) });
    writeFileSync(join(work, "monitor", "checkpoint"), signNote(forged, key, privateKeyOf(key)));
    const forked = await monitor();
    expect([forked.code, forked.stderr]).toEqual([
      1,
      expect.stringMatching(
        /^THE LOG CHANGED ITS PAST: the checkpoint of 2 kept is not a prefix of 3 \(.+\); keep both\n$/,
      ),
    ]);
  }, 120_000);
});
