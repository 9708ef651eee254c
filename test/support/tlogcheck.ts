/**
 * The Go checker of a results log (test/support/go/tlogcheck.go, over golang.org/x/mod/sumdb/note and tlog from
 * Debian's /usr/share/gocode, built offline in GOPATH mode), and a copy of a log's resources in a directory laid out
 * as its URLs (checkpoint, tile/…), which the checker reads as it reads the server, and which a test can alter.
 */
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { tilePath } from "../../src/results-log/core/tiles.js";

const SOURCE = join(dirname(fileURLToPath(import.meta.url)), "go", "tlogcheck.go");

export interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a program and gives its exit status and output (never throws for a non-zero status). */
export function run(file: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { env, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Builds the checker in `dir` (its build cache there too); the binary's path. */
export async function buildTlogcheck(dir: string): Promise<string> {
  mkdirSync(dir, { recursive: true });
  copyFileSync(SOURCE, join(dir, "tlogcheck.go"));
  const binary = join(dir, "tlogcheck");
  const env = {
    PATH: process.env.PATH,
    HOME: dir,
    GO111MODULE: "off",
    GOPATH: "/usr/share/gocode",
    GOCACHE: join(dir, "cache"),
    GOFLAGS: "",
  };
  const built = await run("go", ["build", "-o", binary, join(dir, "tlogcheck.go")], env);
  if (built.code !== 0) throw new Error(`go build failed: ${built.stderr}`);
  return binary;
}

/** Every resource path of a log of `size` entries: the checkpoint, every tile and every entry bundle. */
export function logPaths(size: number): string[] {
  const paths = ["checkpoint"];
  for (let level = 0; Math.floor(size / 256 ** level) > 0; level++) {
    const count = Math.floor(size / 256 ** level);
    const levels: (number | "entries")[] = level === 0 ? [0, "entries"] : [level];
    for (const name of levels) {
      for (let index = 0; index < Math.floor(count / 256); index++)
        paths.push(tilePath({ level: name, index, width: 256 }));
      if (count % 256 > 0) paths.push(tilePath({ level: name, index: Math.floor(count / 256), width: count % 256 }));
    }
  }
  return paths;
}

/** Writes the log's resources (`get` gives each path's bytes) into `dir` as the URLs lay them out. */
export async function mirrorLog(
  dir: string,
  size: number,
  get: (path: string) => Promise<Uint8Array | string>,
): Promise<void> {
  for (const path of logPaths(size)) {
    const file = join(dir, path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, await get(path));
  }
}
