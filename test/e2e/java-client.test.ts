/**
 * docs/clients.md's Java client, built and run as the page says (issue 52): the Java file and Debian's
 * ErrorInfo proto are the page's blocks as written, and the page's Debian block generates the classes from
 * proto/ at test time (protoc with Debian's grpc_java_plugin), compiles them with javac against Debian's jars
 * (no network) and writes the launcher, in a temporary directory. The page's commands then run against the built
 * server (dist/src/main.js) on a throwaway database, and each output must be the page's, character for
 * character, except the seconds that count down. Skipped, saying what to install, without Debian's Java packages.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
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
import { addBoard, addWagers, createKey } from "../support/fixtures.js";
import { type ServerProcess, startServerProcess } from "../support/processes.js";
import { restTop } from "../support/rest.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CLIENTS_MD = readFileSync(join(ROOT, "docs", "clients.md"), "utf8");
/** The Debian packages the page's apt-get line installs (and .ci/run). */
const PACKAGES = [
  "default-jdk-headless",
  "protobuf-compiler",
  "protobuf-compiler-grpc-java-plugin",
  "libprotobuf-java",
  "libgrpc-java",
  "libnetty-java",
  "libguava-java",
  "libperfmark-java",
  "libgoogle-gson-java",
  "libgoogle-common-protos-java",
  "libgeronimo-annotation-1.3-spec-java",
];
const JARS = ["grpc-netty", "netty-codec-http2", "proto-google-common-protos", "geronimo-annotation-1.3-spec", "gson"];
const BOARD = ["1794787200", "1796083199", "10"];
const NOV_16 = 1_794_787_200;

function missingTools(): string | undefined {
  try {
    for (const tool of ["java", "javac", "protoc"])
      execFileSync("bash", ["-c", `command -v ${tool}`], { stdio: "ignore" });
    const files = ["/usr/bin/grpc_java_plugin", ...JARS.map((jar) => `/usr/share/java/${jar}.jar`)];
    if (files.every((file) => existsSync(file))) return undefined;
  } catch {}
  return `SKIPPED: the Java client of docs/clients.md needs Debian's Java gRPC packages; install them with: apt-get install -y ${PACKAGES.join(" ")}`;
}

const missing = missingTools();
const javaSection = docSection(CLIENTS_MD, "Java with grpc-java");
const runIt = docSection(javaSection, "Run it");

if (missing !== undefined) {
  describe("docs/clients.md's Java client", () => {
    it.skip(missing, () => undefined);
  });
}

