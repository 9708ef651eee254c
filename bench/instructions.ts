/**
 * Instructions per request, counted by valgrind's callgrind: a server runs under
 * `valgrind --tool=callgrind --instr-atstart=no` (so start-up and warm-up run
 * uninstrumented), and for each measurement `callgrind_control` switches
 * counting on, zeroes the counters, lets a fixed number of requests through,
 * dumps the counters and switches counting off again. Every thread of the
 * process is counted (garbage collection helpers and the libuv pool too).
 *
 * Unlike requests per second on a shared 2-core machine, the count does not
 * depend on what else runs: two runs of the same server agree within about a
 * percent, so a change of a few percent shows.
 */
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** The command prefix that runs a Node server under callgrind, counting nothing until told to. */
export function callgrindWrapper(dir: string): string[] {
  return [
    "valgrind",
    "--tool=callgrind",
    "--instr-atstart=no",
    `--callgrind-out-file=${join(dir, "callgrind.%p.out")}`,
  ];
}

/**
 * valgrind names a process's control pipes after its HOST variable (and its user), and
 * callgrind_control looks for them under its own: every server under callgrind gets this HOST,
 * and so does callgrind_control. (topwagers reads HOST too, as the address to listen on.)
 */
export const CALLGRIND_HOST = "127.0.0.1";

/**
 * What a server under valgrind needs besides measuredServerEnv (bench/support.ts): everything runs some 50 times
 * slower, so a database connection must not time out, a garbage collection pause must not make the cache look
 * stale (answers would come from the database), and the work that comes by the clock and not by the request (the
 * change feed's reads, the race clock, the results log's sequencer, the webhook queue's poll: each a database
 * round trip) is spaced out so that it adds little to a request's count. Natively that work is a few statements a
 * second against tens of thousands of requests; under callgrind, at the same intervals, it was 5,000-8,000
 * instructions of every REST request's count (docs/benchmarks.md, issue 49 part 2).
 */
export const UNDER_CALLGRIND: Readonly<Record<string, string>> = {
  HOST: CALLGRIND_HOST,
  DATABASE_CONNECT_TIMEOUT_MS: "120000",
  DATABASE_PROBE_TIMEOUT_MS: "120000",
  CHANGE_FEED_POLL_MS: "5000",
  CHANGE_FEED_MAX_LAG_MS: "600000",
  RACE_CLOCK_MS: "60000",
  LOG_SEQUENCE_MS: "10000",
  WEBHOOK_POLL_MS: "60000",
};

async function control(pid: number, ...args: string[]): Promise<void> {
  await run("callgrind_control", [...args, String(pid)], { env: { ...process.env, HOST: CALLGRIND_HOST } });
}

/** The dump files callgrind has written for `pid` so far (callgrind.<pid>.out.<n>). */
function dumpsOf(dir: string, pid: number): string[] {
  const prefix = `callgrind.${pid}.out.`;
  return readdirSync(dir).filter((name) => name.startsWith(prefix));
}

/** The instruction total of one callgrind dump (its `totals:` or `summary:` line). */
export function instructionsOf(dumpText: string): number {
  const match = /^(?:totals|summary):\s+(\d+)/m.exec(dumpText);
  if (match === null) throw new Error("callgrind dump without a totals line");
  return Number(match[1]);
}

export interface Counted<T> {
  /** Instructions executed by the whole process while `drive` ran. */
  readonly instructions: number;
  /** The dump file with the counts by function (callgrind_annotate reads it). */
  readonly dumpFile: string;
  /** What `drive` returned. */
  readonly result: T;
}

/** Counts the instructions process `pid` (running under callgrindWrapper) executes while `drive` runs. */
export async function countInstructions<T>(pid: number, dir: string, drive: () => Promise<T>): Promise<Counted<T>> {
  await control(pid, "--instr=on");
  await control(pid, "--zero");
  const before = new Set(dumpsOf(dir, pid));
  const result = await drive();
  await control(pid, "--dump");
  await control(pid, "--instr=off");
  const written = dumpsOf(dir, pid).filter((name) => !before.has(name));
  if (written.length !== 1) throw new Error(`expected one new callgrind dump for ${pid}, found ${written.length}`);
  const dumpFile = join(dir, written[0] as string);
  return { instructions: instructionsOf(readFileSync(dumpFile, "utf8")), dumpFile, result };
}
