/**
 * The moved clock of scripts/moved-clock.sh (issue 45): the suite runs under libfaketime, which works through
 * environment variables. A child started with an environment of its own keeps them (`MOVED_CLOCK`), so it sees the
 * test's time; a program that libfaketime breaks (redis-server's jemalloc recurses into clock_gettime; Chromium) is
 * started without them (`withoutMovedClock`): its own clock does not matter to what the tests compare. Outside a
 * moved-clock run both are no-ops.
 */
const NAMES = ["LD_PRELOAD", "FAKETIME", "FAKETIME_SHARED", "FAKETIME_DONT_FAKE_MONOTONIC", "FAKETIME_NO_CACHE"];

/** libfaketime's variables of this process, to add to a child's own environment. */
export const MOVED_CLOCK: Readonly<Record<string, string>> = Object.fromEntries(
  NAMES.flatMap((name) => {
    const value = process.env[name];
    return value === undefined ? [] : [[name, value]];
  }),
);

/** This process's environment without libfaketime. */
export function withoutMovedClock(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] => entry[1] !== undefined && !NAMES.includes(entry[0]),
    ),
  );
}
