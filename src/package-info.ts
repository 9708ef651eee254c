/**
 * The package's own package.json (version, engines), read once: for `--version`, the build_info
 * metric, the trace resource and the Node version check at start. Found by walking up from this
 * module, so it works from dist/src/ (a build, the installed package, the image) and from src/
 * (tests).
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import semver from "semver";

export interface PackageInfo {
  readonly version: string;
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
        cached = { version: String(json.version), nodeRange: String(json.engines?.node ?? "*") };
        return cached;
      }
    }
    if (dirname(dir) === dir) throw new Error("the topwagers package.json was not found above the program");
  }
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
