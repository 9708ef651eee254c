/**
 * examples/python/client.py against a running server over gRPC, as
 * docs/clients.md tells a Python developer to run it: message classes
 * generated at test time from `buf build` and protoc's built-in Python output,
 * Debian's python3-grpcio and python3-protobuf. Skipped, saying what to
 * install, when those packages are absent.
 */
import { execFile, execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collectOutput, watchOneChange } from "../support/cli.js";
import { DEC_1, NOV_16 } from "../support/dates.js";
import { addBoard, addUsers, addWagers, createKey, wager } from "../support/fixtures.js";
import { startTestServer, type TestServer } from "../support/server.js";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CLIENT = join(ROOT, "examples", "python", "client.py");
/** Debian's interpreter: its dist-packages hold python3-grpcio and python3-protobuf. */
const PYTHON = "/usr/bin/python3";

function missingTools(): string | undefined {
  try {
    execFileSync(PYTHON, ["-c", "import grpc, google.protobuf"], { stdio: "ignore" });
    execFileSync("protoc", ["--version"], { stdio: "ignore" });
    return undefined;
  } catch {
    return (
      "SKIPPED: the Python gRPC client example needs /usr/bin/python3 with grpc and google.protobuf, and protoc; " +
      "install them with: apt-get install -y python3-grpcio python3-protobuf protobuf-compiler"
    );
  }
}

const missing = missingTools();

if (missing !== undefined) {
  describe("the Python gRPC client example", () => {
    it.skip(missing, () => undefined);
  });
}

describe.skipIf(missing !== undefined)("the Python gRPC client example", () => {
  let server: TestServer;
  let key: string;
  let nowKey: string;
  let work: string;
  let gen: string;

  /** Runs the example; resolves with its exit code and output (a failing exit is a result, not an error). */
  async function client(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const { stdout, stderr } = await run(PYTHON, [CLIENT, "--target", `127.0.0.1:${server.port}`, ...args], {
        env: { ...process.env, PYTHONPATH: gen, TOPWAGERS_KEY: key },
        timeout: 20_000,
      });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failed = error as { code?: number; stdout?: string; stderr?: string };
      if (typeof failed.code !== "number") throw error;
      return { code: failed.code, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
    }
  }

  const jsonLines = (stdout: string) =>
    stdout
      .trim()
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line));

  beforeAll(async () => {
    server = await startTestServer("python_client", { DEFAULT_AVATAR_URL: "https://cdn.example.test/default.png" });
    const db = server.database.db;
    key = (await createKey(db, "aff-py")).secret;
    nowKey = (await createKey(db, "aff-py-now")).secret;
    await addBoard(db, "aff-py", [
      [
        "py-1",
        "éclair",
        "https://img.example.test/e.png",
        ["999999999999.99999999", NOV_16],
        ["0.00000001", DEC_1 - 1],
      ],
      // zed's December wager is not in the half-month.
      ["py-2", "zed", "", ["12.5", NOV_16 + 60], ["100", DEC_1]],
    ]);
    await addBoard(db, "aff-py-now", [["py-3", "now", "https://img.example.test/n.png"]]);
    // Message classes, generated as docs/clients.md says: a buf image, then protoc's Python output.
    work = mkdtempSync(join(tmpdir(), "topwagers-python-"));
    gen = join(work, "gen");
    mkdirSync(gen);
    await run(join(ROOT, "node_modules", ".bin", "buf"), ["build", "-o", join(work, "image.binpb")], { cwd: ROOT });
    await run("protoc", [
      `--descriptor_set_in=${join(work, "image.binpb")}`,
      `--python_out=${gen}`,
      "topwagers/v1/top_wagers.proto",
    ]);
  }, 60_000);

  afterAll(async () => {
    await server?.close();
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  it("prints the ranked half-month with exact decimal totals, user ids and ranks", async () => {
    const result = await client(["--start", String(NOV_16), "--end", String(DEC_1 - 1), "--json"]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(jsonLines(result.stdout)).toEqual([
      {
        rank: 1,
        username: "éclair",
        avatar: "https://img.example.test/e.png",
        totalWageredDecimal: "1000000000000",
        userId: "py-1",
      },
      {
        rank: 2,
        username: "zed",
        avatar: "https://cdn.example.test/default.png",
        totalWageredDecimal: "12.5",
        userId: "py-2",
      },
    ]);
  });

  it("asks for the current half-month by default", async () => {
    // The example's own calendar arithmetic, checked with wagers at the first second of this
    // half-month and the last second of the one before (another affiliate, so the others' data stay out).
    const now = new Date();
    const start = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() <= 15 ? 1 : 16) / 1000;
    await addWagers(server.database.db, [wager("py-3", "7", start), wager("py-3", "1000", start - 1)]);
    const result = await client(["--key", nowKey, "--json"]);
    expect(result.code).toBe(0);
    expect(jsonLines(result.stdout)).toEqual([
      { rank: 1, username: "now", avatar: "https://img.example.test/n.png", totalWageredDecimal: "7", userId: "py-3" },
    ]);
    const table = await client(["--key", nowKey]);
    expect(table.stdout).toBe(`  1  now${" ".repeat(21)} ${"7".padStart(22)}\n`);
  });

  it("watches with --watch: prints the board, again after a wager, and stops on Ctrl-C", async () => {
    const db = server.database.db;
    const watchKey = (await createKey(db, "aff-py-watch")).secret;
    await addUsers(db, [{ id: "py-w", affiliateId: "aff-py-watch", username: "watched", avatar: "" }]);
    await addWagers(db, [wager("py-w", "0.5", NOV_16 + 5)]);
    const child = spawn(
      PYTHON,
      [
        CLIENT,
        "--target",
        `127.0.0.1:${server.port}`,
        "--start",
        String(NOV_16),
        "--end",
        String(DEC_1 - 1),
        "--watch",
        "--json",
      ],
      { env: { ...process.env, PYTHONPATH: gen, TOPWAGERS_KEY: watchKey }, stdio: ["ignore", "pipe", "pipe"] },
    );
    const output = collectOutput(child);
    const code = await watchOneChange(child, output, { pattern: /"userId"/g, checks: 400 }, () =>
      addWagers(db, [wager("py-w", "0.25", NOV_16 + 6)]),
    );
    expect(output.stderr).toBe("");
    expect(code).toBe(0);
    const lines = jsonLines(output.stdout);
    expect(lines.length).toBe(4);
    expect(lines[0].board).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(lines[2].board).not.toBe(lines[0].board);
    const entry = (total: string) => ({
      rank: 1,
      username: "watched",
      avatar: "https://cdn.example.test/default.png",
      totalWageredDecimal: total,
      userId: "py-w",
    });
    expect([lines[1], lines[3]]).toEqual([entry("0.5"), entry("0.75")]);
  });

  it("reports the gRPC status code and message of a refusal, and exits 1", async () => {
    const invalid = await client(["--start", String(NOV_16), "--end", String(DEC_1 - 1), "--num-users", "0"]);
    expect(invalid.code).toBe(1);
    expect(invalid.stdout).toBe("");
    expect(invalid.stderr).toBe("INVALID_ARGUMENT: numUsers must be between 1 and 100\n");

    const unknownKey = await client(["--key", `tw_${"A".repeat(32)}`]);
    expect(unknownKey.code).toBe(1);
    expect(unknownKey.stderr).toBe(
      "UNAUTHENTICATED: missing or invalid API key (send Authorization Bearer with your key)\n",
    );
  });
});
