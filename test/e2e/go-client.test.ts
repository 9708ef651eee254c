/**
 * docs/clients.md's Go client, built and run as the page says (issue 52): the Go files are the page's code
 * blocks as written, the Go code under them is generated from proto/ at test time by the page's Debian block
 * (protoc with Debian's protoc-gen-go and protoc-gen-go-grpc, then `go build` in GOPATH mode over
 * /usr/share/gocode: no network), run in a temporary HOME that holds the build cache too. The page's commands
 * then run against the built server (dist/src/main.js) on a throwaway database, and each output must be the
 * page's, character for character, except the seconds that count down (`t=`, "retry in"), which must lie in
 * the window. Skipped, saying what to install, without Debian's Go packages.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closed, collectOutput, untilPrinted } from "../support/cli.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import {
  bashScript as bash,
  docSection,
  fencedBlocks,
  withoutCountdown,
  writeNamedBlocks,
} from "../support/doc-blocks.js";
import { createKey } from "../support/fixtures.js";
import { TEST_INGEST_TOKEN } from "../support/ingest.js";
import { internalPortOf, type ServerProcess, startServerProcess } from "../support/processes.js";
import { restTop } from "../support/rest.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CLIENTS_MD = readFileSync(join(ROOT, "docs", "clients.md"), "utf8");
const GOCODE = "/usr/share/gocode/src";
/** The Debian packages the page's apt-get line installs (and .ci/run). */
const PACKAGES = [
  "golang-go",
  "protobuf-compiler",
  "protoc-gen-go",
  "protoc-gen-go-grpc",
  "golang-google-grpc-dev",
  "golang-google-genproto-dev",
  "golang-google-protobuf-dev",
];
/** The board of the page's commands: the second half of November 2026, 10 users. */
const BOARD = ["1794787200", "1796083199", "10"];

function missingTools(): string | undefined {
  const sources = [
    "google.golang.org/grpc",
    "google.golang.org/genproto/googleapis/rpc/errdetails",
    "google.golang.org/protobuf/proto",
  ];
  try {
    for (const tool of ["go", "protoc", "protoc-gen-go", "protoc-gen-go-grpc"]) {
      execFileSync("bash", ["-c", `command -v ${tool}`], { stdio: "ignore" });
    }
    if (sources.every((source) => existsSync(join(GOCODE, source)))) return undefined;
  } catch {}
  return `SKIPPED: the Go client of docs/clients.md needs Debian's Go packages; install them with: apt-get install -y ${PACKAGES.join(" ")}`;
}

const missing = missingTools();
const goSection = docSection(CLIENTS_MD, "Go with grpc-go");
const runIt = docSection(goSection, "Run it");

if (missing !== undefined) {
  describe("docs/clients.md's Go client", () => {
    it.skip(missing, () => undefined);
  });
}

