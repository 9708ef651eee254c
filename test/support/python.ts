/** Debian's Python for the docs' Python examples, and whether it has what an example imports. */
import { execFileSync } from "node:child_process";

/** Debian's interpreter: its dist-packages hold the python3-* packages the examples import. */
export const PYTHON = "/usr/bin/python3";

/**
 * Undefined when Debian's Python imports `modules` (as written after `import`, e.g. "jwt, cryptography"); otherwise
 * `skipped`, the skipped test's name saying what to install.
 */
export function withoutPythonModules(modules: string, skipped: string): string | undefined {
  try {
    execFileSync(PYTHON, ["-c", `import ${modules}`], { stdio: "ignore" });
    return undefined;
  } catch {
    return skipped;
  }
}
