/**
 * SIGTERM and SIGINT held from the first moment of the program until a command takes them over.
 * As PID 1 (the image's entrypoint) a signal that no handler takes yet is dropped for good, and
 * loading the program takes a few hundred milliseconds: a `podman stop` in that window would
 * otherwise wait its full timeout.
 */
import { constants } from "node:os";

const STOP_SIGNALS = ["SIGTERM", "SIGINT"] as const;
let held: NodeJS.Signals | undefined;
const hold = (signal: NodeJS.Signals) => {
  held ??= signal;
};

/** From now on a stop signal is remembered instead of acted on. */
export function holdStopSignals(): void {
  for (const signal of STOP_SIGNALS) process.on(signal, hold);
}

/** Stops holding; returns the first stop signal that arrived meanwhile, if any. */
export function releaseStopSignals(): NodeJS.Signals | undefined {
  for (const signal of STOP_SIGNALS) process.off(signal, hold);
  return held;
}

/** For commands without their own handling: stops holding, and exits as the signal would have if one came. */
export function exitOnHeldStopSignal(): void {
  const signal = releaseStopSignals();
  if (signal !== undefined) process.exit(128 + constants.signals[signal]);
}
