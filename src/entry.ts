/**
 * "Is this module the program Node was asked to run?" Comparing
 * `import.meta.url` with `process.argv[1]` as text fails when the program is
 * reached through a symlink (a `current -> releases/…` deploy, an npm `bin`
 * link) or from a folder whose path has spaces or other characters a URL
 * escapes: the program then did nothing and exited 0. Both sides are resolved
 * to real file paths first, which works on every Node that `engines` allows
 * (`import.meta.main` only exists from Node 24.2).
 */
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";

function realPath(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

export function isEntryPoint(moduleUrl: string, argv1: string | undefined = process.argv[1]): boolean {
  if (argv1 === undefined) return false;
  const module = realPath(fileURLToPath(moduleUrl));
  if (module === undefined) return false;
  // Node also runs `dist/src/main` (no extension) as dist/src/main.js.
  const candidates = [argv1, `${argv1}.js`];
  return candidates.some((candidate) => realPath(candidate) === module);
}
