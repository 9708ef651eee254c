#!/usr/bin/env node
/**
 * The `topwagers` command (`npm run cli -- <command>` from a checkout; the package's `bin`; the
 * image's entrypoint). This file holds stop signals (stop-signals.ts) and then loads the program
 * (program.ts: the commands, their usage and exit codes), so nothing slow runs before a signal
 * has a handler.
 */
import { isEntryPoint } from "../entry.js";
import { holdStopSignals } from "./stop-signals.js";

export async function main(argv: string[]): Promise<void> {
  holdStopSignals();
  const { runProgram } = await import("./program.js");
  runProgram(argv);
}

if (isEntryPoint(import.meta.url)) void main(process.argv.slice(2));