describe.skipIf(missing !== undefined)("docs/clients.md's Java client", () => {
  let database: TestDatabase;
  let server: ServerProcess;
  let work = "";
  let env: NodeJS.ProcessEnv = {};
  const texts = fencedBlocks(runIt, "text");
  const scripts = fencedBlocks(runIt, "sh");

  beforeAll(async () => {
    database = await createTestDatabase("java_client");
    server = await startServerProcess({ DATABASE_URL: database.url });
    // The Go section's users and wagers: 123456789.1 + 0.02345679, and 0.1 + 0.2.
    await addBoard(database.db, "aff-1", [
      ["u-whale", "whale", "", ["123456789.1", NOV_16], ["0.02345679", NOV_16 + 60]],
      ["u-minnow", "minnow", "", ["0.1", NOV_16 + 100], ["0.2", NOV_16 + 200]],
    ]);
    work = mkdtempSync(join(tmpdir(), "topwagers-java-"));
    const files = [...fencedBlocks(javaSection, "java"), ...fencedBlocks(javaSection, "proto")];
    expect(writeNamedBlocks(work, files)).toEqual(["TopwagersClient.java", "google-rpc/google/rpc/error_info.proto"]);
    const generate = docSection(javaSection, "Generate and build");
    const started = process.hrtime.bigint();
    const built = await bash(fencedBlocks(generate, "sh")[1] as string, work, { ...process.env, TOPWAGERS: ROOT });
    console.log(`generate and javac: ${(Number(process.hrtime.bigint() - started) / 1e9).toFixed(1)} s`);
    if (built.code !== 0) throw new Error(`the page's Debian build failed:\n${built.output}`);
    env = {
      PATH: process.env.PATH,
      TOPWAGERS_TARGET: `127.0.0.1:${server.port}`,
      TOPWAGERS_KEY: (await createKey(database.db, "aff-1")).secret,
    };
  }, 300_000);

  afterAll(async () => {
    await server?.stop();
    await database?.drop();
    if (work !== "") rmSync(work, { recursive: true, force: true });
  });

  /** Runs the built client with `args` and a key of its own. */
  function clientRun(args: string[], key: string) {
    const child = spawn(join(work, "topwagers-client"), args, {
      cwd: work,
      env: { ...env, TOPWAGERS_KEY: key },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const output = collectOutput(child);
    return { output, done: closed(child, output) };
  }

  it("installs what .ci/run installs", () => {
    const aptGet = fencedBlocks(docSection(javaSection, "Generate and build"), "sh")[0] as string;
    expect(aptGet.trim()).toBe(`apt-get install -y ${PACKAGES.join(" ")}`);
    const ci = readFileSync(join(ROOT, ".ci", "run"), "utf8");
    for (const name of PACKAGES) expect(ci).toContain(name);
  });

  it("reads the board with exact decimals, then watches it change after a wager", async () => {
    expect(scripts[0]).toContain("export TOPWAGERS_TARGET=");
    const run = spawn("bash", ["-c", `{\n${scripts[1]}\n} 2>&1`], {
      cwd: work,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const output = collectOutput(run);
    const done = closed(run, output);
    // The board's two entries, then the watch's first board.
    await untilPrinted(output, /^ {2}\d /gm, 4, 800);
    expect(output.stdout).toBe((texts[0] as string).split("board 2\n")[0]);
    await addWagers(database.db, [{ id: "w-5", userId: "u-minnow", amount: "0.00000001", placedAt: NOV_16 + 300 }]);
    const result = await done;
    expect(result.code).toBe(0);
    expect(withoutCountdown(result.stdout)).toBe(withoutCountdown(texts[0] as string));
  });

  it("prints each refusal's code, ErrorInfo reason, BadRequest field and rate limit as the page shows", async () => {
    const run = await bash(scripts[2] as string, work, env);
    expect(run.code).toBe(1);
    expect(withoutCountdown(run.output)).toBe(withoutCountdown(texts[1] as string));
  });

  it("a used-up key: RESOURCE_EXHAUSTED, RATE_LIMITED, RetryInfo, the rate limit in the trailers", async () => {
    const spent = (await createKey(database.db, "aff-1")).secret;
    for (let i = 0; i < 60; i++) expect((await restTop(server.baseUrl, spent)).status).toBe(200);
    const result = await clientRun(["board", ...BOARD], spent).done;
    expect([result.code, result.stdout]).toEqual([1, ""]);
    expect(new Set([...result.stderr.matchAll(/(?:t=|etry in )(\d+)/g)].map((m) => m[1])).size).toBe(1);
    expect(withoutCountdown(result.stderr)).toBe(withoutCountdown(texts[2] as string));
  });

  it("a watch when the server stops: UNAVAILABLE, SHUTTING_DOWN, RetryInfo 1 s (run last: it stops the server)", async () => {
    const fresh = (await createKey(database.db, "aff-1")).secret;
    const { output, done } = clientRun(["watch", ...BOARD, "2"], fresh);
    await untilPrinted(output, /^ {2}\d /gm, 2, 800);
    expect(output.stdout).toBe(`board 1\n${(texts[3] as string).split("\n").slice(1, 3).join("\n")}\n`);
    await server.stop("SIGTERM");
    const result = await done;
    expect(result.code).toBe(1);
    expect(withoutCountdown(result.stdout + result.stderr)).toBe(withoutCountdown(texts[3] as string));
  });
});
