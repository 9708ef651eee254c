/** The built CLI (`node dist/src/cli/main.js`) as a child process against a test database. */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";

export const CLI_ENTRY = path.resolve("dist/src/cli/main.js");

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
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", DATABASE_URL: databaseUrl, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  const done = new Promise<CliResult>((resolve) => {
    child.once("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, done };
}

export function runCli(args: readonly string[], databaseUrl: string, env: Record<string, string> = {}) {
  return startCli(args, databaseUrl, env).done;
}
