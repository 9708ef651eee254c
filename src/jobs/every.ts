/**
 * The one loop of every background job (the race clock, retention, webhook delivery and its queue gauges):
 * `every(ms, step)` runs `step`, then again `ms` after it ended, never two at once. A step may ask for the next
 * one sooner by returning a delay (0: at the timers' next turn); `wake()` runs the next step now, or as soon as the one under way
 * ends; `stop()` lets the step under way end and runs none after it. A step that throws is handed to `onError`
 * and the loop goes on. The timer never keeps the process alive.
 */
import type { Repeating } from "../ports/schedule.js";

export type { Repeating };

export interface EveryOptions {
  /** The first step at once (default), or only after `ms`. */
  readonly first?: "now" | "after";
  /** A step that threw; the loop goes on at its interval. */
  readonly onError?: (error: unknown) => void;
}

export function every(
  ms: number,
  /** Its answer, when a number, is the delay before the next step (ms). */
  step: () => unknown,
  options: EveryOptions = {},
): Repeating {
  let stopped = false;
  let stepping = false;
  let woken = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const run = async () => {
    timer = undefined;
    stepping = true;
    woken = false;
    let delay = ms;
    try {
      const answer = await step();
      if (typeof answer === "number") delay = answer;
    } catch (error) {
      options.onError?.(error);
    }
    stepping = false;
    schedule(woken ? 0 : delay);
  };
  const schedule = (delay: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = run();
    }, delay);
    timer.unref();
  };
  if ((options.first ?? "now") === "now") running = run();
  else schedule(ms);
  return {
    wake() {
      if (stopped) return;
      if (stepping) {
        woken = true;
        return;
      }
      clearTimeout(timer);
      running = run();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
