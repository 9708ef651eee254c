#!/usr/bin/env node
// Written by `npm run build` after the compiler: dist/src/build-info.json names the commit this build was made
// from, so `--version`, /readyz, topwagers_build_info and the image's label can tell two builds of one version
// apart. The commit comes from TOPWAGERS_COMMIT when set (a build from an export without .git), else from git
// (with "-dirty" when tracked files differ from it); with neither, a file already there is kept, else "unknown".
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const target = join(root, "dist", "src", "build-info.json");

function git(...args) {
  return execFileSync("git", args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
}

function commitFromGit() {
  try {
    const head = git("rev-parse", "--short=12", "HEAD");
    const dirty = git("status", "--porcelain", "--untracked-files=no") !== "";
    return dirty ? `${head}-dirty` : head;
  } catch {
    return undefined;
  }
}

const commit = process.env.TOPWAGERS_COMMIT || commitFromGit();
if (commit === undefined && existsSync(target)) process.exit(0);
mkdirSync(dirname(target), { recursive: true });
writeFileSync(target, `${JSON.stringify({ commit: commit ?? "unknown" })}\n`);