describe.skipIf(missing !== undefined)("docs/clients.md's Go client", () => {
  let database: TestDatabase;
  let server: ServerProcess;
  let home = "";
  let client = "";
  let env: NodeJS.ProcessEnv = {};
  let buildSeconds = 0;
  const texts = fencedBlocks(runIt, "text");
  const scripts = fencedBlocks(runIt, "sh");

  /** Runs the built client with `args` (and env overrides) apart from the page's scripts. */
  function clientRun(args: string[], overrides: Record<string, string> = {}) {
    const child = spawn(join(client, "topwagers-client"), args, {
      cwd: client,
      env: { ...env, ...overrides },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const output = collectOutput(child);
    return { child, output, done: closed(child, output) };
  }

  beforeAll(async () => {
    database = await createTestDatabase("go_client");
    server = await startServerProcess({ DATABASE_URL: database.url, INGEST_TOKEN: TEST_INGEST_TOKEN });
    const internalPort = await internalPortOf(server);
    home = mkdtempSync(join(tmpdir(), "topwagers-go-"));
    client = join(home, "go", "src", "casino.example", "topwagers-client");
    mkdirSync(client, { recursive: true });
    // The page's four files, named by their first line ("// main.go: …").
    expect(writeNamedBlocks(client, fencedBlocks(goSection, "go")).sort()).toEqual([
      "codec_debian.go",
      "errors.go",
      "main.go",
      "watch.go",
    ]);
    // Only HOME and the checkout come from here: the build cache goes to $HOME/.cache, removed after the test.
    const inherited = { ...process.env };
    for (const name of [
      "GOCACHE",
      "GOENV",
      "GOPATH",
      "GOFLAGS",
      "GO111MODULE",
      "GOPROXY",
      "XDG_CACHE_HOME",
      "XDG_CONFIG_HOME",
    ]) {
      delete inherited[name];
    }
    const build = fencedBlocks(docSection(goSection, "Generate"), "sh")[2] as string;
    const started = process.hrtime.bigint();
    const built = await bash(build, home, { ...inherited, HOME: home, TOPWAGERS: ROOT });
    buildSeconds = Number(process.hrtime.bigint() - started) / 1e9;
    console.log(`generate and go build (cold cache): ${buildSeconds.toFixed(1)} s`);
    if (built.code !== 0) throw new Error(`the page's Debian build failed:\n${built.output}`);
    env = {
      PATH: process.env.PATH,
      TOPWAGERS_TARGET: `127.0.0.1:${server.port}`,
      TOPWAGERS_INTERNAL_TARGET: `127.0.0.1:${internalPort}`,
      TOPWAGERS_KEY: (await createKey(database.db, "aff-1")).secret,
      TOPWAGERS_INGEST_TOKEN: TEST_INGEST_TOKEN,
    };
  }, 300_000);

  afterAll(async () => {
    await server?.stop();
    await database?.drop();
    if (home !== "") rmSync(home, { recursive: true, force: true });
  });

  it("builds from the page's blocks: gofmt-clean, the generated package in gen/, the cache under HOME", () => {
    expect(execFileSync("gofmt", ["-l", "."], { cwd: client, encoding: "utf8" })).toBe("");
    expect(readdirSync(join(client, "gen", "topwagers", "v1")).sort()).toEqual(
      ["api_keys", "races", "signing", "top_wagers", "wager_ingest", "webhooks"]
        .flatMap((f) => [`${f}.pb.go`, `${f}_grpc.pb.go`])
        .sort(),
    );
    expect(existsSync(join(home, ".cache", "go-build"))).toBe(true);
    // The page's apt-get line and .ci/run install the same packages.
    const aptGet = fencedBlocks(docSection(goSection, "Generate"), "sh")[1] as string;
    expect(aptGet.trim()).toBe(`apt-get install -y ${PACKAGES.join(" ")}`);
    const ci = readFileSync(join(ROOT, ".ci", "run"), "utf8");
    for (const name of PACKAGES) expect(ci).toContain(name);
  });

  it("generates the same Go code with the page's buf template, and nothing from proto-std", async () => {
    const out = join(home, "buf");
    mkdirSync(out);
    const buf = join(ROOT, "node_modules", ".bin", "buf");
    const template = join(ROOT, "examples", "go", "buf.gen.go.yaml");
    const made = await bash(`"${buf}" generate "${join(ROOT, "proto")}" --template "${template}"`, out, process.env);
    expect(made).toEqual({ code: 0, output: "" });
    const files = readdirSync(join(out, "gen"), { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".go"));
    expect(files.sort()).toEqual(
      readdirSync(join(client, "gen", "topwagers", "v1"))
        .map((f) => `topwagers/v1/${f}`)
        .sort(),
    );
    // protoc names its version in each .pb.go header; buf's compiler has none.
    const body = (file: string) => readFileSync(file, "utf8").replace(/^\/\/ \tprotoc +.*$/m, "");
    for (const file of files) expect(body(join(out, "gen", file))).toBe(body(join(client, "gen", file)));
  });

  it("records users and wagers and reads the board with exact decimals and the rate limit from the headers", async () => {
    expect(scripts[0]).toContain("export TOPWAGERS_TARGET=");
    const run = await bash(scripts[1] as string, client, env);
    expect(run.code).toBe(0);
    expect(withoutCountdown(run.output)).toBe(withoutCountdown(texts[0] as string));
    expect(run.output).toContain("  1  whale            123456789.12345679\n  2  minnow           0.3\n");
  });

  it("watches the board and sees it change after a wager", async () => {
    const watch = spawn("bash", ["-c", scripts[2] as string], { cwd: client, env, stdio: ["ignore", "pipe", "pipe"] });
    const output = collectOutput(watch);
    const done = closed(watch, output);
    await untilPrinted(output, /^ {2}\d /gm, 2, 400);
    expect(output.stdout).toBe((texts[1] as string).split("board 2\n")[0]);
    const wager = await bash(scripts[3] as string, client, env);
    expect(wager).toEqual({ code: 0, output: "recorded 1 wagers, 0 duplicates\n" });
    const result = await done;
    expect([result.code, result.stderr, result.stdout]).toEqual([0, "", texts[1]]);
  });

  it("prints each refusal's code, ErrorInfo reason, BadRequest fields and rate limit as the page shows", async () => {
    const run = await bash(scripts[4] as string, client, env);
    expect(run.code).toBe(1);
    expect(withoutCountdown(run.output)).toBe(withoutCountdown(texts[2] as string));
  });

  it("a key without boards:read: PERMISSION_DENIED, MISSING_SCOPE with its scope, the rate limit in the headers", async () => {
    const racesOnly = (await createKey(database.db, "aff-1", null, {}, ["races:read"])).secret;
    const { done } = clientRun(["board", ...BOARD], { TOPWAGERS_KEY: racesOnly });
    const result = await done;
    expect([result.code, result.stdout]).toEqual([1, ""]);
    expect(withoutCountdown(result.stderr)).toBe(withoutCountdown(texts[3] as string));
  });

  it("a used-up key: RESOURCE_EXHAUSTED, RATE_LIMITED, RetryInfo, the rate limit in the trailers", async () => {
    const spent = (await createKey(database.db, "aff-1")).secret;
    for (let i = 0; i < 60; i++) expect((await restTop(server.baseUrl, spent)).status).toBe(200);
    const { done } = clientRun(["board", ...BOARD], { TOPWAGERS_KEY: spent });
    const result = await done;
    expect([result.code, result.stdout]).toEqual([1, ""]);
    // One countdown, said three times: the message, RetryInfo and the trailer's t.
    expect(new Set([...result.stderr.matchAll(/(?:t=|etry in )(\d+)/g)].map((m) => m[1])).size).toBe(1);
    expect(withoutCountdown(result.stderr)).toBe(withoutCountdown(texts[4] as string));
  });

  it("a watch when the server stops: UNAVAILABLE, SHUTTING_DOWN, RetryInfo 1 s (run last: it stops the server)", async () => {
    const fresh = (await createKey(database.db, "aff-1")).secret;
    const { child, output, done } = clientRun(["watch", ...BOARD, "2"], { TOPWAGERS_KEY: fresh });
    await untilPrinted(output, /^ {2}\d /gm, 2, 400);
    expect(output.stdout).toBe(`board 1\n${(texts[5] as string).split("\n").slice(1, 3).join("\n")}\n`);
    await server.stop("SIGTERM");
    const result = await done;
    expect([result.code, child.exitCode]).toEqual([1, 1]);
    expect(withoutCountdown(result.stdout + result.stderr)).toBe(withoutCountdown(texts[5] as string));
  });
});
