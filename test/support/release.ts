/**
 * The release a build says it is, computed here without the code under test: the version from package.json and
 * the commit from git (12 hex digits, "-dirty" when tracked files differ from it), as `npm run build` records it.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

function git(...args: string[]): string {
  return execFileSync("git", args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
}

function commitOfCheckout(): string {
  const head = git("rev-parse", "--short=12", "HEAD");
  return git("status", "--porcelain", "--untracked-files=no") === "" ? head : `${head}-dirty`;
}

/** The package's version and the checkout's commit: what `--version`, /readyz and build_info show. */
export const RELEASE: { readonly version: string; readonly commit: string } = {
  version: (JSON.parse(readFileSync("package.json", "utf8")) as { version: string }).version,
  commit: process.env.TOPWAGERS_COMMIT || commitOfCheckout(),
};

/** What `topwagers --version` prints, with its newline. */
export const VERSION_LINE = `${RELEASE.version} (commit ${RELEASE.commit})\n`;
