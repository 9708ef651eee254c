/**
 * The fenced code blocks of a docs page's section, and running them, for the tests that run a page's code as
 * written (docs/clients.md's Go and Java clients).
 */
import { execFile } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { expect } from "vitest";

/** The text under the heading `heading` (any level, exact title) up to the next heading of that level or above. */
export function docSection(markdown: string, heading: string): string {
  const lines = markdown.split("\n");
  const start = lines.findIndex((line) => /^#{2,4} /.test(line) && line.replace(/^#+ /, "") === heading);
  if (start < 0) throw new Error(`no heading "${heading}"`);
  const level = (lines[start] as string).indexOf(" ");
  let end = start + 1;
  let fenced = false;
  for (; end < lines.length; end++) {
    const line = lines[end] as string;
    if (line.startsWith("```")) fenced = !fenced;
    if (!fenced && /^#{2,4} /.test(line) && line.indexOf(" ") <= level) break;
  }
  return lines.slice(start + 1, end).join("\n");
}

/** The fenced blocks of `language` in `text`, in order, without their fences; throws when there is none. */
export function fencedBlocks(text: string, language: string): string[] {
  const found = [...text.matchAll(/^```([a-z]*)\n([\s\S]*?)^```$/gm)]
    .filter((m) => m[1] === language)
    .map((m) => m[2] as string);
  if (found.length === 0) throw new Error(`no ${language} block`);
  return found;
}

/** A docs script's run: its exit code, and stdout and stderr as one stream in the order written. */
export interface ScriptRun {
  readonly code: number;
  readonly output: string;
}

/** Runs `script` in bash with stderr joined to stdout (a failing exit is a result, not an error). */
export function bashScript(script: string, cwd: string, env: NodeJS.ProcessEnv): Promise<ScriptRun> {
  return new Promise((resolve, reject) => {
    execFile("bash", ["-c", `{\n${script}\n} 2>&1`], { cwd, env, timeout: 300_000 }, (error, stdout) => {
      if (error !== null && typeof error.code !== "number") return reject(error);
      resolve({ code: error === null ? 0 : (error.code as number), output: stdout });
    });
  });
}

/**
 * A client's output with every countdown second of the rate limit (`t=N`; "Retry in N s" and "retry in N s"
 * when N is above 1: a RetryInfo of 1 s is a fixed delay, not a countdown) replaced by `<s>`, after checking
 * each lies in the 60-second window; so a page's example seconds compare equal to a run's.
 */
export function withoutCountdown(output: string): string {
  return output.replace(/\b(t=|[Rr]etry in )(\d+)/g, (whole, what: string, seconds: string) => {
    if (what !== "t=" && seconds === "1") return whole;
    expect(Number(seconds)).toBeGreaterThanOrEqual(1);
    expect(Number(seconds)).toBeLessThanOrEqual(60);
    return `${what}<s>`;
  });
}

/** Writes each block to the file its first line names (`// main.go: …`, `// a/b.proto: …`) under `dir`. */
export function writeNamedBlocks(dir: string, blocks: readonly string[]): string[] {
  return blocks.map((code) => {
    const name = /^\/\/ ([\w./-]+\.[a-z]+): /.exec(code)?.[1];
    if (name === undefined) throw new Error(`a block without its file name: ${code.slice(0, 80)}`);
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), code);
    return name;
  });
}
