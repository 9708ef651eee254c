/**
 * The package's own package.json (version, engines), read once: for `--version`, /readyz, the
 * build_info metric, the trace resource and the Node version check at start. Found by walking up
 * from this module, so it works from dist/src/ (a build, the installed package, the image) and from
 * src/ (tests). The commit comes from dist/src/build-info.json, which `npm run build` writes
 * (scripts/build-info.mjs); without a build it is "unknown".
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import semver from "semver";

export interface PackageInfo {
  readonly version: string;
  /** The commit the build was made from (12 hex digits, "-dirty" when tracked files differed), or "unknown". */
  readonly commit: string;
  /** package.json `engines.node`, e.g. "^22.19.0 || ^24.0.0 || >=26.0.0". */
  readonly nodeRange: string;
}

let cached: PackageInfo | undefined;

export function packageInfo(): PackageInfo {
  if (cached !== undefined) return cached;
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const file = join(dir, "package.json");
    if (existsSync(file)) {
      const json = JSON.parse(readFileSync(file, "utf8")) as {
        name?: unknown;
        version?: unknown;
        engines?: { node?: unknown };
      };
      if (json.name === "topwagers") {
        cached = {
          version: String(json.version),
          commit: buildCommit(dir),
          nodeRange: String(json.engines?.node ?? "*"),
        };
        return cached;
      }
    }
    if (dirname(dir) === dir) throw new Error("the topwagers package.json was not found above the program");
  }
}

/** What `--version` prints: the version and the commit, e.g. "0.2.0 (commit 3f2a9c0d1b4e)". */
export function versionLine(): string {
  const { version, commit } = packageInfo();
  return `${version} (commit ${commit})`;
}

function buildCommit(packageRoot: string): string {
  const file = join(packageRoot, "dist", "src", "build-info.json");
  if (!existsSync(file)) return "unknown";
  const json = JSON.parse(readFileSync(file, "utf8")) as { commit?: unknown };
  return typeof json.commit === "string" && json.commit !== "" ? json.commit : "unknown";
}

/**
 * The warning to log when `nodeVersion` is not one `range` allows (undefined when it is): the
 * server still starts, but on an untested Node.
 */
export function nodeVersionWarning(nodeVersion: string, range: string): string | undefined {
  if (semver.satisfies(nodeVersion, range)) return undefined;
  const relation = semver.ltr(nodeVersion, range) ? "older than" : "not among";
  return `Node ${nodeVersion} is ${relation} the versions this package supports (engines: ${range}); run it on one of those`;
}
