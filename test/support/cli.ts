/** The built CLI (`node dist/src/cli/main.js`) as a child process against a test database. */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Readable } from "node:stream";
import { MOVED_CLOCK } from "./moved-clock.js";

export const CLI_ENTRY = path.resolve("dist/src/cli/main.js");

/** Writes a file for `import` to read: `lines` joined with "\n" as given (a last "" ends the file with one). */
export function importFile(dir: string, name: string, lines: readonly string[]): string {
  const file = path.join(dir, name);
  writeFileSync(file, lines.join("\n"));
  return file;
}

export interface CliResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CliRun {
  readonly child: ChildProcess;
  readonly done: Promise<CliResult>;
}

export function startCli(args: readonly string[], databaseUrl: string, env: Record<string, string> = {}): CliRun {
  if (!existsSync(CLI_ENTRY)) throw new Error(`${CLI_ENTRY} is missing: run npm run -s build first`);
  const child = spawn(process.execPath, [CLI_ENTRY, ...args], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", DATABASE_URL: databaseUrl, ...MOVED_CLOCK, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return { child, done: closed(child, collectOutput(child)) };
}

/** What a child process has written so far, as UTF-8 text; it grows while the child writes. */
export interface Output {
  stdout: string;
  stderr: string;
}

/** Starts collecting a child's stdout and stderr (both must be pipes). */
export function collectOutput(child: { readonly stdout: Readable | null; readonly stderr: Readable | null }): Output {
  const output = { stdout: "", stderr: "" };
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    output.stdout += chunk;
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    output.stderr += chunk;
  });
  return output;
}

/** The child's exit and everything it wrote, once it has closed its pipes. */
export function closed(child: ChildProcess, output: Output): Promise<CliResult> {
  return new Promise((resolve) => {
    child.once("close", (code, signal) => resolve({ code, signal, stdout: output.stdout, stderr: output.stderr }));
  });
}

/** Waits, checking every 25 ms up to `checks` times, until `pattern` (global) has matched stdout `count` times. */
export async function untilPrinted(output: Output, pattern: RegExp, count: number, checks: number): Promise<void> {
  for (let i = 0; i < checks && (output.stdout.match(pattern) ?? []).length < count; i++) {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** A command line's words, as a shell splits one without quotes: `argv("keys list --json")`. */
export function argv(line: string): string[] {
  return line.split(" ");
}

export function runCli(args: readonly string[], databaseUrl: string, env: Record<string, string> = {}) {
  return startCli(args, databaseUrl, env).done;
}

/** A CLI run as a shell shows it: the exit code (-1 when a signal ended it), stdout and stderr. */
export async function cliOutcome(
  args: readonly string[],
  databaseUrl: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const { code, stdout, stderr } = await runCli(args, databaseUrl);
  return { code: code ?? -1, stdout, stderr };
}

/**
 * Lets a watching child print `pattern` once, runs `change` (e.g. a wager), waits for the second
 * print, then stops it with SIGINT (also when waiting fails). Resolves with its exit code once its
 * pipes are closed, so everything it wrote is in `output`. `pattern` must match the last line a
 * board prints: a child may write a board's lines one by one and be stopped between them.
 */
export async function watchOneChange(
  child: ChildProcess,
  output: Output,
  printed: { pattern: RegExp; checks: number },
  change: () => Promise<void>,
): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => child.once("close", resolve));
  try {
    await untilPrinted(output, printed.pattern, 1, printed.checks);
    await change();
    await untilPrinted(output, printed.pattern, 2, printed.checks);
  } finally {
    child.kill("SIGINT");
  }
  return exited;
}
