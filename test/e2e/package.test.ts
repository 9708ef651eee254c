/**
 * The installable package (issue 20, item 4): `npm pack` in a clean clone builds dist/ (prepack) and packs
 * the built code, the protos and the docs, nothing of the tests, benches or TypeScript sources; the tarball
 * installed into an empty folder gives a working `npx topwagers`, whose server finds everything it reads at
 * run time (migrations, the OpenAPI document, Swagger UI's files).
 *
 * The clone is `git clone` of this checkout's HEAD (commit a change before running this file). It borrows
 * this checkout's node_modules for the build tools (a clean clone has no dist/: the build is prepack's); the
 * install fetches the dependencies as any user's would (npm's cache first, then the registry).
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { startServerProcess } from "../support/processes.js";
import { VERSION_LINE } from "../support/release.js";

const run = promisify(execFile);
const ROOT = process.cwd();
const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { name: string; version: string };
/** npm and npx with the project's Node first on PATH, as `npm run` arranges. */
const env = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ""}` };

let work: string;
let packed: { filename: string; files: { path: string }[] };
let installed: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "topwagers-package-"));
  const clone = join(work, "clone");
  await run("git", ["clone", "--quiet", "--depth", "1", `file://${ROOT}`, clone]);
  symlinkSync(join(ROOT, "node_modules"), join(clone, "node_modules"));
  expect(existsSync(join(clone, "dist"))).toBe(false);
  const { stdout } = await run("npm", ["pack", "--json", "--loglevel=error"], {
    cwd: clone,
    env,
    maxBuffer: 16 * 1024 * 1024,
  });
  // npm prints prepack's own output before the JSON document.
  packed = (JSON.parse(stdout.slice(stdout.indexOf("[\n"))) as (typeof packed)[])[0] as typeof packed;
  installed = join(work, "empty");
  mkdirSync(installed);
  await run(
    "npm",
    ["install", join(clone, packed.filename), "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"],
    { cwd: installed, env, maxBuffer: 16 * 1024 * 1024 },
  );
}, 240_000);

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe("npm pack", () => {
  it("names the tarball after the package and its version", () => {
    expect(packed.filename).toBe(`${pkg.name}-${pkg.version}.tgz`);
  });

  it("holds the built code, the protos and the docs", () => {
    const paths = new Set(packed.files.map((f) => f.path));
    for (const path of [
      "package.json",
      "README.md",
      "dist/src/cli/main.js",
      "dist/src/cli/program.js",
      "dist/src/main.js",
      "dist/src/server.js",
      "dist/src/schema/migration-runner.js",
      "dist/gen/topwagers/v1/top_wagers_pb.js",
      "proto/topwagers/v1/top_wagers.proto",
      "proto/topwagers/v1/wager_ingest.proto",
      "proto/topwagers/v1/api_keys.proto",
      "proto-std/google/rpc/error_details.proto",
      "docs/openapi.yaml",
      "docs/api.md",
      "docs/operations.md",
    ]) {
      expect(paths.has(path), path).toBe(true);
    }
  });

  it("holds no tests, benches, TypeScript sources, source maps or build files", () => {
    const unwanted = packed.files
      .map((f) => f.path)
      .filter(
        (path) =>
          /^(test|bench|src|gen|examples|scripts|containers|deploy|\.ci)\//.test(path) ||
          /^dist\/(test|bench|examples)\//.test(path) ||
          /\.(ts|map)$/.test(path) ||
          /(^|\/)(tsconfig[^/]*\.json|vitest\.config\.[jt]s|biome\.json|buf(\.gen)?\.yaml|Containerfile|\.tsbuildinfo[^/]*)$/.test(
            path,
          ),
      );
    expect(unwanted).toEqual([]);
  });
});

describe("installed from the tarball into an empty folder", () => {
  const npx = (args: string[]) => run("npx", ["--no-install", "topwagers", ...args], { cwd: installed, env });

  it("npx topwagers --help prints the usage", async () => {
    const { stdout, stderr } = await npx(["--help"]);
    expect(stdout.startsWith("usage: topwagers <command> [options]\n\n  topwagers serve\n")).toBe(true);
    // Nothing from the program; npm itself may warn about the caller's own npm settings.
    expect(stderr.split("\n").filter((line) => line !== "" && !line.startsWith("npm warn"))).toEqual([]);
  }, 30_000);

  it("npx topwagers --version prints the package's version and the commit it was built from", async () => {
    expect((await npx(["--version"])).stdout).toBe(VERSION_LINE);
  }, 30_000);

  it("topwagers serve migrates a fresh database and serves /readyz, /docs and /openapi.json", async () => {
    const database: TestDatabase = await createTestDatabase("package_serve", []);
    const server = await startServerProcess(
      { DATABASE_URL: database.url },
      { entry: join(installed, "node_modules", "topwagers", "dist", "src", "cli", "main.js"), args: ["serve"] },
    );
    try {
      const ready = await fetch(`${server.baseUrl}/readyz`);
      expect(ready.status).toBe(200);
      expect(((await ready.json()) as { status: string }).status).toBe("ready");
      expect((await fetch(`${server.baseUrl}/docs`)).status).toBe(200);
      expect((await fetch(`${server.baseUrl}/docs/swagger-ui-bundle.js`)).status).toBe(200);
      const openapi = await fetch(`${server.baseUrl}/openapi.json`);
      expect(openapi.status).toBe(200);
      expect(((await openapi.json()) as { openapi: string }).openapi).toMatch(/^3\./);
    } finally {
      await server.stop();
      await database.drop();
    }
    expect(server.child.exitCode).toBe(0);
  }, 60_000);
});
