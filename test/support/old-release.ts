/**
 * An earlier release of this repository, built to run here as it shipped (issue 47: the real old build, not this
 * build pretending): its sources from git (`git archive <commit>`: src/, gen/, package.json, its lock file,
 * tsconfig.json, docs/openapi.yaml), its production dependencies exactly as its lock file names them (`npm ci
 * --omit=dev --ignore-scripts`, from npm's cache when it has them), and its TypeScript turned into JavaScript file by
 * file with this repository's TypeScript (each release's tsconfig has isolatedModules and verbatimModuleSyntax, so a
 * file transpiles alone exactly as tsc emits it). Built once per commit and machine, under
 * os.tmpdir()/topwagers-old-releases/<commit>; `built` says what the build cost when this call made it.
 */
import { execFile, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import ts from "typescript";

const run = promisify(execFile);

/** The releases as they shipped: the commits whose package.json first said each version (CHANGELOG.md). */
export const OLD_RELEASES = {
  "0.1.0": "db9b50e3541a93d9507607ce2fad3fac7d0afc99",
  "0.2.0": "b23d45e",
  "0.3.0": "ff1c643",
  "0.4.0": "c718237",
} as const;

export interface OldRelease {
  readonly version: string;
  readonly dir: string;
  /** Its server: `node <entry>` is `topwagers serve`. */
  readonly entry: string;
  /** What building it took here (seconds), or undefined when it was built before (the cache). */
  readonly built: { readonly install: number; readonly transpile: number } | undefined;
}

export async function oldRelease(version: keyof typeof OLD_RELEASES): Promise<OldRelease> {
  const commit = (
    await run("git", ["rev-parse", `${OLD_RELEASES[version]}^{commit}`]).catch(() => {
      throw new Error(
        `commit ${OLD_RELEASES[version]} (${version}) is not here: this test needs the history (git fetch --unshallow)`,
      );
    })
  ).stdout.trim();
  const dir = path.join(tmpdir(), "topwagers-old-releases", commit);
  const entry = path.join(dir, "dist", "src", "main.js");
  const done = path.join(dir, ".built");
  if (existsSync(done)) return { version, dir, entry, built: undefined };
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  await extract(commit, dir);
  let started = Date.now();
  await run("npm", ["ci", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline"], {
    cwd: dir,
    maxBuffer: 16 * 1024 * 1024,
  });
  const install = (Date.now() - started) / 1000;
  started = Date.now();
  for (const folder of ["src", "gen"]) transpileTree(dir, folder);
  const transpile = (Date.now() - started) / 1000;
  const shipped = (JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { version: string }).version;
  if (shipped !== version) throw new Error(`${commit} says it is ${shipped}, not ${version}`);
  writeFileSync(done, JSON.stringify({ install, transpile }));
  return { version, dir, entry, built: { install, transpile } };
}

/** `git archive <commit> <what it needs to run>` unpacked into `dir`. */
function extract(commit: string, dir: string): Promise<void> {
  const parts = ["src", "gen", "package.json", "package-lock.json", "tsconfig.json", "docs/openapi.yaml"];
  return new Promise((resolve, reject) => {
    const archive = spawn("git", ["archive", "--format=tar", commit, ...parts], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const tar = spawn("tar", ["-x", "-C", dir], { stdio: ["pipe", "inherit", "inherit"] });
    archive.stdout.pipe(tar.stdin);
    let left = 2;
    const ended = (what: string) => (code: number | null) => {
      if (code !== 0) reject(new Error(`${what} exited ${code}`));
      else if (--left === 0) resolve();
    };
    archive.on("close", ended("git archive"));
    tar.on("close", ended("tar"));
  });
}

/** Every .ts file under `dir/folder` as dist/<folder>/….js, an ES module for Node (the releases are "type": "module"). */
function transpileTree(dir: string, folder: string): void {
  for (const name of readdirSync(path.join(dir, folder))) {
    const relative = path.join(folder, name);
    const source = path.join(dir, relative);
    if (statSync(source).isDirectory()) {
      transpileTree(dir, relative);
    } else if (name.endsWith(".ts") && !name.endsWith(".d.ts")) {
      const { outputText } = ts.transpileModule(readFileSync(source, "utf8"), {
        compilerOptions: { target: ts.ScriptTarget.ES2023, module: ts.ModuleKind.ESNext, verbatimModuleSyntax: true },
        fileName: relative,
      });
      const target = path.join(dir, "dist", relative.replace(/\.ts$/, ".js"));
      mkdirSync(path.dirname(target), { recursive: true });
      writeFileSync(target, outputText);
    }
  }
}
